/**
 * Through PgBouncer in transaction mode (DATABASE_POOLER=transaction) and the read replica: the
 * guarantees that rest on the database hold as on a direct session (issue 37).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import {
  answer,
  call,
  client,
  exportLines,
  faults,
  makeForm,
  readyz,
  redTotal,
  sleep,
  topology,
} from './postgres-lib.mjs';

describe('PostgreSQL through PgBouncer (transaction mode) and a replica', () => {
  const state = topology();
  let who;
  let publicId;
  before(async () => {
    who = client();
    publicId = await makeForm(who);
  });

  it('runs an Idempotency-Key once when it is sent twelve times at once', async () => {
    const key = `pooler-${Date.now()}`;
    const args = { publicId, answers: answer('once') };
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => call(who, 'create_response', args, { 'Idempotency-Key': key })),
    );
    const ok = answers.filter((a) => a.status === 200);
    for (const a of answers) assert.ok([200, 409].includes(a.status), `status ${a.status}`);
    assert.ok(ok.length >= 1);
    assert.equal(new Set(ok.map((a) => a.body.id)).size, 1, 'every success names the same response');
    const again = await call(who, 'create_response', args, { 'Idempotency-Key': key });
    assert.equal(again.body.id, ok[0].body.id);
    const listed = await call(who, 'list_responses', { publicId, answersBy: 'ref', limit: 100 });
    assert.equal(listed.body.responses.filter((r) => r.answers.name === 'once').length, 1);
  });

  it('walks every response exactly once, filtered (the replica) or not, and exports them all', async () => {
    const before = await redTotal(who, publicId);
    const made = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(who, 'create_response', { publicId, answers: answer(`walk-${i}`, i % 2 ? 'Blue' : 'Red') }),
      ),
    );
    assert.deepEqual(
      made.map((m) => m.status),
      made.map(() => 200),
    );
    // A read right after the writes includes them: the replica waits for the primary's WAL position.
    assert.equal(await redTotal(who, publicId), before + 20);
    const seen = [];
    for (let offset = 0; ; offset += 7) {
      const page = await call(who, 'list_responses', { publicId, limit: 7, offset, answersBy: 'ref' });
      assert.equal(page.status, 200);
      seen.push(...page.body.responses.map((r) => r.id));
      if (offset + 7 >= page.body.total) break;
    }
    assert.equal(new Set(seen).size, seen.length, 'no response twice');
    for (const m of made) assert.ok(seen.includes(m.body.id));
    const exported = await exportLines(who, publicId);
    assert.equal(exported.length, seen.length);
  });

  it('reads the filtered reads and exports on the replica', async () => {
    // Whether `read` ran on the replica. A read waits at most DATABASE_REPLICA_MAX_WAIT_MS for the
    // replica to replay the primary's position, then goes to the primary: on a loaded machine the
    // replica may lag past it once, so a few reads are given the chance (the fallback has its own tests).
    const ranOnReplica = async (read, pattern) => {
      for (let attempt = 0; attempt < 5; attempt++) {
        const from = faults.replicaLogSize(state.postgres);
        await read();
        if (pattern.test(faults.replicaStatements(state.postgres, from))) return true;
        await sleep(500);
      }
      return false;
    };
    assert.ok(await ranOnReplica(() => redTotal(who, publicId), /FROM responses/), 'the filtered read ran there');
    assert.ok(await ranOnReplica(() => exportLines(who, publicId), /r\.seq > /), 'the export batches ran there');
    const ready = await readyz();
    assert.equal(ready.status, 200);
    assert.equal(ready.body.replica.ok, true);
  });
});

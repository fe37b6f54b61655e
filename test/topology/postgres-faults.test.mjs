/**
 * Faults of the PostgreSQL side (issue 37): PgBouncer restarted under load, the replica stopped,
 * the replica paused (SIGSTOP).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  answer,
  call,
  client,
  clientAddress,
  exportLines,
  faults,
  makeForm,
  readyz,
  redTotal,
  sleep,
  topology,
} from './postgres-lib.mjs';

/** The replica's bound (DATABASE_REPLICA_MAX_WAIT_MS) plus a request's own time: what a read may take without it. */
const READ_BOUND_MS = 3000;

describe('PostgreSQL faults', () => {
  const state = topology();
  let who;
  let publicId;
  before(async () => {
    who = client();
    publicId = await makeForm(who);
  });
  after(async () => {
    await faults.resumeReplica(state.postgres);
    await faults.startReplica(state.postgres).catch(() => undefined);
  });

  it('PgBouncer restarted under load: 503 with Retry-After, never a 500, nothing acknowledged lost', async () => {
    const acknowledged = new Map(); // Idempotency-Key -> response id
    const refused = []; // [worker, key]
    const statuses = new Map();
    let stop = false;
    let n = 0;
    // A token and an address a worker, and at most PER_WORKER requests each, paced: the budgets
    // (120 a credential, 240 an address a minute) must not be what refuses the load, however fast
    // the machine. A key is retried by the worker that sent it.
    const PER_WORKER = 50;
    const clients = Array.from({ length: 8 }, () => client());
    const froms = Array.from({ length: 8 }, () => clientAddress());
    const send = (w, key) =>
      call(
        { ...clients[w], from: froms[w] },
        'create_response',
        { publicId, answers: answer(key) },
        { 'Idempotency-Key': key },
      );
    const worker = async (w) => {
      try {
        for (let sent = 0; !stop && sent < PER_WORKER; sent++) {
          if (sent > 0) await sleep(30);
          const key = `bounce-${w}-${n++}`;
          const res = await send(w, key);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status === 200) acknowledged.set(key, res.body.id);
          else {
            assert.equal(res.status, 503, `${key}: ${res.status} ${JSON.stringify(res.body)}`);
            assert.equal(res.body.error.code, 'service_unavailable');
            assert.match(res.headers['retry-after'] ?? '', /^\d+$/);
            refused.push([w, key]);
          }
        }
      } finally {
        stop = true;
      }
    };
    const workers = Array.from({ length: 8 }, (_, w) => worker(w));
    await sleep(500);
    await faults.restartPooler(state.postgres);
    await sleep(1000);
    stop = true;
    await Promise.all(workers);
    assert.ok(acknowledged.size > 20, `writes went through before and after (${JSON.stringify([...statuses])})`);
    // Every acknowledged write is stored; a refused one, retried with its key, is stored once.
    for (const [w, key] of refused) {
      let res;
      for (let i = 0; i < 20; i++) {
        res = await send(w, key);
        if (res.status !== 503 && res.status !== 409) break;
        await sleep(250);
      }
      assert.equal(res.status, 200, `retry of ${key}`);
      acknowledged.set(key, res.body.id);
    }
    const stored = new Map();
    for (let offset = 0; ; offset += 100) {
      const page = await call(who, 'list_responses', { publicId, limit: 100, offset, answersBy: 'ref' });
      for (const r of page.body.responses) stored.set(r.answers.name, [...(stored.get(r.answers.name) ?? []), r.id]);
      if (offset + 100 >= page.body.total) break;
    }
    for (const [key, id] of acknowledged) assert.deepEqual(stored.get(key), [id], `${key} stored once`);
  });

  for (const fault of ['stopped', 'paused']) {
    it(`the replica ${fault}: filtered reads and exports go to the primary within the bound, exact`, async () => {
      const base = await redTotal(who, publicId);
      if (fault === 'stopped') await faults.stopReplica(state.postgres);
      else await faults.pauseReplica(state.postgres);
      try {
        for (let round = 1; round <= 3; round++) {
          const made = await call(who, 'create_response', { publicId, answers: answer(`${fault}-${round}`) });
          assert.equal(made.status, 200);
          const started = Date.now();
          assert.equal(await redTotal(who, publicId), base + round, 'no stale total');
          const lines = await exportLines(who, publicId, { block: 'colour', op: 'equals', value: 'Red' });
          assert.equal(lines.length, base + round);
          assert.ok(Date.now() - started < READ_BOUND_MS, `read and export in ${Date.now() - started} ms`);
        }
        const ready = await readyz();
        assert.equal(ready.status, 200, 'the replica does not fail readiness');
        assert.equal(ready.body.replica.ok, false);
      } finally {
        if (fault === 'stopped') await faults.startReplica(state.postgres);
        else await faults.resumeReplica(state.postgres);
      }
      // Back: the replica serves again once it has caught up.
      let ok = false;
      for (let i = 0; i < 40 && !ok; i++) {
        ok = (await readyz()).body.replica?.ok === true;
        if (!ok) await sleep(250);
      }
      assert.ok(ok, 'the replica is reported ok again');
      assert.equal(await redTotal(who, publicId), base + 3);
    });
  }
});

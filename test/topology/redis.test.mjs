/**
 * A Redis Cluster master killed (kill -9) under keyed writes and budget checks through nginx →
 * three instances (issue 37): no 5xx (the budgets fail open while its slots have no master), no
 * key run twice, and budgets exact again once the replica has taken over.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  callTool,
  clientAddress,
  closeAgents,
  load,
  newTokens,
  publishedForm,
  redisCluster,
  request,
  require,
  saveState,
  sleep,
  state,
  statuses,
} from './support.mjs';

const { Client } = require('pg');

describe('a Redis Cluster master killed under load', () => {
  let db;
  before(async () => {
    db = new Client({ connectionString: state.env.DATABASE_DIRECT_URL });
    await db.connect();
  });
  after(async () => {
    closeAgents();
    await db?.end();
  });

  it('answers every request (no 5xx), runs no key twice, and enforces exact budgets after the failover', async () => {
    const form = await publishedForm(state.token, 'Redis failover');
    // Eight credentials: a fast run sends about 35 requests a second per credential at 4 in flight,
    // and the promoted replica keeps the counts from before the kill, so four would run out.
    const writers = await newTokens(8, 'editor');
    const victim = redisCluster.masters(state.redis)[0];
    let killedAt = 0;
    let failedOverAt = 0;
    const startedAt = Date.now();

    // Each operation: a keyed create_response, then the same key again (a client's retry).
    const operation = async (n) => {
      const key = randomUUID();
      const send = () =>
        callTool(
          writers[n % writers.length],
          'create_response',
          { publicId: form.publicId, answers: { [form.block]: `redis ${key}` } },
          { from: clientAddress(), headers: { 'Idempotency-Key': key } },
        );
      const first = await send();
      const retry = await send();
      await sleep(40); // paced: the eight credentials' budgets hold the whole run
      return { ...first, key, retry };
    };
    const failover = (async () => {
      await sleep(1_500);
      redisCluster.killNode(state.redis, victim);
      killedAt = Date.now();
      await redisCluster.waitClusterOk(state.redis);
      failedOverAt = Date.now();
    })();
    failover.catch(() => undefined); // awaited below, after the load
    const answers = await load({
      send: operation,
      concurrency: 4,
      // Until 2 s after the failover (or 60 s: the failover's own error then says why).
      until: () => (failedOverAt > 0 && Date.now() - failedOverAt > 2_000) || Date.now() - startedAt > 60_000,
    });
    await failover;
    const all = answers.flatMap((a) => [a, a.retry]);
    const failed = all.filter((a) => a.status === 0 || a.status >= 500);
    assert.deepEqual(
      failed.map((a) => `${a.status} ${a.text.slice(0, 200)}`),
      [],
    );
    assert.ok(
      answers.some((a) => a.at > killedAt && a.at < failedOverAt),
      'requests were sent during the outage',
    );
    process.stderr.write(
      `topology: ${answers.length} keyed writes in ${Date.now() - startedAt} ms, master ${victim} down ${failedOverAt - killedAt} ms; ${JSON.stringify(statuses(all))}\n`,
    );

    // Every key ran at most once; those answered 200 exactly once, and the retry replayed that answer.
    const { rows } = await db.query(
      `SELECT r.answers ->> $2 AS text, count(*)::int AS n FROM responses r JOIN forms f ON f.id = r.form_id
        WHERE f.public_id = $1 GROUP BY 1`,
      [form.publicId, form.block],
    );
    const runs = new Map(rows.map((r) => [r.text, r.n]));
    for (const a of answers) {
      const n = runs.get(`redis ${a.key}`) ?? 0;
      assert.ok(n <= 1, `key ${a.key} ran ${n} times`);
      if (a.status === 200) {
        assert.equal(n, 1);
        assert.equal(a.retry.status, 200);
        assert.equal(a.retry.headers['idempotency-replayed'], 'true');
        assert.equal(a.retry.json.id, a.json.id);
      }
    }
    assert.ok(answers.filter((a) => a.status === 200).length > answers.length * 0.9, JSON.stringify(statuses(all)));

    // Every instance counts in the cluster again (readyz probes it) ...
    for (const instance of state.instances) {
      let ready;
      for (let i = 0; i < 50; i++) {
        ready = await request('/readyz', { port: instance.port });
        if (ready.json?.rateLimits === 'shared') break;
        await sleep(100);
      }
      assert.equal(ready.json?.rateLimits, 'shared', ready.text);
    }
    // ... and a credential gets exactly its 120 a minute over the three.
    const [fresh] = await newTokens(1, 'viewer');
    const from = clientAddress();
    const budget = await Promise.all(Array.from({ length: 130 }, () => callTool(fresh, 'list_forms', {}, { from })));
    assert.deepEqual(statuses(budget), { 200: 120, 429: 10 });

    // The killed node comes back, as a replica: the cluster is whole again for the next tests.
    await redisCluster.startNode(state.redis, victim);
    saveState();
    await redisCluster.waitClusterOk(state.redis);
  });
});

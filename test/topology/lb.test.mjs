/** nginx in front of three instances (issue 37): the spread, and a rolling restart under load. */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  callTool,
  clientAddress,
  closeAgents,
  load,
  newTokens,
  processes,
  publishedForm,
  request,
  saveState,
  sleep,
  state,
  statuses,
  upstreams,
} from './support.mjs';

describe('nginx → three instances', () => {
  after(() => closeAgents());

  it('spreads requests round robin over the three, each ready with the cluster shared', async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => callTool(state.token, 'list_forms', {}, { from: clientAddress() })),
    );
    assert.deepEqual(statuses(answers), { 200: 12 });
    assert.equal(upstreams(answers).size, 3);
    for (const instance of state.instances) {
      const ready = await request('/readyz', { port: instance.port });
      assert.equal(ready.status, 200, ready.text);
      assert.equal(ready.json.rateLimits, 'shared', ready.text);
    }
  });

  it('answers every request while one instance restarts (SIGTERM, drain, start again): in-flight ones complete, new ones go to the others', async () => {
    const form = await publishedForm(state.token, 'Rolling restart');
    const tokens = await newTokens(8, 'editor');
    let restarted = false;
    const startedAt = Date.now();
    const send = (n) =>
      n % 2
        ? callTool(tokens[n % tokens.length], 'list_forms', {}, { from: clientAddress() })
        : callTool(
            tokens[n % tokens.length],
            'create_response',
            { publicId: form.publicId, answers: { [form.block]: `rolling ${n}` } },
            { from: clientAddress() },
          );
    const paced = async (n) => {
      const answer = await send(n);
      await sleep(100); // paced: the eight credentials' budgets hold most of the run
      return answer;
    };
    const instance = state.instances[0];
    let stoppedFor = 0;
    const restart = (async () => {
      await sleep(1_500);
      const stopAt = Date.now();
      await processes.stopInstance(instance, 30_000);
      stoppedFor = Date.now() - stopAt;
      const again = await processes.startInstance({ root: state.root, ...instance, env: state.env });
      Object.assign(instance, again);
      saveState();
      await sleep(2_000); // it takes requests again
      restarted = true;
    })();
    restart.catch(() => undefined);
    const answers = await load({
      send: paced,
      concurrency: 6,
      until: () => restarted || Date.now() - startedAt > 120_000,
    });
    await restart;
    process.stderr.write(
      `topology: ${answers.length} requests over ${Date.now() - startedAt} ms, drain took ${stoppedFor} ms; ${JSON.stringify(statuses(answers))}\n`,
    );
    // Every request was answered by an instance: 200, or a budget's 429 (a slow machine stretches
    // the run past the budgets); never a dropped connection, a 5xx or nginx's own 503.
    const lost = answers.filter(
      (a) => !(a.status === 200 || (a.status === 429 && a.json?.error?.code === 'rate_limited')),
    );
    assert.deepEqual(
      lost.map((a) => `${a.status} ${a.text.slice(0, 200)}`),
      [],
    );
    assert.ok(statuses(answers)[200] > answers.length / 2, JSON.stringify(statuses(answers)));
    // Every write answered 200 is stored, once.
    const written = answers.filter((a) => a.n % 2 === 0 && a.status === 200).map((a) => a.json.id);
    const listed = await callTool(state.token, 'list_responses', { publicId: form.publicId, limit: 1 });
    assert.equal(listed.json.total, written.length);
    assert.equal(new Set(written).size, written.length);
    // The restarted instance answers through nginx again, once nginx tries it after its
    // fail_timeout (5 s: the refused connects during the restart marked it down).
    const seen = new Set();
    const [probe] = await newTokens(1, 'viewer');
    for (const until = Date.now() + 20_000; !seen.has(`127.0.0.1:${instance.port}`) && Date.now() < until;) {
      const batch = await Promise.all(
        Array.from({ length: 6 }, () => callTool(probe, 'list_forms', {}, { from: clientAddress() })),
      );
      assert.deepEqual(statuses(batch), { 200: 6 });
      for (const u of upstreams(batch)) seen.add(u);
      await sleep(500);
    }
    assert.ok(seen.has(`127.0.0.1:${instance.port}`), [...seen].join(', '));
  });
});

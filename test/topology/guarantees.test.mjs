/**
 * The guarantees through nginx → three instances → PgBouncer → PostgreSQL (+ replica), budgets on
 * the Redis Cluster (issue 37): a key runs once, budgets are exact, webhooks are delivered once,
 * filtered walks and exports are exact while writes go on.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import {
  callTool,
  clientAddress,
  closeAgents,
  newToken,
  newTokens,
  publishedForm,
  request,
  require,
  sleep,
  state,
  statuses,
  upstreams,
} from './support.mjs';

const { Client } = require('pg');

describe('guarantees across three instances', () => {
  let db;
  let form;
  const submit = (token, text, opts = {}) =>
    callTool(
      token,
      'create_response',
      { publicId: form.publicId, answers: { [form.block]: text } },
      { from: clientAddress(), ...opts },
    );
  const stored = async (text) =>
    (
      await db.query(
        `SELECT count(*)::int AS n FROM responses r JOIN forms f ON f.id = r.form_id
          WHERE f.public_id = $1 AND r.answers ->> $2 = $3`,
        [form.publicId, form.block, text],
      )
    ).rows[0].n;

  before(async () => {
    db = new Client({ connectionString: state.env.DATABASE_DIRECT_URL });
    await db.connect();
    form = await publishedForm(state.token);
  });
  after(async () => {
    closeAgents();
    await db?.end();
  });

  it('runs a tool once for one Idempotency-Key sent through nginx many times at once', async () => {
    const token = await newToken('editor');
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 15 }, () => submit(token, 'once', { headers: { 'Idempotency-Key': key } })),
    );
    assert.equal(upstreams(answers).size, 3);
    assert.equal(await stored('once'), 1);
    const firsts = answers.filter((r) => r.status === 200 && !r.headers['idempotency-replayed']);
    assert.equal(firsts.length, 1, JSON.stringify(statuses(answers)));
    for (const r of answers) {
      if (r.status === 409) assert.equal(r.json.error.code, 'idempotency_key_in_use');
      else assert.equal(r.text, firsts[0].text);
    }
    // Every instance replays the same answer afterwards.
    for (const instance of state.instances) {
      const replay = await submit(token, 'once', { headers: { 'Idempotency-Key': key }, port: instance.port });
      assert.equal(replay.headers['idempotency-replayed'], 'true');
      assert.equal(replay.text, firsts[0].text);
    }
  });

  it('gives one credential exactly its 120 requests a minute over the three instances', async () => {
    const token = await newToken('viewer');
    const from = clientAddress();
    const answers = await Promise.all(Array.from({ length: 135 }, () => callTool(token, 'list_forms', {}, { from })));
    assert.deepEqual(statuses(answers), { 200: 120, 429: 15 });
    assert.equal(upstreams(answers).size, 3);
    const refused = answers.find((r) => r.status === 429);
    assert.equal(refused.json.error.code, 'rate_limited');
    assert.equal(refused.headers['ratelimit-limit'], '120');
  });

  it('gives one client address exactly its 240 requests a minute over several credentials', async () => {
    const tokens = await newTokens(3, 'viewer');
    const from = clientAddress();
    const answers = await Promise.all(
      Array.from({ length: 250 }, (_, i) => callTool(tokens[i % 3], 'list_forms', {}, { from })),
    );
    assert.deepEqual(statuses(answers), { 200: 240, 429: 10 });
    // The refusals by the IP did not spend the credentials' budgets: only the answered ones did.
    const spent = answers.filter((a, i) => i % 3 === 0 && a.status === 200).length;
    const next = await callTool(tokens[0], 'list_forms', {}, { from: clientAddress() });
    assert.match(next.headers.ratelimit, new RegExp(`"cred";r=${120 - spent - 1};`));
  });

  it('delivers each webhook once, whichever instance took the write', async () => {
    const received = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ id: req.headers['webhook-id'], body: JSON.parse(body) });
        res.end('ok');
      });
    });
    await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const hook = await callTool(state.token, 'create_webhook', {
        url: `http://127.0.0.1:${receiver.address().port}/hook`,
        events: ['response.created'],
      });
      assert.equal(hook.status, 200, hook.text);
      const token = await newToken('editor');
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => submit(token, `hook ${i}`)));
      assert.deepEqual(statuses(answers), { 200: 30 });
      const ids = new Set(answers.map((a) => a.json.id));
      const until = Date.now() + 30_000;
      const ours = () => received.filter((r) => ids.has(r.body.data?.id ?? r.body.data?.response?.id));
      while (ours().length < 30 && Date.now() < until) await sleep(100);
      await sleep(1_500); // a second delivery would come within this
      const got = ours();
      assert.equal(got.length, 30, `${got.length} deliveries of 30 responses`);
      assert.equal(new Set(got.map((r) => r.id)).size, 30);
    } finally {
      receiver.close();
    }
  });

  it('walks a filtered list exactly once, and exports exactly what is stored, while the three instances take writes', async () => {
    const reader = await newToken('viewer');
    const writers = await newTokens(3, 'editor');
    const where = { block: form.block, op: 'contains', value: 'walk' };
    const before = await Promise.all(Array.from({ length: 30 }, (_, i) => submit(writers[i % 3], `walk ${i}`)));
    assert.deepEqual(statuses(before), { 200: 30 });

    let writing = true;
    const written = writers.map(async (token, w) => {
      const answers = [];
      for (let i = 0; writing && i < 60; i++) answers.push(await submit(token, `walk ${w}-${i}`));
      return answers;
    });
    const seen = [];
    for (let offset = 0, total = Infinity; offset < total;) {
      const res = await callTool(reader, 'list_responses', { publicId: form.publicId, where, limit: 7, offset });
      assert.equal(res.status, 200, res.text);
      total = res.json.total;
      seen.push(...res.json.responses.map((r) => r.id));
      if (res.json.count === 0) break;
      offset += res.json.count;
    }
    writing = false;
    const during = (await Promise.all(written)).flat();
    assert.deepEqual(statuses(during), { 200: during.length });
    for (const r of before) assert.equal(seen.filter((id) => id === r.json.id).length, 1);
    assert.equal(new Set(seen).size, seen.length);

    // Once the writes are acknowledged, a filtered count, a summary and an export each see all of them.
    const all = 30 + during.length;
    const listed = await callTool(reader, 'list_responses', { publicId: form.publicId, where, limit: 1 });
    const summary = await callTool(reader, 'summarize_responses', { publicId: form.publicId, where });
    assert.deepEqual([listed.json.total, summary.json.total], [all, all]);
    const link = await callTool(reader, 'export_responses', { publicId: form.publicId, where, format: 'ndjson' });
    assert.equal(link.status, 200, link.text);
    const url = new URL(link.json.url);
    const exported = await request(`${url.pathname}${url.search}`, { from: clientAddress() });
    assert.equal(exported.status, 200, exported.text.slice(0, 500));
    const lines = exported.text.split('\n').filter(Boolean);
    assert.equal(lines.length, all);
    assert.equal(new Set(lines.map((l) => JSON.parse(l).id)).size, all);
  });
});

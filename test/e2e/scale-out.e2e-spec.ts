import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DataSource } from 'typeorm';
import { FormRecord } from '../../src/forms/forms.service';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import {
  callToolAt,
  DEFAULT_SOURCE,
  destroyAgents,
  ensureBuilt,
  freePort,
  HttpAnswer,
  httpRequest,
  Instance,
  Nginx,
  randomLoopbackAddress,
  REDIS_URL,
  requireNginx,
  requireRedis,
  ROOT,
  sleep,
  TEST_WEBHOOK_SECRET_KEY,
  waitUntil,
} from '../utils/cluster';
import { createTestApp, testDatabaseUrl } from '../utils/create-test-app';

/**
 * The service as it is deployed: two instances of the built service (dist/) on loopback, sharing
 * one PostgreSQL and one Redis, behind nginx configured from docker/nginx.conf. Rate budgets,
 * idempotency and revocation must hold across them.
 */
describe('two instances behind nginx, sharing PostgreSQL and Redis', () => {
  let setup: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let form: FormRecord;
  let a: Instance;
  let b: Instance;
  let nginx: Nginx;
  let c: Instance | undefined;

  const env = () => ({
    DATABASE_URL: testDatabaseUrl(),
    REDIS_URL,
    TRUST_PROXY: '1',
    NODE_ENV: 'production',
    BOOTSTRAP_DEMO: 'false',
    PUBLIC_URL: 'http://formwork.test',
    DATABASE_POOL_SIZE: '4',
    LOG_LEVEL: 'info',
  });
  const viaNginx = (
    token: string,
    tool: string,
    body: unknown,
    opts: { headers?: Record<string, string>; from?: string } = {},
  ) => callToolAt(nginx.port, token, tool, body, opts);
  const statuses = (answers: HttpAnswer[]) =>
    answers.reduce<Record<number, number>>((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {});
  const upstreams = (answers: HttpAnswer[]) => new Set(answers.map((r) => String(r.headers['x-upstream'])));

  beforeAll(async () => {
    await requireRedis();
    const nginxBinary = requireNginx();
    ensureBuilt();
    setup = await createTestApp();
    db = setup.get(DataSource);
    ws = await createWorkspace(setup, 'pro');
    form = await createForm(setup, ws);
    a = await Instance.start('a', env());
    b = await Instance.start('b', env());
    const port = await freePort();
    nginx = await Nginx.start(nginxBinary, port, nginxConfig(port, [a.port, b.port]));
  }, 120_000);

  afterAll(async () => {
    destroyAgents();
    await nginx?.stop();
    await Promise.all([a?.stop(), b?.stop(), c?.stop()]);
    await setup?.close();
  }, 30_000);

  /** docker/nginx.conf with only the upstream servers, the listen address and the log path changed. */
  function nginxConfig(port: number, upstreamPorts: number[]): string {
    const shipped = readFileSync(join(ROOT, 'docker', 'nginx.conf'), 'utf8');
    let conf = shipped;
    const replace = (from: RegExp, to: string) => {
      if (!from.test(conf)) throw new Error(`docker/nginx.conf no longer has ${from}: update this test`);
      conf = conf.replace(from, to);
    };
    replace(
      /server app:3000[^;]*;/,
      upstreamPorts.map((p) => `server 127.0.0.1:${p} max_fails=3 fail_timeout=5s;`).join('\n    '),
    );
    replace(/listen 80;/, `listen 127.0.0.1:${port};`);
    replace(/access_log \/var\/log\/nginx\/access\.log formwork;/, 'access_log off;');
    // Which instance answered, so that the test can see the load spread.
    return `add_header X-Upstream $upstream_addr always;\n${conf}`;
  }

  it('spreads requests over both instances, each ready with Redis shared', async () => {
    const { token } = await createToken(setup, ws, { role: 'viewer' });
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => viaNginx(token, 'list_forms', {}, { from: randomLoopbackAddress() })),
    );
    expect(statuses(answers)).toEqual({ 200: 10 });
    expect(upstreams(answers)).toEqual(new Set([`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`]));
    for (const instance of [a, b]) {
      const ready = await httpRequest(instance.port, '/readyz');
      expect(ready.status).toBe(200);
      expect(ready.json).toMatchObject({ status: 'ok', checks: { database: 'ok', redis: 'ok' }, rateLimits: 'shared' });
    }
  });

  it('gives one credential exactly 120 successes in a minute, over both instances', async () => {
    const { token } = await createToken(setup, ws, { role: 'viewer' });
    const from = randomLoopbackAddress();
    const answers = await Promise.all(Array.from({ length: 135 }, () => viaNginx(token, 'list_forms', {}, { from })));
    expect(statuses(answers)).toEqual({ 200: 120, 429: 15 });
    expect(upstreams(answers).size).toBe(2);
    const refused = answers.find((r) => r.status === 429)!;
    expect(refused.json.error.code).toBe('rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.headers['ratelimit-limit']).toBe('120');
    expect(refused.headers['ratelimit-remaining']).toBe('0');
    expect(refused.headers['ratelimit-policy']).toBe('"ip";q=240;w=60, "cred";q=120;w=60');
    expect(refused.headers.ratelimit).toMatch(/^"ip";r=\d+;t=\d+, "cred";r=0;t=\d+$/);
  });

  it("gives one client IP exactly 240 successes over several credentials, its address taken from nginx's X-Forwarded-For (a forged one ignored)", async () => {
    const tokens = await Promise.all(
      [0, 1, 2].map(() => createToken(setup, ws, { role: 'viewer' }).then((t) => t.token)),
    );
    const from = randomLoopbackAddress();
    const forged = () =>
      `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    const answers = await Promise.all(
      Array.from({ length: 255 }, (_, i) =>
        viaNginx(tokens[i % 3], 'list_forms', {}, { from, headers: { 'X-Forwarded-For': forged() } }),
      ),
    );
    expect(statuses(answers)).toEqual({ 200: 240, 429: 15 });
    expect(upstreams(answers).size).toBe(2);
    const refused = answers.find((r) => r.status === 429)!;
    expect(refused.json.error.code).toBe('rate_limited');
    expect(refused.headers['ratelimit-limit']).toBe('240');
    expect(refused.headers['ratelimit-policy']).toBe('"ip";q=240;w=60');

    // Another client (another source address) has a budget of its own.
    const other = await viaNginx(tokens[0], 'list_forms', {}, { from: randomLoopbackAddress() });
    expect(other.status).toBe(200);
    expect(other.headers.ratelimit).toMatch(/^"ip";r=239;t=\d+, "cred";r=\d+;t=\d+$/);
  });

  it('runs a tool once for one Idempotency-Key sent to both instances at once', async () => {
    const { token } = await createToken(setup, ws, { role: 'editor' });
    const key = randomUUID();
    const args = { publicId: form.publicId, answers: { [form.blocks[0].id]: 'across-instances' } };
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        callToolAt(i % 2 ? b.port : a.port, token, 'create_response', args, { headers: { 'Idempotency-Key': key } }),
      ),
    );
    const [{ n }] = await db.query(
      `SELECT count(*)::int AS n FROM responses WHERE form_id = $1 AND answers ->> $2 = 'across-instances'`,
      [form.id, form.blocks[0].id],
    );
    expect(n).toBe(1);
    const firsts = answers.filter((r) => r.status === 200 && !r.headers['idempotency-replayed']);
    expect(firsts).toHaveLength(1);
    for (const r of answers) {
      if (r.status === 409) {
        expect(r.json.error.code).toBe('idempotency_key_in_use');
        expect(r.headers['retry-after']).toBe('1');
      } else {
        expect(r.status).toBe(200);
        expect(r.text).toBe(firsts[0].text);
      }
    }
    // Afterwards both instances replay the same answer.
    for (const port of [a.port, b.port]) {
      const replay = await callToolAt(port, token, 'create_response', args, { headers: { 'Idempotency-Key': key } });
      expect(replay.headers['idempotency-replayed']).toBe('true');
      expect(replay.text).toBe(firsts[0].text);
    }
  });

  it('serves an MCP client on any instance: initialize on one, tools/call on the other, and the SDK client through nginx', async () => {
    const { token } = await createToken(setup, ws, { role: 'viewer' });
    const mcp = (port: number, message: unknown, headers: Record<string, string> = {}) =>
      httpRequest(port, '/mcp', {
        body: message,
        headers: { Authorization: `Bearer ${token}`, Accept: 'application/json, text/event-stream', ...headers },
      });
    const init = await mcp(a.port, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    expect(init.status).toBe(200);
    expect(init.json.result.protocolVersion).toBe('2025-11-25');
    expect(init.headers['mcp-session-id']).toBeUndefined();
    const call = await mcp(
      b.port,
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'get_form', arguments: { publicId: form.publicId } },
      },
      { 'MCP-Protocol-Version': '2025-11-25' },
    );
    expect(call.status).toBe(200);
    expect(call.json.result.structuredContent.publicId).toBe(form.publicId);

    // The SDK's own client through nginx, which spreads its requests over both instances.
    const client = new Client({ name: 'scale-out', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${nginx.port}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    try {
      for (let i = 0; i < 4; i++) {
        const result = await client.callTool({ name: 'get_form', arguments: { publicId: form.publicId } });
        expect((result.structuredContent as { publicId: string }).publicId).toBe(form.publicId);
      }
    } finally {
      await client.close();
    }
  });

  it('walks a form exactly once while both instances take submissions to it, then counts every one', async () => {
    const hot = await createForm(setup, ws, { status: 'published' });
    const writers = await Promise.all(Array.from({ length: 4 }, () => createToken(setup, ws, { role: 'editor' })));
    const { token: reader } = await createToken(setup, ws, { role: 'viewer' });
    const instance = (i: number) => (i % 2 ? b.port : a.port);
    const submit = (i: number, token: string) =>
      callToolAt(
        instance(i),
        token,
        'create_response',
        { publicId: hot.publicId, answers: { [hot.blocks[0].id]: `hot ${i}` } },
        { from: randomLoopbackAddress() },
      );
    const before = await Promise.all(
      Array.from({ length: 30 }, (_, i) => submit(i, writers[i % writers.length].token)),
    );
    expect(statuses(before)).toEqual({ 200: 30 });

    // Writers on both instances keep submitting while the walk pages through both instances.
    let walking = true;
    const written = writers.map(async ({ token }, w) => {
      const answers: HttpAnswer[] = [];
      for (let i = 0; walking && i < 80; i++) answers.push(await submit(100 * (w + 1) + i, token));
      return answers;
    });
    const seen: string[] = [];
    for (let offset = 0, total = Infinity, page = 0; offset < total; page++) {
      const res = await callToolAt(
        instance(page),
        reader,
        'list_responses',
        { publicId: hot.publicId, limit: 7, offset },
        { from: randomLoopbackAddress() },
      );
      expect(res.status).toBe(200);
      total = res.json.total;
      seen.push(...res.json.responses.map((r: { id: string }) => r.id));
      if (res.json.count === 0) break;
      offset += res.json.count;
    }
    walking = false;
    const during = (await Promise.all(written)).flat();
    expect(statuses(during)).toEqual({ 200: during.length });
    expect(during.length).toBeGreaterThan(0);

    for (const r of before) expect(seen.filter((id) => id === r.json.id)).toHaveLength(1);
    expect(new Set(seen).size).toBe(seen.length);
    const stored = await db.query('SELECT id FROM responses WHERE form_id = $1', [hot.id]);
    expect(stored).toHaveLength(30 + during.length);
    const ids = new Set(stored.map((r: { id: string }) => r.id));
    expect(seen.every((id) => ids.has(id))).toBe(true);

    // Once the writes settle, both instances count every response exactly once.
    const listed = await callToolAt(
      a.port,
      reader,
      'list_responses',
      { publicId: hot.publicId, limit: 1 },
      { from: randomLoopbackAddress() },
    );
    const summary = await callToolAt(
      b.port,
      reader,
      'summarize_responses',
      { publicId: hot.publicId },
      { from: randomLoopbackAddress() },
    );
    expect([listed.json.total, summary.json.total, summary.json.blocks[0].answered]).toEqual([
      stored.length,
      stored.length,
      stored.length,
    ]);
    const [seqs] = await db.query(
      'SELECT count(seq)::int AS sequenced, count(DISTINCT seq)::int AS distinct FROM responses WHERE form_id = $1',
      [hot.id],
    );
    expect(seqs).toEqual({ sequenced: stored.length, distinct: stored.length });
  });

  it('refuses a revoked token on every instance within 5 seconds', async () => {
    const { token, id } = await createToken(setup, ws, { role: 'viewer' });
    // Both instances have verified (and cached) it.
    for (const port of [a.port, b.port]) expect((await callToolAt(port, token, 'list_forms', {})).status).toBe(200);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'dist', 'src', 'cli', 'main.js'), 'token', 'revoke', '--id', id, '--json'],
      {
        env: {
          PATH: process.env.PATH ?? '',
          DATABASE_URL: testDatabaseUrl(),
          NODE_ENV: 'production',
          WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
        },
      },
    );
    expect(JSON.parse(stdout).revokedAt).toEqual(expect.any(String));
    const refusedWithin = await Promise.all(
      [a.port, b.port].map((port) =>
        waitUntil(
          async () => (await callToolAt(port, token, 'list_forms', {})).status === 401,
          5_000,
          `instance on ${port} refuses the token`,
        ),
      ),
    );
    for (const ms of refusedWithin) expect(ms).toBeLessThanOrEqual(5_000);
    const refused = await viaNginx(token, 'list_forms', {});
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toContain('invalid_token');
  });

  it('logs one JSON line per request with the request id it answered with', async () => {
    const { token } = await createToken(setup, ws, { role: 'viewer' });
    const requestId = `trace-${randomUUID()}`;
    const res = await viaNginx(token, 'list_forms', {}, { headers: { 'X-Request-Id': requestId } });
    expect(res.headers['x-request-id']).toBe(requestId);
    const instance = res.headers['x-upstream'] === `127.0.0.1:${a.port}` ? a : b;
    await waitUntil(async () => instance.lines.some((l) => l.includes(requestId)), 2_000, 'the request is logged');
    const line = JSON.parse(instance.lines.find((l) => l.includes(requestId))!);
    expect(line).toMatchObject({
      level: 'info',
      context: 'Http',
      requestId,
      msg: 'request',
      method: 'POST',
      path: '/api/v1/tools/list_forms',
      status: 200,
    });
    expect(line.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(line.ip).toBe(DEFAULT_SOURCE); // the address nginx saw: the client's own (loopback) address
    expect(typeof line.credential).toBe('string');
    expect(JSON.stringify(line)).not.toContain(token);
    // Every line the instances wrote is one JSON object with a standard level, an ISO-8601 time and a string msg.
    for (const l of [...a.lines, ...b.lines]) {
      const entry = JSON.parse(l);
      expect(['debug', 'info', 'warn', 'error', 'fatal']).toContain(entry.level);
      expect(entry.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(typeof entry.msg).toBe('string');
    }
  });

  it('without a request id of its own, gets the one nginx made, in the answer and in the log', async () => {
    const res = await httpRequest(nginx.port, '/api/v1');
    expect(res.status).toBe(401);
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f]{32}$/);
    const requestId = String(res.headers['x-request-id']);
    expect(res.json.error.requestId).toBe(requestId);
    await waitUntil(
      async () => [...a.lines, ...b.lines].some((l) => l.includes(requestId)),
      2_000,
      'the request is logged',
    );
    const line = JSON.parse([...a.lines, ...b.lines].find((l) => l.includes(requestId))!);
    expect(line).toMatchObject({ requestId, msg: 'request', status: 401, path: '/api/v1' });
  });

  it('answers with the JSON error envelope when no instance answers (nginx on its own)', async () => {
    const port = await freePort();
    const nowhere = await freePort();
    const lonely = await Nginx.start(requireNginx(), port, nginxConfig(port, [nowhere]));
    try {
      const res = await httpRequest(port, '/api/v1/tools/list_forms', { body: {} });
      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.json.error).toMatchObject({
        code: 'service_unavailable',
        message: expect.any(String),
        hint: expect.any(String),
        requestId: expect.any(String),
      });
    } finally {
      await lonely.stop();
    }
  });

  it('stops gracefully on SIGTERM: no new connections, the request in flight answered, then exit 0', async () => {
    const stopping = await Instance.start('c', env());
    c = stopping;
    const { token } = await createToken(setup, ws, { role: 'viewer' });
    // A request in flight: its body is still arriving when the signal comes.
    const body = JSON.stringify({});
    const socket = net.connect({ port: stopping.port, host: '127.0.0.1', localAddress: randomLoopbackAddress() });
    await new Promise((resolve) => socket.on('connect', resolve));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    socket.write(
      `POST /api/v1/tools/list_forms HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    await sleep(200);
    stopping.signal('SIGTERM');
    await waitUntil(
      () =>
        new Promise<boolean>((resolve) => {
          const probe = net.connect(stopping.port, '127.0.0.1', () => (probe.destroy(), resolve(false)));
          probe.on('error', () => resolve(true));
        }),
      3_000,
      'the stopping instance refuses new connections',
    );
    expect(stopping.running).toBe(true); // still finishing the request in flight
    socket.write(body);
    await waitUntil(
      async () => answer.includes('\r\n\r\n') && answer.includes('"forms"'),
      5_000,
      'the request in flight is answered',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(await stopping.exited).toBe(0);
    const messages = stopping.lines.map((l) => JSON.parse(l).msg);
    expect(messages).toEqual(expect.arrayContaining([expect.stringContaining('SIGTERM'), 'stopped']));
    socket.destroy();
  });
});

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { FormRecord } from '../../src/forms/forms.service';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

const MODERN = '2026-07-28';
const PUBLIC_URL = 'http://formwork.test';

/** The per-request envelope of a 2026-07-28 request. */
const envelope = (version = MODERN) => ({
  'io.modelcontextprotocol/protocolVersion': version,
  'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
});

/** A 2026-07-28 request as a client of that revision posts it: _meta in the body, Mcp-* headers. */
function post2026(
  app: NestFastifyApplication,
  token: string | undefined,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string> = {},
  id: number | string = 1,
) {
  const name = typeof params.name === 'string' ? { 'Mcp-Name': params.name } : {};
  let req = request(app.getHttpServer())
    .post('/mcp')
    .set('Accept', 'application/json, text/event-stream')
    .set('Content-Type', 'application/json')
    .set('MCP-Protocol-Version', MODERN)
    .set('Mcp-Method', method);
  for (const [k, v] of Object.entries({ ...name, ...headers })) req = req.set(k, v);
  if (token !== undefined) req = req.set('Authorization', `Bearer ${token}`);
  return req.send(JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: envelope() } }));
}

/** A client of the SDK's v2 line pinned to 2026-07-28 (no initialize; server/discover at connect). */
async function connectModern(app: NestFastifyApplication, token: string): Promise<Client> {
  const client = new Client(
    { name: 'formwork-test-v2', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: MODERN } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${await app.getUrl()}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

/** A client of the 1.x line on 2025-11-25 (initialize handshake). */
async function connectLegacy(app: NestFastifyApplication, token: string): Promise<ClientV1> {
  const client = new ClientV1({ name: 'formwork-test-v1', version: '1.0.0' });
  await client.connect(
    new TransportV1(new URL(`${await app.getUrl()}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

describe('the MCP connector on 2026-07-28 (stateless), beside 2025-11-25', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let admin: string;
  let modern: Client;
  let legacy: ClientV1;
  let form: FormRecord;

  beforeAll(async () => {
    app = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '1000' });
    await app.listen(0, '127.0.0.1');
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    admin = (await createToken(app, ws, { role: 'admin' })).token;
    form = await createForm(app, ws, { status: 'published' });
    modern = await connectModern(app, admin);
    legacy = await connectLegacy(app, admin);
  });
  afterAll(async () => {
    await modern?.close();
    await legacy?.close();
    await app.close();
  });

  it('a v2 client pinned to 2026-07-28 connects without initialize and lists the tools of GET /api/v1/tools, in their order', async () => {
    expect(modern.getNegotiatedProtocolVersion()).toBe(MODERN);
    // The same credential's list (a list fits its credential).
    const rest = (await request(app.getHttpServer()).get('/api/v1/tools').set('Authorization', `Bearer ${admin}`)).body
      .tools;
    const { tools } = await modern.listTools();
    // _meta: the MCP Apps view a tool opens (mcp-apps.e2e-spec.ts), which REST does not publish.
    expect(tools.map(({ _meta: _m, ...t }) => t)).toEqual(
      rest.map(({ 'x-formwork': _, ...t }: Record<string, unknown>) => t),
    );
    // Both eras list the same tools.
    expect((await legacy.listTools()).tools).toEqual(tools);
  });

  it('answers tools/list and a tool call as 2025-11-25 does, apart from the era envelope (resultType, serverInfo, caching hints)', async () => {
    const list = await post2026(app, admin, 'tools/list');
    expect(list.status).toBe(200);
    expect(list.headers['mcp-session-id']).toBeUndefined();
    const { resultType, ttlMs, cacheScope, _meta, ...tools } = list.body.result;
    // private: the list is the credential's (the tools it may call).
    expect({ resultType, ttlMs, cacheScope }).toEqual({
      resultType: 'complete',
      ttlMs: 300_000,
      cacheScope: 'private',
    });
    expect(_meta['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'formwork' });
    expect(tools).toEqual(await legacy.listTools());

    const call = await post2026(app, admin, 'tools/call', { name: 'get_form', arguments: { publicId: form.publicId } });
    expect(call.status).toBe(200);
    const { resultType: rt, _meta: _m, ...result } = call.body.result;
    expect(rt).toBe('complete');
    expect(result).toEqual(await legacy.callTool({ name: 'get_form', arguments: { publicId: form.publicId } }));
    expect(result.structuredContent).toEqual(
      (await callTool(app, admin, 'get_form', { publicId: form.publicId })).body,
    );
    // The v2 client's view of the same call.
    const viaClient = await modern.callTool({ name: 'get_form', arguments: { publicId: form.publicId } });
    expect(viaClient.structuredContent).toEqual(result.structuredContent);
  });

  it('server/discover names 2026-07-28 and the tools capability; prompts and resources list empty', async () => {
    const res = await post2026(app, admin, 'server/discover');
    expect(res.status).toBe(200);
    expect(res.body.result.supportedVersions).toEqual([MODERN]);
    expect(res.body.result.capabilities.tools).toBeDefined();
    expect(res.body.result.serverInfo ?? res.body.result._meta['io.modelcontextprotocol/serverInfo']).toMatchObject({
      name: 'formwork',
    });
    for (const [method, key] of [
      ['prompts/list', 'prompts'],
      ['resources/templates/list', 'resourceTemplates'],
    ]) {
      const list = await post2026(app, admin, method);
      expect({ method, status: list.status, items: list.body.result[key] }).toEqual({ method, status: 200, items: [] });
    }
    // The resources are the MCP Apps views (mcp-apps.e2e-spec.ts).
    const resources = await post2026(app, admin, 'resources/list');
    expect(resources.body.result.resources).toHaveLength(2);
  });

  it('Mcp-Method and Mcp-Name must match the body: 400 with -32020 (header names in any case, values as sent, spaces around trimmed)', async () => {
    const args = { name: 'get_form', arguments: { publicId: form.publicId } };
    const cases: Array<[string, Record<string, string>, number]> = [
      ['method mismatch', { 'Mcp-Method': 'prompts/list' }, 400],
      ['name mismatch', { 'Mcp-Name': 'list_forms' }, 400],
      ['name in another case', { 'Mcp-Name': 'GET_FORM' }, 400],
      ['method in another case', { 'Mcp-Method': 'Tools/Call' }, 400],
      ['header names in lower case', { 'mcp-method': 'tools/call', 'mcp-name': 'get_form' }, 200],
      ['spaces around the name', { 'Mcp-Name': '  get_form  ' }, 200],
    ];
    for (const [what, headers, status] of cases) {
      const res = await post2026(app, admin, 'tools/call', args, headers, 7);
      expect({ what, status: res.status }).toEqual({ what, status });
      if (status === 400)
        expect({ what, code: res.body.error.code, id: res.body.id }).toEqual({ what, code: -32020, id: 7 });
    }
    // A tools/call without Mcp-Name is refused too.
    const missing = await request(app.getHttpServer())
      .post('/mcp')
      .set('Authorization', `Bearer ${admin}`)
      .set('Accept', 'application/json, text/event-stream')
      .set('Content-Type', 'application/json')
      .set('MCP-Protocol-Version', MODERN)
      .set('Mcp-Method', 'tools/call')
      .send(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { ...args, _meta: envelope() } }));
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe(-32020);
  });

  it('methods 2026-07-28 removed answer 404 with -32601; an unsupported version is UnsupportedProtocolVersionError with the versions there are', async () => {
    for (const method of ['initialize', 'ping', 'logging/setLevel']) {
      const res = await post2026(app, admin, method, {}, {}, `m-${method}`);
      expect({ method, status: res.status, code: res.body.error?.code, id: res.body.id }).toEqual({
        method,
        status: 404,
        code: -32601,
        id: `m-${method}`,
      });
    }
    const future = await request(app.getHttpServer())
      .post('/mcp')
      .set('Authorization', `Bearer ${admin}`)
      .set('Accept', 'application/json, text/event-stream')
      .set('Content-Type', 'application/json')
      .set('MCP-Protocol-Version', '2099-01-01')
      .set('Mcp-Method', 'tools/list')
      .send(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: { _meta: envelope('2099-01-01') } }));
    expect(future.status).toBe(400);
    expect(future.body.error.data).toEqual({ supported: [MODERN], requested: '2099-01-01' });
    // On the 2025 era (no envelope), an unknown version header: the same error, naming every version served.
    const old = await request(app.getHttpServer())
      .post('/mcp')
      .set('Authorization', `Bearer ${admin}`)
      .set('Accept', 'application/json, text/event-stream')
      .set('Content-Type', 'application/json')
      .set('MCP-Protocol-Version', '1999-01-01')
      .send(JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/list' }));
    expect(old.status).toBe(400);
    expect(old.body.error).toMatchObject({
      code: future.body.error.code,
      data: { supported: [MODERN, '2025-11-25', '2025-06-18'], requested: '1999-01-01' },
    });
    expect(old.body.id).toBe(10);
  });

  it('credentials, scopes, refusals and Idempotency-Key work as on 2025-11-25', async () => {
    expectError(await post2026(app, undefined, 'tools/list'), 401, 'unauthorized');
    const formsOnly = (await createToken(app, ws, { role: 'admin', scopes: ['forms:read'] })).token;
    const denied = await post2026(app, formsOnly, 'tools/call', {
      name: 'list_responses',
      arguments: { publicId: 'x' },
    });
    expectError(denied, 403, 'insufficient_scope');
    expect(denied.headers['www-authenticate']).toContain(
      `resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"`,
    );
    const notFound = await post2026(app, admin, 'tools/call', { name: 'get_form', arguments: { publicId: 'nope' } });
    expect(notFound.status).toBe(200);
    expect(notFound.body.result.isError).toBe(true);
    expect(JSON.parse(notFound.body.result.content[0].text).error.code).toBe('not_found');

    const key = randomUUID();
    const args = { publicId: form.publicId, answers: { [form.blocks[0].id]: `idem-${key}` } };
    const first = await post2026(
      app,
      admin,
      'tools/call',
      { name: 'create_response', arguments: args },
      {
        'Idempotency-Key': key,
      },
    );
    expect(first.status).toBe(200);
    const again = await post2026(
      app,
      admin,
      'tools/call',
      { name: 'create_response', arguments: args },
      {
        'Idempotency-Key': key,
      },
    );
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.body.result.structuredContent).toEqual(first.body.result.structuredContent);
    // The key space is the one REST and 2025-11-25 use.
    const viaLegacy = await request(app.getHttpServer())
      .post('/mcp')
      .set('Authorization', `Bearer ${admin}`)
      .set('Accept', 'application/json, text/event-stream')
      .set('Content-Type', 'application/json')
      .set('Idempotency-Key', key)
      .send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'create_response', arguments: args },
        }),
      );
    expect(viaLegacy.headers['idempotency-replayed']).toBe('true');
    const rows = await db.query(`SELECT count(*)::int AS n FROM responses WHERE form_id = $1 AND answers ->> $2 = $3`, [
      form.id,
      form.blocks[0].id,
      `idem-${key}`,
    ]);
    expect(rows[0].n).toBe(1);
  });

  it('messages an agent reads name MCP: hints say tools/list, and an unknown tool is not prefixed twice by the client', async () => {
    for (const call of [
      () => post2026(app, admin, 'tools/call', { name: 'list_forms', arguments: { bogus: 1 } }),
      () =>
        request(app.getHttpServer())
          .post('/mcp')
          .set('Authorization', `Bearer ${admin}`)
          .set('Accept', 'application/json, text/event-stream')
          .set('Content-Type', 'application/json')
          .send(
            JSON.stringify({
              jsonrpc: '2.0',
              id: 1,
              method: 'tools/call',
              params: { name: 'list_forms', arguments: { bogus: 1 } },
            }),
          ),
    ]) {
      const envelopeText = (await call()).body.result.content[0].text;
      const { error } = JSON.parse(envelopeText);
      expect(error.code).toBe('invalid_arguments');
      expect(error.hint).toContain('tools/list');
      expect(envelopeText).not.toContain('/api/v1/tools');
    }
    // REST keeps naming its route.
    expect((await callTool(app, admin, 'list_forms', { bogus: 1 })).body.error.hint).toContain('GET /api/v1/tools');

    const unknown = await post2026(app, admin, 'tools/call', { name: 'no_such_tool', arguments: {} });
    expect(unknown.body.error.code).toBe(-32602);
    expect(unknown.body.error.message).toMatch(/^There is no tool named "no_such_tool"; tools\/list lists the tools: /);
    for (const c of [modern, legacy]) {
      const err = await c.callTool({ name: 'no_such_tool', arguments: {} }).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err?.message.match(/MCP error -32602/g) ?? []).toHaveLength(err?.message.includes('MCP error') ? 1 : 0);
      expect(err?.message).toContain('There is no tool named "no_such_tool"');
    }
  });

  it('each 2026-07-28 request spends the credential budget once', async () => {
    const { token } = await createToken(app, ws);
    const first = await post2026(app, token, 'tools/call', { name: 'list_forms', arguments: {} });
    const second = await post2026(app, token, 'tools/list');
    const left = (res: request.Response) => Number(/"cred";r=(\d+);/.exec(res.headers['ratelimit'])![1]);
    expect(left(first) - left(second)).toBe(1);
  });
});

describe('the MCP Origin check when PUBLIC_URL is a loopback address', () => {
  let app: NestFastifyApplication;
  let admin: string;

  beforeAll(async () => {
    app = await createTestApp({ PUBLIC_URL: 'http://127.0.0.1:3000' });
    const ws = await createWorkspace(app, 'pro');
    admin = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(() => app.close());

  it('takes localhost, 127.0.0.1 and [::1] on any port as one origin; any other is refused', async () => {
    const list = (origin: string) =>
      request(app.getHttpServer())
        .post('/mcp')
        .set('Authorization', `Bearer ${admin}`)
        .set('Accept', 'application/json, text/event-stream')
        .set('Content-Type', 'application/json')
        .set('Origin', origin)
        .send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    for (const origin of ['http://127.0.0.1:3000', 'http://localhost:6274', 'http://[::1]:8080', 'http://LOCALHOST']) {
      expect({ origin, status: (await list(origin)).status }).toEqual({ origin, status: 200 });
    }
    for (const origin of ['http://evil.example', 'http://127.0.0.1.evil.example:3000', 'null', 'file://localhost']) {
      const res = await list(origin);
      expect({ origin, status: res.status, code: res.body.error?.code }).toEqual({
        origin,
        status: 403,
        code: 'origin_not_allowed',
      });
    }
  });
});

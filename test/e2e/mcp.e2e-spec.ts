import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { FormRecord } from '../../src/forms/forms.service';
import { createForm, createResponses, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

const PUBLIC_URL = 'http://formwork.test';

/** A connected client of the SDK, as an agent would use it, with a bearer token (and more headers). */
async function connect(
  app: NestFastifyApplication,
  token: string,
  headers: Record<string, string> = {},
): Promise<Client> {
  const client = new Client({ name: 'formwork-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${await app.getUrl()}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, ...headers } },
  });
  await client.connect(transport);
  return client;
}

/** One JSON-RPC message posted as a client would, for what the SDK client hides (statuses, headers). */
function post(
  app: NestFastifyApplication,
  token: string | undefined,
  message: unknown,
  headers: Record<string, string> = {},
) {
  let req = request(app.getHttpServer())
    .post('/mcp')
    .set('Accept', 'application/json, text/event-stream')
    .set('Content-Type', 'application/json');
  if (token !== undefined) req = req.set('Authorization', `Bearer ${token}`);
  for (const [k, v] of Object.entries(headers)) req = req.set(k, v);
  return req.send(JSON.stringify(message));
}
const toolsCall = (name: string, args: unknown, id: number | string = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

type Result = { isError?: boolean; structuredContent?: unknown; content: Array<{ type: string; text: string }> };
/** The error code of an isError result (whose one text content is the REST envelope), or undefined for a success. */
function errorCodeOf(result: Result): string | undefined {
  if (!result.isError) return undefined;
  expect(result.structuredContent).toBeUndefined();
  expect(result.content).toHaveLength(1);
  const envelope = JSON.parse(result.content[0].text);
  for (const key of ['code', 'message', 'hint', 'requestId']) expect(typeof envelope.error[key]).toBe('string');
  return envelope.error.code;
}

/** Fields that differ between two objects made by the same call (ids, times). */
const VOLATILE = new Set([
  'publicId',
  'url', // a form's share link, which ends with its publicId
  'id',
  'createdAt',
  'updatedAt',
  'publishedAt',
  'closedAt',
  'submittedAt',
  'startedAt',
  'requestId',
]);
function masked(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(masked);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, VOLATILE.has(k) && v !== null ? '*' : masked(v)]),
    );
  }
  return value;
}

describe('the MCP connector (/mcp)', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let admin: string;
  let client: Client;

  beforeAll(async () => {
    app = await createTestApp({ MCP_ALLOWED_ORIGINS: 'https://inspector.example' });
    await app.listen(0, '127.0.0.1');
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    admin = (await createToken(app, ws, { role: 'admin' })).token;
    client = await connect(app, admin);
  });
  afterAll(async () => {
    await client?.close();
    await app.close();
  });

  describe('tools/list', () => {
    it('has exactly the tools of GET /api/v1/tools, with the same name, title, description, schemas and annotations', async () => {
      // The same credential's list (a list fits its credential).
      const rest = (await request(app.getHttpServer()).get('/api/v1/tools').set('Authorization', `Bearer ${admin}`))
        .body.tools;
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(rest.map((t: { name: string }) => t.name));
      // _meta: the MCP Apps view a tool opens (mcp-apps.e2e-spec.ts), which REST does not publish.
      expect(tools.map(({ _meta: _m, ...t }) => t)).toEqual(
        rest.map(({ 'x-formwork': _, ...t }: Record<string, unknown>) => t),
      );
    });

    it('answers a client that negotiated either protocol version, and settles an older one on the latest', async () => {
      for (const [asked, agreed] of [
        ['2025-06-18', '2025-06-18'],
        ['2025-11-25', '2025-11-25'],
        ['2024-11-05', '2025-11-25'],
      ]) {
        const res = await post(app, admin, {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: asked, capabilities: {}, clientInfo: { name: 't', version: '1' } },
        });
        expect(res.status).toBe(200);
        expect(res.body.result.protocolVersion).toBe(agreed);
        expect(res.body.result.capabilities.tools).toBeDefined();
        expect(res.headers['mcp-session-id']).toBeUndefined();
      }
      const later = await post(
        app,
        admin,
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        { 'MCP-Protocol-Version': '2025-06-18' },
      );
      expect(later.status).toBe(200);
      expect(later.body.result.tools.length).toBeGreaterThan(0);
      expect(
        (
          await post(
            app,
            admin,
            { jsonrpc: '2.0', id: 3, method: 'tools/list' },
            { 'MCP-Protocol-Version': '1999-01-01' },
          )
        ).status,
      ).toBe(400);
    });
  });

  describe('tools/call runs the same services as POST /api/v1/tools/{name}', () => {
    let form: FormRecord;
    const rest = async (token: string, name: string, args: unknown) => {
      const res = await callTool(app, token, name, args);
      return res.status === 200 ? { ok: res.body } : { code: res.body.error.code as string };
    };
    const mcp = async (token: string, name: string, args: unknown, c: Client = client) => {
      const result = (await c.callTool({ name, arguments: args as Record<string, unknown> })) as Result;
      const code = errorCodeOf(result);
      if (code) return { code };
      expect(result.content).toEqual([{ type: 'text', text: JSON.stringify(result.structuredContent) }]);
      return { ok: result.structuredContent };
    };

    beforeAll(async () => {
      form = await createForm(app, ws, { status: 'published' });
      await createResponses(app, form, 3);
    });

    it('gives the same result for every read tool', async () => {
      const [responseId] = (await rest(admin, 'list_responses', { publicId: form.publicId })).ok.responses.map(
        (r: { id: string }) => r.id,
      );
      const calls: Array<[string, unknown]> = [
        ['list_forms', {}],
        ['get_form', { publicId: form.publicId }],
        ['list_responses', { publicId: form.publicId, limit: 2, order: 'newest' }],
        ['get_response', { publicId: form.publicId, responseId }],
        ['summarize_responses', { publicId: form.publicId }],
      ];
      for (const [name, args] of calls) {
        const viaRest = await rest(admin, name, args);
        expect(viaRest.ok).toBeDefined();
        expect(await mcp(admin, name, args)).toEqual(viaRest);
      }
    });

    it('gives the same result for every write tool (ids and times aside), and audits each call', async () => {
      const blocks = [{ type: 'short_text', title: 'Name', required: true }];
      const twin = async (name: string, args: (f: FormRecord) => unknown, make = true) => {
        const [a, b] = make
          ? [
              await createForm(app, ws, { title: 'Twin', blocks: blocks as never }),
              await createForm(app, ws, { title: 'Twin', blocks: blocks as never }),
            ]
          : [form, form];
        const viaRest = await rest(admin, name, args(a));
        const viaMcp = await mcp(admin, name, args(b));
        expect(viaRest.ok).toBeDefined();
        expect(masked(viaMcp)).toEqual(masked(viaRest));
        return [a, b];
      };
      await twin('create_form', () => ({ title: 'Twin', blocks }), false);
      await twin('update_form', (f) => ({ publicId: f.publicId, version: f.version, title: 'Renamed' }));
      await twin('publish_form', (f) => ({ publicId: f.publicId }));
      const [a, b] = await twin('publish_form', (f) => ({ publicId: f.publicId }));
      expect(masked(await mcp(admin, 'close_form', { publicId: b.publicId }))).toEqual(
        masked(await rest(admin, 'close_form', { publicId: a.publicId })),
      );
      await twin('delete_form', (f) => ({ publicId: f.publicId }));
      const answers = { [form.blocks[0].id]: 'Ada' };
      await twin('create_response', () => ({ publicId: form.publicId, answers }), false);
      const [r1, r2] = await createResponses(app, form, 2);
      expect(masked(await mcp(admin, 'delete_response', { publicId: form.publicId, responseId: r2 }))).toEqual(
        masked(await rest(admin, 'delete_response', { publicId: form.publicId, responseId: r1 })),
      );
      const audited = await db.query(
        `SELECT count(*)::int AS n FROM audit_events WHERE workspace_id = $1 AND action = 'response.delete'`,
        [ws.id],
      );
      expect(audited[0].n).toBe(2);
    });

    it('refuses with the same error code as REST, as an isError result holding the envelope', async () => {
      const free = await createWorkspace(app, 'free');
      const freeToken = (await createToken(app, free, { role: 'admin' })).token;
      const viewer = (await createToken(app, ws, { role: 'viewer' })).token;
      const empty = await createForm(app, ws, { blocks: [] });
      const draft = await createForm(app, ws);
      const cases: Array<[string, string, unknown, string]> = [
        [admin, 'get_form', { publicId: 'nope' }, 'not_found'],
        [admin, 'list_forms', { limit: 0 }, 'invalid_arguments'],
        [admin, 'list_forms', { bogus: true }, 'invalid_arguments'],
        [admin, 'publish_form', { publicId: empty.publicId }, 'tool_error'],
        [
          admin,
          'update_form',
          { publicId: draft.publicId, version: draft.version + 5, title: 'x' },
          'version_conflict',
        ],
        [viewer, 'create_form', { title: 'x' }, 'forbidden'],
        [freeToken, 'create_form', { title: 'x' }, 'pro_required'],
      ];
      for (const [token, name, args, code] of cases) {
        const c = token === admin ? client : await connect(app, token);
        expect(await rest(token, name, args)).toEqual({ code });
        expect(await mcp(token, name, args, c)).toEqual({ code });
        if (c !== client) await c.close();
      }
      // Every tool is strict about its arguments, over both transports.
      for (const { name } of (await client.listTools()).tools) {
        expect(await mcp(admin, name, { notAnArgument: 1 })).toEqual(await rest(admin, name, { notAnArgument: 1 }));
      }
    });

    it('answers an unknown tool with a JSON-RPC error -32602', async () => {
      await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({
        code: ErrorCode.InvalidParams,
      });
      await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toBeInstanceOf(McpError);
    });

    it('answers arguments that are not an object with a JSON-RPC error -32602 and a readable message; arguments the tool refuses stay isError results', async () => {
      for (const args of [[1], null, 'publicId', 5, true]) {
        const res = await post(app, admin, toolsCall('get_form', args, 'bad'));
        expect({ args, status: res.status }).toEqual({ args, status: 200 });
        expect(res.body).toEqual({
          jsonrpc: '2.0',
          id: 'bad',
          error: {
            code: ErrorCode.InvalidParams,
            message: expect.stringMatching(
              /^Invalid params: params\.arguments must be an object of the tool's arguments/,
            ),
          },
        });
        // Readable: what was sent in words, and no schema dump.
        expect(res.body.error.message).not.toMatch(/"code":|invalid_type|expected/);
      }
      // The same for a tools/call without a tool name (params that are not an object are no JSON-RPC request: 400).
      for (const params of [{ name: 5, arguments: {} }, { arguments: {} }]) {
        const res = await post(app, admin, { jsonrpc: '2.0', id: 3, method: 'tools/call', params });
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({
          id: 3,
          error: { code: ErrorCode.InvalidParams, message: /^Invalid params: / },
        });
      }
      // A missing arguments is {}; arguments the tool's schema refuses are the tool's isError result, as on REST.
      const missing = await post(app, admin, {
        jsonrpc: '2.0',
        id: 4,
        method: 'tools/call',
        params: { name: 'list_forms' },
      });
      expect(missing.body.result.isError).toBeUndefined();
      const refused = await post(app, admin, toolsCall('get_form', { publicId: 5 }, 5));
      expect(refused.status).toBe(200);
      expect(errorCodeOf(refused.body.result)).toBe('invalid_arguments');
    });

    it('replays a call with the same Idempotency-Key, in the key space REST uses for the credential and tool', async () => {
      const key = randomUUID();
      const args = { publicId: form.publicId, answers: { [form.blocks[0].id]: `idem-${key}` } };
      const first = await post(app, admin, toolsCall('create_response', args), { 'Idempotency-Key': key });
      expect(first.status).toBe(200);
      expect(first.headers['idempotency-replayed']).toBeUndefined();
      const again = await post(app, admin, toolsCall('create_response', args), { 'Idempotency-Key': key });
      expect(again.headers['idempotency-replayed']).toBe('true');
      expect(again.body.result).toEqual(first.body.result);
      // The same key on REST replays the answer MCP stored; with other arguments it is reused.
      const viaRest = await callTool(app, admin, 'create_response', args, { 'Idempotency-Key': key });
      expect(viaRest.headers['idempotency-replayed']).toBe('true');
      expect(viaRest.body).toEqual(first.body.result.structuredContent);
      expectError(
        await callTool(app, admin, 'create_response', { ...args, answers: {} }, { 'Idempotency-Key': key }),
        422,
        'idempotency_key_reused',
      );
      const other = await post(app, admin, toolsCall('create_response', { ...args, answers: {} }), {
        'Idempotency-Key': key,
      });
      expect(errorCodeOf(other.body.result)).toBe('idempotency_key_reused');
      const rows = await db.query(
        `SELECT count(*)::int AS n FROM responses WHERE form_id = $1 AND answers ->> $2 = $3`,
        [form.id, form.blocks[0].id, `idem-${key}`],
      );
      expect(rows[0].n).toBe(1);
    });
  });

  describe('credentials', () => {
    it('without a credential: 401 naming the MCP resource metadata, whose resource is PUBLIC_URL/mcp', async () => {
      for (const token of [undefined, 'fw_not_a_real_token']) {
        const res = await post(app, token, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
        expectError(res, 401, 'unauthorized');
        expect(res.headers['www-authenticate']).toContain(
          `resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"`,
        );
      }
      const doc = await request(app.getHttpServer()).get('/.well-known/oauth-protected-resource/mcp');
      expect(doc.status).toBe(200);
      expect(doc.body.resource).toBe(`${PUBLIC_URL}/mcp`);
      // The REST API's challenge still names its own.
      expect((await callTool(app, undefined, 'list_forms', {})).headers['www-authenticate']).toContain(
        'oauth-protected-resource/api/v1"',
      );
    });

    it('a tool whose scope the credential lacks: HTTP 403 insufficient_scope with the challenge naming it', async () => {
      const formsOnly = (await createToken(app, ws, { role: 'admin', scopes: ['forms:read'] })).token;
      const res = await post(app, formsOnly, toolsCall('list_responses', { publicId: 'x' }));
      expectError(res, 403, 'insufficient_scope');
      expect(res.headers['www-authenticate']).toBe(
        `Bearer error="insufficient_scope", scope="responses:read", resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"`,
      );
      const allowed = await post(app, formsOnly, toolsCall('list_forms', {}));
      expect(allowed.status).toBe(200);
      expect(allowed.body.result.isError).toBeUndefined();
    });
  });

  describe('HTTP', () => {
    it('GET and DELETE /mcp answer 405 with Allow: POST', async () => {
      for (const method of ['get', 'delete'] as const) {
        const res = await request(app.getHttpServer())[method]('/mcp').set('Authorization', `Bearer ${admin}`);
        expectError(res, 405, 'method_not_allowed');
        expect(res.headers.allow).toBe('POST');
      }
    });

    it('refuses a browser Origin that is neither PUBLIC_URL nor listed, before authentication; serves the others', async () => {
      const refused = await post(
        app,
        undefined,
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        { Origin: 'http://evil.example' },
      );
      expectError(refused, 403, 'origin_not_allowed');
      expect(refused.headers['www-authenticate']).toBeUndefined();
      for (const origin of [PUBLIC_URL, 'https://inspector.example', undefined]) {
        const res = await post(
          app,
          admin,
          { jsonrpc: '2.0', id: 1, method: 'tools/list' },
          origin ? { Origin: origin } : {},
        );
        expect(res.status).toBe(200);
      }
      // Only /mcp checks it.
      expect((await callTool(app, admin, 'list_forms', {}, { Origin: 'http://evil.example' })).status).toBe(200);
    });

    it('refuses that Origin on every spelling of the path that the router takes to /mcp', async () => {
      const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      const send = (path: string) =>
        request(app.getHttpServer())
          .post(path)
          .set('Authorization', `Bearer ${admin}`)
          .set('Accept', 'application/json, text/event-stream')
          .set('Content-Type', 'application/json')
          .set('Origin', 'http://evil.example')
          .send(list);
      for (const path of ['/%6dcp', '/%6Dcp', '/m%63p', '/%6d%63%70', '/mcp/', '/%6dcp/', '/mcp?x=1', '/%6dcp?x=/']) {
        const res = await send(path);
        expect({ path, status: res.status, code: res.body?.error?.code }).toEqual({
          path,
          status: 403,
          code: 'origin_not_allowed',
        });
      }
      // A spelling the router does not take to /mcp is not served at all.
      for (const path of ['/MCP', '/%4dCP', '/mcpx']) {
        const res = await send(path);
        expect({ path, status: res.status }).toEqual({ path, status: 404 });
      }
    });

    it('answers a notification with 202 and no body', async () => {
      const res = await post(app, admin, { jsonrpc: '2.0', method: 'notifications/initialized' });
      expect(res.status).toBe(202);
      expect(res.text).toBe('');
    });

    it('refuses what the Streamable HTTP transport refuses, with its statuses and JSON-RPC codes', async () => {
      const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
      const refusal = (res: request.Response, status: number, code: number, message: RegExp) => {
        expect(res.status).toBe(status);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(res.body).toEqual({
          jsonrpc: '2.0',
          id: null,
          error: { code, message: expect.stringMatching(message) },
        });
      };
      refusal(await post(app, admin, list, { Accept: 'application/json' }), 406, -32000, /^Not Acceptable/);
      refusal(await post(app, admin, list, { 'Content-Type': 'text/plain' }), 415, -32000, /^Unsupported Media Type/);
      const badJson = await request(app.getHttpServer())
        .post('/mcp')
        .set('Authorization', `Bearer ${admin}`)
        .set('Accept', 'application/json, text/event-stream')
        .set('Content-Type', 'application/json')
        .send('{"jsonrpc": "2.0",');
      refusal(badJson, 400, ErrorCode.ParseError, /Invalid JSON$/);
      refusal(await post(app, admin, { hello: 'world' }), 400, ErrorCode.ParseError, /Invalid JSON-RPC message/);
      // An unknown method is the server's JSON-RPC error, in an answer of 200.
      const unknown = await post(app, admin, { jsonrpc: '2.0', id: 'x', method: 'prompts/list' });
      expect(unknown.status).toBe(200);
      expect(unknown.body).toEqual({
        jsonrpc: '2.0',
        id: 'x',
        error: { code: ErrorCode.MethodNotFound, message: expect.any(String) },
      });
    });

    it('refuses a JSON-RPC batch (the protocol versions served have none) with 400 -32600, and runs none of its calls', async () => {
      const before = await db.query(`SELECT count(*)::int AS n FROM forms WHERE workspace_id = $1`, [ws.id]);
      const batches: unknown[] = [
        [toolsCall('create_form', { title: 'Batched 1' }, 1), toolsCall('create_form', { title: 'Batched 2' }, 2)],
        [toolsCall('create_form', { title: 'Batched 3' }, 1)],
        [{ jsonrpc: '2.0', method: 'notifications/initialized' }],
        Array(101).fill(toolsCall('create_form', { title: 'Batched 4' })),
        [],
      ];
      for (const batch of batches) {
        const res = await post(app, admin, batch);
        expect(res.status).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(res.body).toEqual({
          jsonrpc: '2.0',
          id: null,
          error: { code: ErrorCode.InvalidRequest, message: expect.stringMatching(/batches are not supported/) },
        });
      }
      const after = await db.query(`SELECT count(*)::int AS n FROM forms WHERE workspace_id = $1`, [ws.id]);
      expect(after[0].n).toBe(before[0].n);
    });

    it('keeps concurrent requests of many clients apart, though they all use the id 1', async () => {
      const forms = await Promise.all(
        Array.from({ length: 12 }, (_, i) => createForm(app, ws, { title: `Concurrent ${i}` })),
      );
      const answers = await Promise.all(
        forms.map((f) => post(app, admin, toolsCall('get_form', { publicId: f.publicId }, 1))),
      );
      for (const [i, res] of answers.entries()) {
        expect(res.status).toBe(200);
        expect(res.body.id).toBe(1);
        expect(res.body.result.structuredContent.title).toBe(`Concurrent ${i}`);
      }
      // A cancellation naming id 1 reaches none of them: it is accepted and dropped.
      const cancelled = await Promise.all([
        post(app, admin, toolsCall('get_form', { publicId: forms[0].publicId }, 1)),
        post(app, admin, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }),
      ]);
      expect(cancelled.map((r) => r.status)).toEqual([200, 202]);
      expect(cancelled[0].body.result.structuredContent.title).toBe('Concurrent 0');
    });
  });
});

describe('the MCP connector spends the budgets REST spends', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;

  beforeAll(async () => {
    app = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '4' });
    ws = await createWorkspace(app, 'pro');
  });
  afterAll(() => app.close());

  it('each /mcp request spends the credential budget once, and a budget spent on REST refuses MCP with 429 and Retry-After', async () => {
    const { token } = await createToken(app, ws);
    const first = await post(app, token, toolsCall('list_forms', {}));
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit']).toMatch(/"cred";r=3;/);
    expect(first.headers['ratelimit-policy']).toContain('"cred";q=4;w=60');
    // A batch, which would run many calls for one request, is refused (and spends its one request).
    const second = await post(app, token, [toolsCall('list_forms', {}, 1), toolsCall('list_forms', {}, 2)]);
    expect(second.status).toBe(400);
    expect(second.headers['ratelimit']).toMatch(/"cred";r=2;/);
    expect((await callTool(app, token, 'list_forms', {})).status).toBe(200);
    expect((await callTool(app, token, 'list_forms', {})).status).toBe(200);
    const refused = await post(app, token, toolsCall('list_forms', {}));
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });
});

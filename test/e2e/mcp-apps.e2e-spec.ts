import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';
import { BRANCHING_FORM } from './apps.fixture';

/**
 * Issue 39: the MCP Apps views are resources on both MCP revisions, the tools that open them say so
 * in tools/list, and check_response answers what create_response would, storing nothing.
 */
const PREVIEW = 'ui://formwork/form-preview';
const RESULTS = 'ui://formwork/results';

type Connected = { name: string; client: Pick<Client, 'listResources' | 'readResource' | 'listTools' | 'callTool'> };

describe('MCP Apps views and check_response (issue 39)', () => {
  let app: NestFastifyApplication;
  let admin: string;
  let other: string;
  let otherWs: TestWorkspace;
  const clients: Connected[] = [];
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    app = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '1000', PUBLIC_URL: 'http://formwork.test' });
    await app.listen(0, '127.0.0.1');
    const ws = await createWorkspace(app, 'pro');
    admin = (await createToken(app, ws, { role: 'admin' })).token;
    otherWs = await createWorkspace(app, 'free');
    other = (await createToken(app, otherWs, { role: 'admin' })).token;
    const url = new URL(`${await app.getUrl()}/mcp`);
    const requestInit = { headers: { Authorization: `Bearer ${admin}` } };
    const legacy = new ClientV1({ name: 'apps-v1', version: '1' });
    await legacy.connect(new TransportV1(url, { requestInit }));
    const modern = new Client(
      { name: 'apps-v2', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await modern.connect(new StreamableHTTPClientTransport(url, { requestInit }));
    clients.push(
      { name: '2025-11-25', client: legacy as unknown as Connected['client'] },
      { name: '2026-07-28', client: modern },
    );
    closers.push(
      () => legacy.close(),
      () => modern.close(),
    );
  });
  afterAll(async () => {
    for (const close of closers) await close();
    await app.close();
  });

  it.each(['2025-11-25', '2026-07-28'])('lists and reads both views on %s', async (revision) => {
    const { client } = clients.find((c) => c.name === revision)!;
    const { resources } = await client.listResources();
    expect(resources.map((r) => [r.uri, r.mimeType])).toEqual([
      [PREVIEW, 'text/html;profile=mcp-app'],
      [RESULTS, 'text/html;profile=mcp-app'],
    ]);
    for (const uri of [PREVIEW, RESULTS]) {
      const { contents } = await client.readResource({ uri });
      expect(contents).toHaveLength(1);
      const [view] = contents as Array<{ uri: string; mimeType: string; text: string }>;
      expect([view.uri, view.mimeType]).toEqual([uri, 'text/html;profile=mcp-app']);
      // One document: the bridge inlined, no file or origin of its own to load, no network allowed.
      expect(view.text).toMatch(/^<!doctype html>/);
      expect(view.text).toContain('const McpApps = ');
      // Issue 49: at most 150 KB a view (ext-apps' whole bundle inlined made each ~528 KB).
      const bytes = Buffer.byteLength(view.text);
      console.log(`${uri}: ${bytes} bytes`);
      expect(bytes).toBeLessThanOrEqual(150_000);
      expect(view.text).not.toMatch(/<script[^>]+src=|<link[^>]+href=|@import/i);
      expect(view.text).toMatch(
        /http-equiv="Content-Security-Policy" content="default-src 'none';[^"]*connect-src 'none'/,
      );
    }
    // An unknown URI (of ours or any other scheme) is -32602 Invalid params (SEP-2164), never a 500.
    for (const uri of ['ui://formwork/nothing', 'file:///etc/passwd', 'ui://formwork/form-preview/../results']) {
      const refused = (await client.readResource({ uri }).catch((e: unknown) => e)) as {
        code?: number;
        message: string;
      };
      expect([refused.code, refused.message]).toEqual([-32602, expect.stringContaining(uri)]);
    }
  });

  it.each(['2025-11-25', '2026-07-28'])('tools/list on %s: the tools that open a view name it', async (revision) => {
    const { client } = clients.find((c) => c.name === revision)!;
    const { tools } = await client.listTools();
    const views = Object.fromEntries(tools.filter((t) => t._meta).map((t) => [t.name, t._meta]));
    const ui = (uri: string) => ({ ui: { resourceUri: uri }, 'ui/resourceUri': uri });
    expect(views).toEqual({
      get_form: ui(PREVIEW),
      create_form: ui(PREVIEW),
      update_form: ui(PREVIEW),
      publish_form: ui(PREVIEW),
      summarize_responses: ui(RESULTS),
    });
    // Every tool a view calls is one the model may call too: none is app-only, so all are listed.
    for (const name of ['check_response', 'list_responses', 'export_responses']) {
      expect(tools.map((t) => t.name)).toContain(name);
    }
  });

  it('check_response follows a jump to the end, stores nothing, and refuses as create_response does', async () => {
    const created = await callTool(app, admin, 'create_form', BRANCHING_FORM);
    expect(created.status).toBe(200);
    const { publicId } = created.body;
    const check = (body: object) => callTool(app, admin, 'check_response', { publicId, ...body });

    const ended = await check({ answers: { coming: false } });
    expect(ended.status).toBe(200);
    const [coming, p2] = created.body.blocks.map((b: { id: string }) => b.id);
    expect(ended.body).toEqual({ ok: true, shown: [coming], pages: [1], endedBy: p2, errors: [] });

    const onward = await check({ answers: { coming: true }, hidden: { src: 'mail' } });
    expect(onward.body.pages).toEqual([1, 2]);
    expect(onward.body.endedBy).toBeUndefined();
    expect(onward.body.ok).toBe(false);

    // The same refusals, path for path, as create_response's (a missing answer, a bad choice, an unknown hidden field).
    for (const body of [
      { answers: { coming: true } },
      { answers: { coming: true, dish: 'Soup' }, hidden: { utm: 'x' } },
      { answers: { coming: false, dish: 'Pasta' } },
      { answers: { coming: 'maybe' } },
    ]) {
      const dry = await check(body);
      const real = expectError(
        await callTool(app, admin, 'create_response', { publicId, ...body }),
        400,
        'invalid_arguments',
      );
      expect(dry.body.ok).toBe(false);
      expect(dry.body.errors).toEqual(
        real.details!.map((d) => ({ code: 'invalid_arguments', path: d.path, message: d.message, hint: real.hint })),
      );
    }
    const [{ count }] = await app
      .get(DataSource)
      .query('SELECT count(*)::int AS count FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1', [
        publicId,
      ]);
    expect(count).toBe(0);

    // What the schema refuses, both refuse alike: a 400 before any check.
    const long = { answers: {}, hidden: { src: 'x'.repeat(1001) } };
    const dryLong = expectError(await check(long), 400, 'invalid_arguments');
    const realLong = expectError(
      await callTool(app, admin, 'create_response', { publicId, ...long }),
      400,
      'invalid_arguments',
    );
    expect(dryLong.details).toEqual(realLong.details);

    // Another workspace's form is not found, on any plan (check_response is a read).
    expectError(await callTool(app, other, 'check_response', { publicId, answers: {} }), 404, 'not_found');
  });

  it.each(['2025-11-25', '2026-07-28'])(
    'check_response through MCP on %s, and not_found as the tool words it',
    async (revision) => {
      const { client } = clients.find((c) => c.name === revision)!;
      const created = await callTool(app, admin, 'create_form', BRANCHING_FORM);
      const result = await client.callTool({
        name: 'check_response',
        arguments: { publicId: created.body.publicId, answers: { coming: false } },
      });
      expect((result.structuredContent as { ok: boolean }).ok).toBe(true);
      const foreign = await createForm(app, otherWs);
      const refused = await client.callTool({
        name: 'get_form',
        arguments: { publicId: foreign.publicId },
      });
      expect(refused.isError).toBe(true);
      expect(JSON.parse((refused.content as Array<{ text: string }>)[0].text).error.code).toBe('not_found');
    },
  );
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { createOAuthAccessToken, createToken, createWorkspace } from '../factories';
import { ToolRegistry } from '../../src/tools/tool-registry.service';
import { createTestApp } from '../utils/create-test-app';

/**
 * The tool list fits the credential (issue 49, item 2): GET /api/v1/tools, MCP tools/list (both
 * eras) and GET /api/v1 list the tools its scopes, plan and role let it call, decided by the check
 * the call itself passes; what is left out is said (REST: notListed; MCP: the instructions).
 */
describe('the tool list fits the credential', () => {
  let app: NestFastifyApplication;
  let everyTool: string[];
  let writeTools: string[];

  beforeAll(async () => {
    app = await createTestApp();
    const registry = app.get(ToolRegistry);
    everyTool = registry.all().map((t) => t.definition.name);
    writeTools = registry
      .all()
      .filter((t) => t.definition.write)
      .map((t) => t.definition.name);
  });
  afterAll(() => app.close());

  const rest = (token: string) =>
    request(app.getHttpServer()).get('/api/v1/tools').set('Authorization', `Bearer ${token}`);

  function mcp(token: string, method: string, version: '2025-11-25' | '2026-07-28', params: object = {}) {
    const modern = version === '2026-07-28';
    return request(app.getHttpServer())
      .post('/mcp')
      .set('Accept', 'application/json, text/event-stream')
      .set('Content-Type', 'application/json')
      .set('Authorization', `Bearer ${token}`)
      .set('MCP-Protocol-Version', version)
      .set(modern ? { 'Mcp-Method': method } : {})
      .send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method,
          params: modern
            ? {
                ...params,
                _meta: {
                  'io.modelcontextprotocol/protocolVersion': version,
                  'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
                  'io.modelcontextprotocol/clientCapabilities': {},
                },
              }
            : params,
        }),
      );
  }

  const names = (tools: Array<{ name: string }>) => tools.map((t) => t.name);

  /** The names listed to `token` on every surface, checked to be the same list everywhere. */
  async function listedTo(token: string): Promise<string[]> {
    const listed = names((await rest(token)).body.tools);
    for (const version of ['2025-11-25', '2026-07-28'] as const) {
      const res = await mcp(token, 'tools/list', version);
      expect(res.status).toBe(200);
      expect(names(res.body.result.tools)).toEqual(listed);
    }
    const root = await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`);
    expect(root.body.tools).toEqual(listed);
    return listed;
  }

  /** Every tool left out is refused when called (403), every tool listed passes the access checks. */
  async function expectCallsAgree(token: string, listed: string[]) {
    for (const name of everyTool) {
      const res = await request(app.getHttpServer())
        .post(`/api/v1/tools/${name}`)
        .set('Authorization', `Bearer ${token}`)
        .set('Content-Type', 'application/json')
        .send('{"bogus": 1}');
      // A listed tool gets past scope, plan and role to the argument check (400); one left out does not.
      expect({ name, status: res.status }).toEqual({ name, status: listed.includes(name) ? 400 : 403 });
    }
  }

  it('a viewer token with forms:read sees only the form reads, on REST, both MCP eras and GET /api/v1, and calls agree', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'viewer', scopes: ['forms:read'] });
    const listed = await listedTo(token);
    expect(listed).toEqual(['list_forms', 'get_form', 'list_invites']);
    const res = await rest(token);
    expect(res.body.notListed.count).toBe(everyTool.length - 3);
    expect(res.body.notListed.hint).toContain('forms:write');
    expect(res.body.notListed.hint).toMatch(/role editor/);
    await expectCallsAgree(token, listed);
  });

  it("a Free workspace's owner sees no write tool (pro_required), and both the listing and the instructions say they exist", async () => {
    const ws = await createWorkspace(app, 'free');
    const { token } = await createToken(app, ws, { role: 'owner' });
    const listed = await listedTo(token);
    expect(listed.length).toBeGreaterThan(5);
    expect(listed.filter((name) => writeTools.includes(name))).toEqual([]);
    const res = await rest(token);
    expect(res.body.notListed).toEqual({ count: writeTools.length, hint: expect.stringContaining('a Pro workspace') });
    const init = await mcp(token, 'initialize', '2025-11-25', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 't', version: '1' },
    });
    expect(init.body.result.instructions).toMatch(/more exist: writes need a Pro workspace/);
    const discover = await mcp(token, 'server/discover', '2026-07-28');
    expect(JSON.stringify(discover.body.result)).toMatch(/more exist: writes need a Pro workspace/);
    await expectCallsAgree(token, listed);
    const refused = await request(app.getHttpServer())
      .post('/api/v1/tools/create_form')
      .set('Authorization', `Bearer ${token}`)
      .send({ title: 'x' });
    expect(refused.body.error.code).toBe('pro_required');
  });

  it('an OAuth token granted responses:read sees the response reads only', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createOAuthAccessToken(app, {
      workspaceId: ws.id,
      userId: ws.ownerId,
      scope: 'responses:read',
    });
    const listed = await listedTo(token);
    const responseReads = app
      .get(ToolRegistry)
      .all()
      .filter((t) => t.definition.scope === 'responses:read')
      .map((t) => t.definition.name);
    expect(listed).toEqual(responseReads);
    expect(listed).toContain('list_responses');
    expect((await rest(token)).body.notListed.hint).toContain('forms:read');
    await expectCallsAgree(token, listed);
  });

  it('an admin of a Pro workspace sees every tool, and nothing is said to be left out', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'admin' });
    expect(await listedTo(token)).toEqual(everyTool);
    expect((await rest(token)).body.notListed).toBeUndefined();
  });

  it('without a credential GET /api/v1/tools describes every tool (the API, not a credential); a bad credential is 401', async () => {
    const open = await request(app.getHttpServer()).get('/api/v1/tools');
    expect(open.status).toBe(200);
    expect(names(open.body.tools)).toEqual(everyTool);
    expect(open.body.notListed).toBeUndefined();
    const bad = await rest('fw_not_a_real_token');
    expect(bad.status).toBe(401);
    expect(bad.body.error.code).toBe('unauthorized');
  });

  it('GET /api/v1/tools answers per credential, so caches key it on Authorization and no shared cache keeps it', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'viewer', scopes: ['forms:read'] });
    for (const res of [await request(app.getHttpServer()).get('/api/v1/tools'), await rest(token)]) {
      expect(res.status).toBe(200);
      expect(res.headers.vary).toMatch(/(^|,\s*)authorization(\s*,|$)/i);
      expect(res.headers['cache-control']).toMatch(/\bprivate\b/);
    }
  });
});

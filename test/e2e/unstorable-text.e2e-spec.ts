import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { SessionsService } from '../../src/settings/sessions.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/**
 * Text PostgreSQL cannot store (NUL U+0000, a lone surrogate) is refused where it enters, on every
 * route, with a 400 in the surface's own format: the JSON envelope (invalid_arguments), an HTML
 * page on the pages; a tool call keeps its order (401 before 400) and MCP answers the tool's
 * isError result. Each of these was a 500 and an error line. (POST /oauth/register, served by the
 * OAuth server, is tested against dist/: test/oauth/oauth-hardening.test.mjs.)
 */
describe('text that cannot be stored is refused at the edge', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp({ WEBHOOKS_ALLOW_PRIVATE_URLS: 'true' });
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(() => app.close());

  async function signedIn() {
    const email = `admin-${randomBytes(4).toString('hex')}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(ws.slug, email, 'admin');
    const cookie = await app.get(SessionsService).start(user.id);
    const { csrf } = (await app.get(SessionsService).find(cookie))!;
    return { cookie: `fw_session=${cookie}`, csrf };
  }
  const formPost = (url: string, cookie: string, form: Array<[string, string]>) =>
    app.inject({
      method: 'POST',
      url,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(form).toString(),
    });
  const expectPage = (res: { statusCode: number; headers: Record<string, unknown>; body: string }) => {
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toMatch(/default-src 'none'.*frame-ancestors 'none'/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toMatch(/<h1>Request refused<\/h1>/);
    expect(res.body).toMatch(/cannot be stored/);
  };

  it('settings pages: a query string or a form field with NUL is an HTML 400, and nothing is stored', async () => {
    const admin = await signedIn();
    for (const query of ['actor=%00', 'action=a%00b', 'page=1&actor=x%00y']) {
      expectPage(
        await app.inject({
          method: 'GET',
          url: `/settings/w/${ws.slug}/audit?${query}`,
          headers: { cookie: admin.cookie },
        }),
      );
    }
    const base = `/settings/w/${ws.slug}/webhooks`;
    const page = await app.inject({ method: 'GET', url: base, headers: { cookie: admin.cookie } });
    const nonce = /name="nonce" value="([^"]+)"/.exec(page.body)![1];
    const res = await formPost(base, admin.cookie, [
      ['csrf', admin.csrf],
      ['nonce', nonce],
      ['url', 'http://127.0.0.1:9/hook'],
      ['events', 'response.created'],
      ['description', 'before\u0000after'],
    ]);
    expectPage(res);
    expect(
      (await db.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE workspace_id = $1', [ws.id]))[0].n,
    ).toBe(0);
    // The path too (a slug is a path parameter), and the sign-in form before any session.
    expectPage(await app.inject({ method: 'GET', url: '/settings/w/a%00b/audit', headers: { cookie: admin.cookie } }));
    expectPage(
      await app.inject({
        method: 'POST',
        url: '/settings/sign-in',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'email=a%00%40example.com&password=x',
      }),
    );
  });

  it('the respondent page: its form checks the answers at their fields (HTML 400, the form again), the edge checks the rest', async () => {
    const form = await createForm(app, ws, {
      status: 'published',
      blocks: [{ type: 'short_text', title: 'Name' }] as never,
    });
    const field = form.blocks[0].id;
    // A lone surrogate cannot be percent-encoded as UTF-8: a JSON client sends it as an escape.
    const json = await request(app.getHttpServer())
      .post(`/f/${form.publicId}`)
      .set('Content-Type', 'application/json')
      .send(`{"answers": {"${field}": "x\\ud800y"}}`);
    expect(expectError(json, 400, 'invalid_arguments').details).toEqual([
      { path: `/answers/${field}`, message: expect.any(String) },
    ]);
    const named = await request(app.getHttpServer())
      .post(`/f/${form.publicId}`)
      .set('Content-Type', 'application/json')
      .send('{"answers": {"a\\u0000b": "x"}}');
    expectError(named, 400, 'invalid_arguments');
    const posted = await formPost(`/f/${form.publicId}`, '', [
      [field, 'x\u0000y'],
      ['not\u0000a field', 'x'],
    ]);
    expect(posted.statusCode).toBe(400);
    expect(posted.headers['content-type']).toMatch(/^text\/html/);
    expect(posted.body).toMatch(/aria-invalid="true"/); // the form again, the field marked
    const embedded = await request(app.getHttpServer())
      .get(`/f/${form.publicId}?ref=%00`)
      .set('Accept', 'application/json');
    expect(expectError(embedded, 400, 'invalid_arguments').message).toMatch(/query string/);
    expectPage(await app.inject({ method: 'GET', url: `/f/${form.publicId}?ref=%00` }));
    expect((await db.query('SELECT count(*)::int AS n FROM responses WHERE form_id = $1', [form.id]))[0].n).toBe(0);
  });

  it('tool calls keep their order of checks (401 first) and refuse at the arguments step; MCP answers the isError result', async () => {
    const body = '{"title": "a\\u0000b"}';
    const anonymous = await callTool(app, undefined, 'create_form', undefined, {
      'Content-Type': 'application/json',
    }).send(body);
    expectError(anonymous, 401, 'unauthorized');
    const refused = await callTool(app, token, 'create_form', undefined, { 'Content-Type': 'application/json' }).send(
      body,
    );
    expect(expectError(refused, 400, 'invalid_arguments').details).toEqual([
      { path: '/title', message: expect.stringMatching(/well-formed text/) },
    ]);
    const mcp = await request(app.getHttpServer())
      .post('/mcp')
      .set('Authorization', `Bearer ${token}`)
      .set('Accept', 'application/json, text/event-stream')
      .set('Content-Type', 'application/json')
      .send(
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_form","arguments":{"title":"a\\udc00b"}}}`,
      );
    expect(mcp.status).toBe(200);
    expect(mcp.body.result.isError).toBe(true);
    expect(JSON.parse(mcp.body.result.content[0].text).error).toMatchObject({
      code: 'invalid_arguments',
      details: [{ path: '/title' }],
    });
    expect(
      (
        await db.query('SELECT count(*)::int AS n FROM forms WHERE workspace_id = $1 AND title LIKE $2', [ws.id, 'a%'])
      )[0].n,
    ).toBe(0);
  });

  it('leaves well-formed text alone: a pair of surrogates (an emoji), an escaped backslash before u0000', async () => {
    const created = await callTool(app, token, 'create_form', undefined, { 'Content-Type': 'application/json' }).send(
      '{"title": "\\ud83d\\ude00 \\\\u0000"}',
    );
    expect(created.status).toBe(200);
    expect(created.body.title).toBe('\u{1F600} \\u0000');
    const admin = await signedIn();
    const audit = await app.inject({
      method: 'GET',
      url: `/settings/w/${ws.slug}/audit?actor=%F0%9F%98%80`,
      headers: { cookie: admin.cookie },
    });
    expect(audit.statusCode).toBe(200);
  });
});

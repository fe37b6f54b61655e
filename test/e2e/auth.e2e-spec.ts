import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { TokensService } from '../../src/tokens/tokens.service';
import { generateToken } from '../../src/tokens/token-format';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

const METADATA = 'resource_metadata="http://formwork.test/.well-known/oauth-protected-resource/api/v1"';

describe('authentication', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;

  beforeAll(async () => {
    app = await createTestApp();
    ws = await createWorkspace(app);
  });
  afterAll(() => app.close());

  it('answers GET /api/v1 without a credential with 401 and a challenge naming the metadata, without an error attribute', async () => {
    const res = await request(app.getHttpServer()).get('/api/v1');
    expectError(res, 401, 'unauthorized');
    const challenge = res.headers['www-authenticate'];
    expect(challenge).toMatch(/^Bearer /);
    expect(challenge).toContain(METADATA);
    expect(challenge).not.toContain('error=');
  });

  it('answers an invalid token with 401 and error="invalid_token"', async () => {
    for (const bad of ['fw_nonsense', generateToken(), 'not-even-a-prefix', '']) {
      const res = await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${bad}`);
      expectError(res, 401, 'unauthorized');
      if (bad) expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
      expect(res.headers['www-authenticate']).toContain(METADATA);
    }
  });

  it('answers a malformed Authorization header with 401', async () => {
    for (const header of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer two tokens']) {
      const res = await request(app.getHttpServer()).get('/api/v1').set('Authorization', header);
      expectError(res, 401, 'unauthorized');
    }
  });

  it('says the scheme is missing or unsupported when a valid token is sent without "Bearer", never echoing it', async () => {
    const { token } = await createToken(app, ws);
    const cases: Array<[string, RegExp]> = [
      [token, /no scheme/],
      [`  ${token} `, /no scheme/],
      [`Token ${token}`, /scheme Formwork does not support/],
      [`Basic ${Buffer.from(`me:${token}`).toString('base64')}`, /scheme Formwork does not support/],
    ];
    for (const [header, message] of cases) {
      for (const path of ['/api/v1', '/mcp']) {
        const req = request(app.getHttpServer());
        const res = await (
          path === '/mcp'
            ? req
                .post(path)
                .set('Accept', 'application/json, text/event-stream')
                .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
            : req.get(path)
        ).set('Authorization', header);
        const error = expectError(res, 401, 'unauthorized');
        expect(error.message).toMatch(message);
        expect(error.hint).toContain('Authorization: Bearer fw_...');
        expect(JSON.stringify(res.body)).not.toContain(token);
        // RFC 6750 §3.1: an unsupported method is answered like no credential, without an error attribute.
        const challenge = res.headers['www-authenticate'];
        expect(challenge).toMatch(/^Bearer realm="formwork", resource_metadata="/);
        expect(challenge).not.toContain('error=');
      }
    }
    // The same token with the scheme works, and a malformed bearer header is still an invalid token.
    await request(app.getHttpServer()).get('/api/v1').set('Authorization', `bearer ${token}`).expect(200);
    const malformed = await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token} extra`);
    expect(expectError(malformed, 401, 'unauthorized').message).toBe('The access token is not valid.');
    expect(malformed.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('ignores a token in the query string or the body (RFC 6750 §2.1 only)', async () => {
    const { token } = await createToken(app, ws);
    const query = await request(app.getHttpServer()).get(`/api/v1?access_token=${token}`);
    expectError(query, 401, 'unauthorized');
    const body = await callTool(app, undefined, 'list_forms', { access_token: token });
    expectError(body, 401, 'unauthorized');
  });

  it('accepts a valid token and shows its workspace, role, scopes and callable tools', async () => {
    const { token, id } = await createToken(app, ws, { role: 'viewer', scopes: ['forms:read'] });
    const res = await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
    expect(res.body.workspace).toEqual({ id: ws.id, name: `Workspace ${ws.slug}`, slug: ws.slug, plan: 'pro' });
    expect(res.body.role).toBe('viewer');
    expect(res.body.scopes).toEqual(['forms:read']);
    expect(res.body.credential).toMatchObject({ type: 'api_token', id });
    // forms:read reads forms and their invitations (issue 47).
    expect(res.body.tools).toEqual(['list_forms', 'get_form', 'list_invites']);
    expect(JSON.stringify(res.body)).not.toContain(token);
  });

  it('refuses an expired token with a hint to create a new one', async () => {
    const { token } = await createToken(app, ws, { expiresAt: new Date(Date.now() + 1500) });
    expect((await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`)).status).toBe(
      200,
    );
    await new Promise((r) => setTimeout(r, 1600));
    const res = await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`);
    const error = expectError(res, 401, 'unauthorized');
    expect(error.message).toMatch(/expired/);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('stores only a hash of the token, records its last use, and never lists the secret', async () => {
    const { token, id } = await createToken(app, ws);
    const [row] = await app.get(DataSource).query('SELECT * FROM api_tokens WHERE id = $1', [id]);
    expect(JSON.stringify(row)).not.toContain(token.slice(3));
    expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.last_used_at).toBeNull();
    await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`).expect(200);
    await new Promise((r) => setTimeout(r, 200)); // last use is written off the request path
    const [after] = await app.get(DataSource).query('SELECT last_used_at FROM api_tokens WHERE id = $1', [id]);
    expect(after.last_used_at).toBeInstanceOf(Date);
    const listed = await app.get(TokensService).list(ws.slug);
    expect(JSON.stringify(listed)).not.toContain(token);
  });

  it('refuses a token revoked through another instance within 5 seconds, with no database lookup per request', async () => {
    const other = await createTestApp();
    try {
      const { token, id } = await createToken(app, ws);
      await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`).expect(200);
      await other.get(TokensService).revoke(id);
      // The revoking instance feels it at once.
      expectError(
        await request(other.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`),
        401,
        'unauthorized',
      );
      const started = Date.now();
      let status = 200;
      while (status === 200 && Date.now() - started < 6000) {
        status = (await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`)).status;
        if (status === 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(status).toBe(401);
      expect(Date.now() - started).toBeLessThanOrEqual(5000);
      const res = await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`);
      expect(res.body.error.message).toMatch(/revoked/);
    } finally {
      await other.close();
    }
  });

  it("caps a token's role by its creator's current role, and stops it when the creator leaves", async () => {
    const workspaces = app.get(WorkspacesService);
    const { user } = await workspaces.addMember(ws.slug, `admin-${ws.slug}@example.com`, 'admin');
    const { token } = await app
      .get(TokensService)
      .create({ workspaceSlug: ws.slug, name: 'by admin', role: 'admin', creatorUserId: user.id });
    const { token: cliToken } = await createToken(app, ws, { role: 'admin' });
    const me = () => request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`);
    expect((await me()).body.role).toBe('admin');

    await workspaces.addMember(ws.slug, user.email, 'viewer');
    await waitFor(async () => (await me()).body.role === 'viewer');

    await workspaces.removeMember(ws.slug, user.email);
    await waitFor(async () => (await me()).status === 401);
    expect((await me()).body.error.message).toMatch(/no longer has access/);
    // A token made by an operator at the CLI is not tied to a member.
    expect((await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${cliToken}`)).status).toBe(
      200,
    );
  });

  it('only lets an owner or admin create tokens, and never with a stronger role than theirs', async () => {
    const workspaces = app.get(WorkspacesService);
    const { user: editor } = await workspaces.addMember(ws.slug, `editor-${ws.slug}@example.com`, 'editor');
    const { user: admin } = await workspaces.addMember(ws.slug, `admin2-${ws.slug}@example.com`, 'admin');
    const tokens = app.get(TokensService);
    await expect(
      tokens.create({ workspaceSlug: ws.slug, name: 'x', role: 'viewer', creatorUserId: editor.id }),
    ).rejects.toMatchObject({ code: 'forbidden' });
    await expect(
      tokens.create({ workspaceSlug: ws.slug, name: 'x', role: 'owner', creatorUserId: admin.id }),
    ).rejects.toMatchObject({ code: 'forbidden' });
    await expect(
      tokens.create({ workspaceSlug: ws.slug, name: 'x', role: 'editor', creatorUserId: admin.id }),
    ).resolves.toHaveProperty('token');
  });

  it('serves the RFC 9728 protected resource metadata with the four scopes', async () => {
    for (const [path, resource] of [
      ['/.well-known/oauth-protected-resource/api/v1', 'http://formwork.test/api/v1'],
      ['/.well-known/oauth-protected-resource', 'http://formwork.test'],
    ]) {
      const res = await request(app.getHttpServer()).get(path);
      expect(res.status).toBe(200);
      expect(res.body.resource).toBe(resource);
      expect(res.body.scopes_supported).toEqual([
        'forms:read',
        'forms:write',
        'responses:read',
        'responses:write',
        'webhooks:read',
        'webhooks:write',
      ]);
      expect(res.body.bearer_methods_supported).toEqual(['header']);
    }
  });
});

async function waitFor(check: () => Promise<boolean>, ms = 5000) {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`not true within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

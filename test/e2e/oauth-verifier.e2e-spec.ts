import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { OAuthService } from '../../src/oauth/oauth.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createForm, createOAuthAccessToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/**
 * OAuth access tokens as credentials on the tools API. The authorization server (ESM-only) runs
 * in the built service and is tested in test/oauth; here the stored token rows are written
 * directly, as it writes them, to pin what the API does with them.
 */
describe('OAuth access tokens on the tools API', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let db: DataSource;
  const AUDIENCE = 'http://formwork.test/api/v1';

  beforeAll(async () => {
    app = await createTestApp();
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
  });
  afterAll(() => app.close());

  /** A grant for a member with a role, and one access token of it. */
  async function issue(opts: { role?: string; scope?: string; aud?: string; expiresIn?: number } = {}) {
    const email = `agent-user-${randomBytes(4).toString('hex')}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(ws.slug, email, (opts.role ?? 'editor') as never);
    const { token, grantId } = await createOAuthAccessToken(app, {
      workspaceId: ws.id,
      userId: user.id,
      aud: opts.aud ?? AUDIENCE,
      scope: opts.scope ?? 'forms:read forms:write',
      expiresIn: opts.expiresIn,
    });
    return { token, grantId, email };
  }
  const me = (token: string) => request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`);

  it("acts in the grant's workspace with the member's role and the granted scopes", async () => {
    const { token, grantId } = await issue({ role: 'editor' });
    const res = await me(token);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      workspace: { slug: ws.slug },
      role: 'editor',
      scopes: ['forms:read', 'forms:write'],
      credential: { type: 'oauth', id: grantId, name: 'Agent' },
    });
    expect((await callTool(app, token, 'create_form', { title: 'By an agent' })).status).toBe(200);
    expectError(
      await callTool(app, token, 'list_responses', { publicId: (await createForm(app, ws)).publicId }),
      403,
      'insufficient_scope',
    );
  });

  it('refuses a token issued for another audience (RFC 8707)', async () => {
    const { token } = await issue({ aud: 'https://elsewhere.example/api' });
    const res = await me(token);
    expectError(res, 401, 'unauthorized');
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('refuses an expired token and an unknown one', async () => {
    const { token } = await issue({ expiresIn: -10 });
    expectError(await me(token), 401, 'unauthorized');
    expectError(await me(randomBytes(32).toString('base64url')), 401, 'unauthorized');
  });

  it('follows the member: a demotion is felt and a removal stops the token, within 5 seconds', async () => {
    const { token, email } = await issue({ role: 'editor' });
    expect((await me(token)).body.role).toBe('editor');
    await app.get(WorkspacesService).addMember(ws.slug, email, 'viewer');
    await waitFor(async () => (await me(token)).body.role === 'viewer');
    expectError(await callTool(app, token, 'create_form', { title: 'No longer' }), 403, 'forbidden');
    await app.get(WorkspacesService).removeMember(ws.slug, email);
    await waitFor(async () => (await me(token)).status === 401);
  });

  it('stops every token of a revoked grant within 5 seconds', async () => {
    const { token, grantId } = await issue();
    expect((await me(token)).status).toBe(200);
    await app.get(OAuthService).revokeGrant(grantId);
    await waitFor(async () => (await me(token)).status === 401);
    const grants = await app.get(OAuthService).listGrants(ws.slug);
    expect(grants.find((g) => g.id === grantId)?.revokedAt).toEqual(expect.any(String));
    expect(JSON.stringify(grants)).not.toContain(token);
  });

  it('ends the grants of a client whose registration expired: the purge marks them revoked, and only them', async () => {
    const expired = await issue();
    const live = await issue();
    await db.query(`UPDATE oauth_grants SET client_id = $2 WHERE grant_id = $1`, [expired.grantId, 'client-expired']);
    await db.query(`UPDATE oauth_grants SET client_id = $2 WHERE grant_id = $1`, [live.grantId, 'client-live']);
    // Unused for 30 days (and the purge's hour of grace), and one still registered.
    await db.query(
      `INSERT INTO oauth_models (model, id, payload, expires_at) VALUES
         ('Client', 'client-expired', '{"client_id": "client-expired"}', now() - interval '2 hours'),
         ('Client', 'client-live', '{"client_id": "client-live"}', now() + interval '29 days')`,
    );
    expect(await app.get(OAuthService).purge()).toBeGreaterThanOrEqual(1);
    const grants = await app.get(OAuthService).listGrants(ws.slug);
    expect(grants.find((g) => g.id === expired.grantId)?.revokedAt).toEqual(expect.any(String));
    expect(grants.find((g) => g.id === live.grantId)?.revokedAt).toBeNull();
    const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM oauth_models WHERE model = 'Client' AND id = $1`, [
      'client-expired',
    ]);
    expect(n).toBe(0);
  });

  it('shares one rate budget per grant, whatever the token', async () => {
    const limited = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '3' });
    try {
      const { token, grantId } = await issue();
      const second = randomBytes(32).toString('base64url'); // as after a refresh: same grant, new token
      const [row] = await db.query(`SELECT payload, expires_at FROM oauth_models WHERE id = $1`, [token]);
      await db.query(
        `INSERT INTO oauth_models (model, id, payload, grant_id, expires_at) VALUES ('AccessToken', $1, $2::jsonb, $3, $4)`,
        [second, JSON.stringify({ ...row.payload, jti: second }), grantId, row.expires_at],
      );
      const statuses = [];
      for (const t of [token, token, second, second])
        statuses.push(
          (await request(limited.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${t}`)).status,
        );
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      await limited.close();
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

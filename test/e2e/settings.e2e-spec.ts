import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Role } from '../../src/common/access/roles';
import { OAuthService } from '../../src/oauth/oauth.service';
import { SessionsService } from '../../src/settings/sessions.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';

const PASSWORD = 'correct horse battery staple';

/** The settings pages over HTTP: who may do what, and what a changed id in a form post gets. */
describe('workspace settings: sessions and role checks', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let other: TestWorkspace;

  beforeAll(async () => {
    app = await createTestApp();
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    other = await createWorkspace(app, 'pro');
  });
  afterAll(() => app.close());

  /** A member with a role and a signed-in session: the cookie and the session's CSRF token. */
  async function signedIn(role: Role, workspace = ws) {
    const email = `${role}-${randomBytes(4).toString('hex')}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(workspace.slug, email, role);
    const cookie = await app.get(SessionsService).start(user.id);
    const { csrf } = (await app.get(SessionsService).find(cookie))!;
    return { email, userId: user.id, cookie: `fw_session=${cookie}`, csrf };
  }
  const get = (url: string, cookie?: string) => app.inject({ method: 'GET', url, headers: cookie ? { cookie } : {} });
  const post = (url: string, cookie: string, form: Record<string, string>) =>
    app.inject({
      method: 'POST',
      url,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(form).toString(),
    });

  it('sends a signed-out visitor to sign in, and back where they were going', async () => {
    const res = await get(`/settings/w/${ws.slug}/tokens`);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/settings/sign-in?next=${encodeURIComponent(`/settings/w/${ws.slug}/tokens`)}`);
    const page = await get(res.headers.location as string);
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body).not.toMatch(/<script>/);
  });

  it('signs in with a new session id (the old one stops working) and refuses a next URL off the site', async () => {
    const owner = await signedIn('editor');
    await app.get(OAuthService).setPassword(owner.email, PASSWORD);
    const form = await get('/settings/sign-in');
    const signin = String(form.headers['set-cookie']).split(';')[0];
    const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)![1];
    const res = await post('/settings/sign-in', `${signin}; ${owner.cookie}`, {
      csrf,
      email: owner.email,
      password: PASSWORD,
      next: 'https://evil.example/',
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/settings');
    const cookies = ([] as string[]).concat(res.headers['set-cookie'] as string[]);
    const session = cookies.find((c) => c.startsWith('fw_session='))!;
    expect(session).toMatch(/HttpOnly/);
    expect(session).toMatch(/SameSite=Lax/);
    expect(session).not.toMatch(/Secure/); // http here; https PUBLIC_URLs add it
    expect((await get('/settings', session.split(';')[0])).statusCode).toBe(200);
    expect((await get('/settings', owner.cookie)).statusCode).toBe(303); // the session it replaced
  });

  it("a password that works once (the demo owner's printed one) leads only to choosing a new one, in every workspace of the person", async () => {
    const person = await signedIn('owner');
    await app.get(WorkspacesService).addMember(other.slug, person.email, 'viewer');
    await app.get(OAuthService).setPassword(person.email, PASSWORD, 'unchanged', true);
    const form = await get('/settings/sign-in');
    const signed = await post('/settings/sign-in', String(form.headers['set-cookie']).split(';')[0], {
      csrf: /name="csrf" value="([^"]+)"/.exec(form.body)![1],
      email: person.email,
      password: PASSWORD,
      next: `/settings/w/${ws.slug}/tokens`,
    });
    expect(signed.statusCode).toBe(303);
    const once = ([] as string[])
      .concat(signed.headers['set-cookie'] as string[])
      .find((c) => c.startsWith('fw_session='))!
      .split(';')[0];
    const { csrf } = (await app.get(SessionsService).find(once.slice('fw_session='.length)))!;
    // Every page of either workspace, and every post, leads to choosing a password (and changes nothing).
    for (const path of ['/settings', `/settings/w/${ws.slug}/tokens`, `/settings/w/${other.slug}/apps`]) {
      const res = await get(path, once);
      expect({ path, status: res.statusCode, to: res.headers.location }).toEqual({
        path,
        status: 303,
        to: '/settings/account',
      });
    }
    const made = await post(`/settings/w/${ws.slug}/tokens`, once, { csrf, name: 'once', role: 'viewer' });
    expect(made.headers.location).toBe('/settings/account');
    const tokens = `SELECT count(*)::int AS n FROM api_tokens WHERE name = 'once'`;
    expect((await db.query(tokens))[0].n).toBe(0);
    const choose = await get('/settings/account', once);
    expect(choose.statusCode).toBe(200);
    expect(choose.body).toContain('Choose a new password');
    const same = await post('/settings/account/password', once, { csrf, current: PASSWORD, password: PASSWORD });
    expect(same.statusCode).toBe(400);
    expect(same.body).toContain('Choose a password other than the current one.');
    const chosen = await post('/settings/account/password', once, {
      csrf,
      current: PASSWORD,
      password: 'a passphrase of my own',
    });
    expect(chosen.statusCode).toBe(303);
    expect(chosen.headers.location).toBe('/settings?done=password-chosen');
    const flag = `SELECT password_must_change AS must FROM users WHERE id = $1`;
    expect((await db.query(flag, [person.userId]))[0].must).toBe(false);
    const session = String(chosen.headers['set-cookie']).split(';')[0];
    expect((await get(`/settings/w/${ws.slug}/tokens`, session)).statusCode).toBe(200);
    expect((await get(`/settings/w/${other.slug}/apps`, session)).statusCode).toBe(200);
    expect((await app.get(OAuthService).signIn(person.email, PASSWORD)).ok).toBe(false);
    expect(await app.get(OAuthService).signIn(person.email, 'a passphrase of my own')).toMatchObject({
      ok: true,
      mustChange: false,
    });
  });

  it('refuses a sign-in post without its CSRF token, even with the right password', async () => {
    const person = await signedIn('viewer');
    await app.get(OAuthService).setPassword(person.email, PASSWORD);
    const res = await app.inject({
      method: 'POST',
      url: '/settings/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ email: person.email, password: PASSWORD }).toString(),
    });
    expect(res.statusCode).toBe(403);
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it('signs out everywhere: every session of the person ends', async () => {
    const person = await signedIn('viewer');
    const second = `fw_session=${await app.get(SessionsService).start(person.userId)}`;
    const res = await post('/settings/sign-out', person.cookie, { csrf: person.csrf });
    expect(res.statusCode).toBe(303);
    expect((await get('/settings', person.cookie)).statusCode).toBe(303);
    expect((await get('/settings', second)).statusCode).toBe(303);
  });

  it('shows each section only to the roles it is for (403), and another workspace as not found (404)', async () => {
    const viewer = await signedIn('viewer');
    const admin = await signedIn('admin');
    const owner = await signedIn('owner');
    expect((await get(`/settings/w/${ws.slug}/tokens`, viewer.cookie)).statusCode).toBe(403);
    expect((await get(`/settings/w/${ws.slug}/members`, viewer.cookie)).statusCode).toBe(403);
    expect((await get(`/settings/w/${ws.slug}/audit`, viewer.cookie)).statusCode).toBe(403);
    expect((await get(`/settings/w/${ws.slug}/apps`, viewer.cookie)).statusCode).toBe(200);
    expect((await get(`/settings/w/${ws.slug}/plan`, admin.cookie)).statusCode).toBe(403);
    expect((await get(`/settings/w/${ws.slug}/tokens`, admin.cookie)).statusCode).toBe(200);
    expect((await get(`/settings/w/${ws.slug}/plan`, owner.cookie)).statusCode).toBe(200);
    expect((await get(`/settings/w/${other.slug}/apps`, owner.cookie)).statusCode).toBe(404);
    expect((await get(`/settings/w/no-such-workspace/apps`, owner.cookie)).statusCode).toBe(404);
    // A viewer's forged post is refused too, and creates nothing.
    const res = await post(`/settings/w/${ws.slug}/tokens`, viewer.cookie, {
      csrf: viewer.csrf,
      nonce: 'n'.repeat(30),
      name: 'x',
      role: 'viewer',
      scopes: 'forms:read',
      expiry: '30',
    });
    expect(res.statusCode).toBe(403);
    expect(
      (await db.query(`SELECT count(*)::int AS n FROM api_tokens WHERE workspace_id = $1 AND name = 'x'`, [ws.id]))[0]
        .n,
    ).toBe(0);
  });

  it("answers 404 to another workspace's token, member or app in a form post, and changes nothing there", async () => {
    const admin = await signedIn('admin');
    const foreign = await createToken(app, other, { role: 'viewer' });
    const foreignMember = await signedIn('editor', other);
    expect(
      (await post(`/settings/w/${ws.slug}/tokens/${foreign.id}/revoke`, admin.cookie, { csrf: admin.csrf })).statusCode,
    ).toBe(404);
    expect((await db.query('SELECT revoked_at FROM api_tokens WHERE id = $1', [foreign.id]))[0].revoked_at).toBeNull();
    expect(
      (
        await post(`/settings/w/${ws.slug}/members/${foreignMember.userId}/role`, admin.cookie, {
          csrf: admin.csrf,
          role: 'viewer',
        })
      ).statusCode,
    ).toBe(404);
    expect(
      (await post(`/settings/w/${ws.slug}/members/${foreignMember.userId}/remove`, admin.cookie, { csrf: admin.csrf }))
        .statusCode,
    ).toBe(404);
    expect(
      (await post(`/settings/w/${ws.slug}/members/${foreignMember.userId}/link`, admin.cookie, { csrf: admin.csrf }))
        .statusCode,
    ).toBe(404);
    expect(
      (
        await db.query('SELECT role FROM memberships WHERE workspace_id = $1 AND user_id = $2', [
          other.id,
          foreignMember.userId,
        ])
      )[0].role,
    ).toBe('editor');
    const grantId = randomBytes(16).toString('base64url');
    await app.get(OAuthService).recordGrant({
      grantId,
      workspaceId: other.id,
      userId: foreignMember.userId,
      clientId: 'c',
      clientName: 'App',
      scopes: ['forms:read'],
    });
    expect(
      (await post(`/settings/w/${ws.slug}/apps/${grantId}/disconnect`, admin.cookie, { csrf: admin.csrf })).statusCode,
    ).toBe(404);
    expect(
      (await db.query('SELECT revoked_at FROM oauth_grants WHERE grant_id = $1', [grantId]))[0].revoked_at,
    ).toBeNull();
    expect(
      (await post(`/settings/w/${ws.slug}/tokens/not-an-id/revoke`, admin.cookie, { csrf: admin.csrf })).statusCode,
    ).toBe(404);
  });

  it('lets only an owner grant or remove the owner role, and never demotes or removes the last owner', async () => {
    const solo = await createWorkspace(app, 'free');
    const admin = await signedIn('admin', solo);
    const ownerCookie = `fw_session=${await app.get(SessionsService).start(solo.ownerId)}`;
    const ownerCsrf = (await app.get(SessionsService).find(ownerCookie.slice('fw_session='.length)))!.csrf;
    const role = async (userId: string) =>
      (await db.query('SELECT role FROM memberships WHERE workspace_id = $1 AND user_id = $2', [solo.id, userId]))[0]
        ?.role;

    expect(
      (
        await post(`/settings/w/${solo.slug}/members`, admin.cookie, {
          csrf: admin.csrf,
          email: 'x-owner@example.com',
          role: 'owner',
        })
      ).statusCode,
    ).toBe(403);
    expect(
      (
        await post(`/settings/w/${solo.slug}/members/${admin.userId}/role`, admin.cookie, {
          csrf: admin.csrf,
          role: 'owner',
        })
      ).statusCode,
    ).toBe(403);
    expect(
      (
        await post(`/settings/w/${solo.slug}/members/${solo.ownerId}/role`, admin.cookie, {
          csrf: admin.csrf,
          role: 'viewer',
        })
      ).statusCode,
    ).toBe(403);
    expect(
      (await post(`/settings/w/${solo.slug}/members/${solo.ownerId}/remove`, admin.cookie, { csrf: admin.csrf }))
        .statusCode,
    ).toBe(403);
    expect(await role(solo.ownerId)).toBe('owner');
    expect(await role(admin.userId)).toBe('admin');

    // The last owner: neither demoted nor removed, even by themselves.
    expect(
      (
        await post(`/settings/w/${solo.slug}/members/${solo.ownerId}/role`, ownerCookie, {
          csrf: ownerCsrf,
          role: 'admin',
        })
      ).statusCode,
    ).toBe(403);
    expect(
      (await post(`/settings/w/${solo.slug}/members/${solo.ownerId}/remove`, ownerCookie, { csrf: ownerCsrf }))
        .statusCode,
    ).toBe(403);
    expect(await role(solo.ownerId)).toBe('owner');
    // With a second owner, the first may step down.
    expect(
      (
        await post(`/settings/w/${solo.slug}/members/${admin.userId}/role`, ownerCookie, {
          csrf: ownerCsrf,
          role: 'owner',
        })
      ).statusCode,
    ).toBe(303);
    expect(
      (
        await post(`/settings/w/${solo.slug}/members/${solo.ownerId}/role`, ownerCookie, {
          csrf: ownerCsrf,
          role: 'admin',
        })
      ).statusCode,
    ).toBe(303);
    expect(await role(solo.ownerId)).toBe('admin');
    const actions = (
      await db.query('SELECT action FROM audit_events WHERE workspace_id = $1 ORDER BY at', [solo.id])
    ).map((r: { action: string }) => r.action);
    expect(actions).toEqual(['member.role', 'member.role']);
  });

  it('records a plan switch and refuses a bad embed origin next to its field', async () => {
    const owner = await signedIn('owner');
    expect(
      (await post(`/settings/w/${ws.slug}/plan`, owner.cookie, { csrf: owner.csrf, plan: 'free' })).statusCode,
    ).toBe(303);
    expect((await db.query('SELECT plan FROM workspaces WHERE id = $1', [ws.id]))[0].plan).toBe('free');
    const [event] = await db.query(
      `SELECT actor_kind, actor_user_id, details, request_id FROM audit_events WHERE workspace_id = $1 AND action = 'workspace.plan'`,
      [ws.id],
    );
    expect(event).toMatchObject({
      actor_kind: 'session',
      actor_user_id: owner.userId,
      details: { from: 'pro', to: 'free' },
    });
    expect(event.request_id).toEqual(expect.any(String));
    await post(`/settings/w/${ws.slug}/plan`, owner.cookie, { csrf: owner.csrf, plan: 'pro' });

    const bad = await post(`/settings/w/${ws.slug}/embed-origins`, owner.cookie, {
      csrf: owner.csrf,
      origins: 'javascript:alert(1)',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('id="origins-error"');
    expect(bad.body).not.toContain('<script>alert');
    expect(
      (
        await post(`/settings/w/${ws.slug}/embed-origins`, owner.cookie, {
          csrf: owner.csrf,
          origins: 'https://www.example.com',
        })
      ).statusCode,
    ).toBe(303);
    expect((await db.query('SELECT embed_origins FROM workspaces WHERE id = $1', [ws.id]))[0].embed_origins).toEqual([
      'https://www.example.com',
    ]);
  });

  it('pages and filters the audit log by action and by actor', async () => {
    const owner = await signedIn('owner');
    const res = await get(`/settings/w/${ws.slug}/audit?action=workspace.plan`, owner.cookie);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('workspace.plan');
    expect(res.body).not.toContain('<td>workspace.embed_origins</td>');
    const none = await get(`/settings/w/${ws.slug}/audit?actor=${owner.userId}&page=abc`, owner.cookie);
    expect(none.statusCode).toBe(200);
    expect(none.body).toContain('No events.');
  });

  it('changes a password only with the current one', async () => {
    const person = await signedIn('viewer');
    await app.get(OAuthService).setPassword(person.email, PASSWORD);
    const wrong = await post('/settings/account/password', person.cookie, {
      csrf: person.csrf,
      current: 'not it at all',
      password: 'a brand new passphrase',
    });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.body).toContain('id="current-error"');
    expect((await app.get(OAuthService).signIn(person.email, PASSWORD)).ok).toBe(true);
    const ok = await post('/settings/account/password', person.cookie, {
      csrf: person.csrf,
      current: PASSWORD,
      password: 'a brand new passphrase',
    });
    expect(ok.statusCode).toBe(200);
    expect((await app.get(OAuthService).signIn(person.email, 'a brand new passphrase')).ok).toBe(true);
  });

  it('refuses an expired or used set-password link', async () => {
    const person = await signedIn('viewer');
    const token = await app.get(SessionsService).passwordLink(person.userId, null);
    await db.query(`UPDATE password_links SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [
      person.userId,
    ]);
    expect((await get(`/settings/set-password/${token}`)).statusCode).toBe(404);
    const fresh = await app.get(SessionsService).passwordLink(person.userId, null);
    const set = await app.inject({
      method: 'POST',
      url: `/settings/set-password/${fresh}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `password=${encodeURIComponent(PASSWORD)}`,
    });
    expect(set.statusCode).toBe(303);
    const again = await app.inject({
      method: 'POST',
      url: `/settings/set-password/${fresh}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'password=another+long+password',
    });
    expect(again.statusCode).toBe(404);
    expect((await app.get(OAuthService).signIn(person.email, PASSWORD)).ok).toBe(true);
  });
});

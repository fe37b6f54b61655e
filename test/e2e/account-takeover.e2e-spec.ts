import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { runCli } from '../../src/cli/cli';
import { Role } from '../../src/common/access/roles';
import { OAuthService } from '../../src/oauth/oauth.service';
import { SessionsService } from '../../src/settings/sessions.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createOAuthAccessToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp, testDatabaseUrl } from '../utils/create-test-app';

const PASSWORD = 'correct horse battery staple';
const unique = () => randomBytes(4).toString('hex');

/**
 * Issue 23, 3.1: an admin of one workspace must never be able to set the password of a person who
 * exists outside it (PASSWORD_BINDING in src/settings/settings.service.ts): neither by taking over
 * another workspace's member, nor by pre-setting the password of an email another workspace
 * invites later.
 */
describe('set-password links cannot take over a person of another workspace', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let a: TestWorkspace;
  let b: TestWorkspace;

  beforeAll(async () => {
    app = await createTestApp();
    db = app.get(DataSource);
    a = await createWorkspace(app, 'pro');
    b = await createWorkspace(app, 'pro');
  });
  afterAll(() => app.close());

  const get = (url: string, cookie?: string) => app.inject({ method: 'GET', url, headers: cookie ? { cookie } : {} });
  const post = (url: string, cookie: string | undefined, form: Record<string, string>) =>
    app.inject({
      method: 'POST',
      url,
      headers: { ...(cookie ? { cookie } : {}), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(form).toString(),
    });
  const cli = async (argv: string[], stdin?: string) => {
    const out = await runCli(
      argv,
      { DATABASE_URL: testDatabaseUrl(), NODE_ENV: 'test' },
      stdin === undefined ? {} : { readStdin: async () => stdin },
    );
    return { ...out, json: argv.includes('--json') ? JSON.parse(out.stdout) : undefined };
  };

  /** A member with a role and a signed-in settings session (made directly, as the operator would). */
  async function signedIn(role: Role, workspace: TestWorkspace) {
    const email = `${role}-${unique()}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(workspace.slug, email, role);
    const cookie = await app.get(SessionsService).start(user.id);
    const { csrf } = (await app.get(SessionsService).find(cookie))!;
    return { email, userId: user.id, cookie: `fw_session=${cookie}`, csrf };
  }

  /** Signs in on the settings sign-in page; the session cookie, or undefined when refused. */
  async function signIn(email: string, password: string): Promise<string | undefined> {
    const form = await get('/settings/sign-in');
    const signin = String(form.headers['set-cookie']).split(';')[0];
    const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)![1];
    const res = await post('/settings/sign-in', signin, { csrf, email, password, next: '/settings' });
    if (res.statusCode !== 303) return undefined;
    const cookies = ([] as string[]).concat(res.headers['set-cookie'] as string[]);
    return cookies.find((c) => c.startsWith('fw_session='))!.split(';')[0];
  }

  /** Adds `email` on workspace `ws`'s members page as `admin`; the response, and the link shown if any. */
  async function addOnPage(admin: { cookie: string; csrf: string }, ws: TestWorkspace, email: string, role = 'owner') {
    const res = await post(`/settings/w/${ws.slug}/members`, admin.cookie, { csrf: admin.csrf, email, role });
    if (res.statusCode !== 303) return { res, token: undefined };
    expect(res.headers.location).toBe(`/settings/w/${ws.slug}/members/link`);
    const page = await get(res.headers.location as string, admin.cookie);
    return { res, token: /\/settings\/set-password\/([A-Za-z0-9_-]{43})/.exec(page.body)![1] };
  }

  async function usePasswordLink(token: string, password = PASSWORD) {
    const res = await post(`/settings/set-password/${token}`, undefined, { password });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/settings/sign-in?done=1');
  }

  const user = async (email: string) =>
    (
      await db.query(
        `SELECT id, password_hash AS "hash", password_workspace_id AS "boundTo" FROM users WHERE email = $1`,
        [email],
      )
    )[0] as { id: string; hash: string | null; boundTo: string | null };
  const linksOf = async (userId: string) =>
    (await db.query(`SELECT count(*)::int AS n FROM password_links WHERE user_id = $1`, [userId]))[0].n as number;
  const liveLinksOf = async (userId: string) =>
    (
      await db.query(`SELECT count(*)::int AS n FROM password_links WHERE user_id = $1 AND used_at IS NULL`, [userId])
    )[0].n as number;
  const memberOf = async (ws: TestWorkspace, userId: string) =>
    (await db.query(`SELECT role FROM memberships WHERE workspace_id = $1 AND user_id = $2`, [ws.id, userId]))[0]
      ?.role as string | undefined;

  it("refuses A's admin a link for B's owner (who has a password): the password and the links stay as they were", async () => {
    const ownerEmail = `owner-${b.slug}@example.com`;
    await app.get(OAuthService).setPassword(ownerEmail, PASSWORD, null);
    const before = await user(ownerEmail);
    const admin = await signedIn('admin', a);

    const added = await addOnPage(admin, a, ownerEmail, 'editor');
    expect(added.res.statusCode).toBe(200);
    expect(added.res.body).toContain('They already have a password and can sign in.');

    // The members page offers no link for them, and a forged post is refused.
    const page = (await get(`/settings/w/${a.slug}/members`, admin.cookie)).body;
    expect(page).toContain(ownerEmail);
    expect(page).not.toContain(`/members/${b.ownerId}/link`);
    const res = await post(`/settings/w/${a.slug}/members/${b.ownerId}/link`, admin.cookie, { csrf: admin.csrf });
    expect(res.statusCode).toBe(403);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toContain(
      `${ownerEmail} also belongs to another workspace, so an admin here cannot set their password`,
    );
    expect(res.body).toContain('user set-password');
    expect(await linksOf(b.ownerId)).toBe(0);
    expect(await user(ownerEmail)).toEqual(before);
    expect(
      (
        await db.query(
          `SELECT count(*)::int AS n FROM audit_events WHERE action = 'member.password_link' AND subject_id = $1`,
          [b.ownerId],
        )
      )[0].n,
    ).toBe(0);
    expect((await app.get(OAuthService).signIn(ownerEmail, PASSWORD)).ok).toBe(true);
  });

  it("gives A's admin no link for a person with no password who belongs to B, on adding or later", async () => {
    const other = await createWorkspace(app, 'pro'); // its owner has no password yet
    const ownerEmail = `owner-${other.slug}@example.com`;
    const admin = await signedIn('admin', a);

    const added = await addOnPage(admin, a, ownerEmail, 'viewer');
    expect(added.res.statusCode).toBe(200);
    expect(added.token).toBeUndefined();
    expect(added.res.body).toContain('also belong to another workspace, so no set-password link is shown here');
    expect(await memberOf(a, other.ownerId)).toBe('viewer'); // added, without a link

    const res = await post(`/settings/w/${a.slug}/members/${other.ownerId}/link`, admin.cookie, { csrf: admin.csrf });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain('also belongs to another workspace');
    expect(await linksOf(other.ownerId)).toBe(0);
    expect((await user(ownerEmail)).hash).toBeNull();
  });

  it("binds a password set through A's link to A, and B's settings page then refuses to add the person", async () => {
    const x = `x-${unique()}@example.com`;
    const adminA = await signedIn('admin', a);
    const adminB = await signedIn('owner', b);

    // A adds a new person and is shown a link (A's admin uses it: they choose x's password).
    const added = await addOnPage(adminA, a, x, 'viewer');
    expect(added.res.statusCode).toBe(303);
    expect(
      (await db.query(`SELECT workspace_id FROM password_links WHERE user_id = $1`, [(await user(x)).id]))[0],
    ).toEqual({ workspace_id: a.id });
    await usePasswordLink(added.token!);
    const person = await user(x);
    expect(person.boundTo).toBe(a.id);

    // B's admin invites x later: refused, nothing added.
    const res = await post(`/settings/w/${b.slug}/members`, adminB.cookie, {
      csrf: adminB.csrf,
      email: x,
      role: 'owner',
    });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain(
      `${x}&#x27;s password was set through a link from another workspace&#x27;s admin, who may know it.`,
    );
    expect(await memberOf(b, person.id)).toBeUndefined();
    expect(await liveLinksOf(person.id)).toBe(0);
  });

  it('keeps a bound password out of other workspaces even when the operator adds the person there', async () => {
    const x = `x-${unique()}@example.com`;
    const adminA = await signedIn('admin', a);
    const added = await addOnPage(adminA, a, x, 'viewer');
    await usePasswordLink(added.token!);
    const person = await user(x);

    // The operator's `member add` adds x to B as owner, with a warning.
    const cliAdd = await cli(['member', 'add', '--workspace', b.slug, '--email', x, '--role', 'owner', '--json']);
    expect(cliAdd.code).toBe(0);
    expect(cliAdd.json).toMatchObject({ workspace: b.slug, role: 'owner' });
    expect(cliAdd.json.warning).toContain("password was set through a link from another workspace's admin");
    const text = await cli(['member', 'add', '--workspace', b.slug, '--email', x, '--role', 'owner']);
    expect(text.code).toBe(0);
    expect(text.stderr).toMatch(/^warning: .*does not act in/);
    const own = await cli([
      'workspace',
      'create',
      '--name',
      'X',
      '--slug',
      `x-${unique()}`,
      '--plan',
      'free',
      '--owner-email',
      x,
      '--json',
    ]);
    expect(own.code).toBe(0);
    expect(own.json.setPasswordLink).toBeNull();
    expect(own.json.warning).toContain('does not act in');
    expect(await memberOf(b, person.id)).toBe('owner');

    // Whoever knows the password (A's admin) signs in as x: A only, never B.
    const cookie = (await signIn(x, PASSWORD))!;
    expect(cookie).toBeDefined();
    expect((await get(`/settings/w/${a.slug}/apps`, cookie)).statusCode).toBe(200);
    expect((await get(`/settings/w/${b.slug}/apps`, cookie)).statusCode).toBe(404);
    expect((await get(`/settings/w/${b.slug}/members`, cookie)).statusCode).toBe(404);
    const home = await get('/settings', cookie);
    expect(home.body).toContain(a.slug);
    expect(home.body).not.toContain(b.slug);
    // The consent page's workspace choice (the authorization server's sign-in) offers A only.
    expect((await app.get(OAuthService).workspacesOf(person.id)).map((w) => w.slug)).toEqual([a.slug]);
    // And an OAuth grant for B (say, made before the binding) acts nowhere.
    const token = await accessToken(person.id, b);
    const me = await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`);
    expect(me.status).toBe(401);
    // B's members page says why x cannot sign in there.
    const adminB = await signedIn('owner', b);
    expect((await get(`/settings/w/${b.slug}/members`, adminB.cookie)).body).toContain(
      'through another workspace&#x27;s link: not usable here',
    );
  });

  it("lets the operator's `user set-password` lift the binding (signing out whoever held the old one); then B can add the person", async () => {
    const x = `x-${unique()}@example.com`;
    const adminA = await signedIn('admin', a);
    const added = await addOnPage(adminA, a, x, 'viewer');
    await usePasswordLink(added.token!);
    const held = (await signIn(x, PASSWORD))!; // A's admin, signed in as x
    expect((await get('/settings', held)).statusCode).toBe(200);

    const set = await cli(
      ['user', 'set-password', '--email', x, '--password-stdin', '--json'],
      'the real owner of x chose this\n',
    );
    expect(set.code).toBe(0);
    expect(set.json).toMatchObject({ passwordSet: true });
    expect((await user(x)).boundTo).toBeNull();
    expect((await get('/settings', held)).statusCode).toBe(303); // signed out: the session would now reach B
    expect(await signIn(x, PASSWORD)).toBeUndefined();

    const adminB = await signedIn('owner', b);
    const res = await post(`/settings/w/${b.slug}/members`, adminB.cookie, {
      csrf: adminB.csrf,
      email: x,
      role: 'editor',
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('They already have a password and can sign in.');
    const cookie = (await signIn(x, 'the real owner of x chose this'))!;
    expect((await get(`/settings/w/${b.slug}/apps`, cookie)).statusCode).toBe(200);
    expect((await get(`/settings/w/${a.slug}/apps`, cookie)).statusCode).toBe(200);
  });

  it('still gives a new person a link that lets them sign in; their own workspace may send a new one', async () => {
    const y = `y-${unique()}@example.com`;
    const adminA = await signedIn('admin', a);
    const added = await addOnPage(adminA, a, y, 'editor');
    expect(added.res.statusCode).toBe(303);
    await usePasswordLink(added.token!);
    const cookie = (await signIn(y, PASSWORD))!;
    expect(cookie).toBeDefined();
    expect((await get(`/settings/w/${a.slug}/apps`, cookie)).statusCode).toBe(200);
    const person = await user(y);
    expect(person.boundTo).toBe(a.id);

    // Lost it: A's admin may send a new link (the password acts only in A, which A's admins could already set).
    expect((await get(`/settings/w/${a.slug}/members`, adminA.cookie)).body).toContain(`/members/${person.id}/link`);
    const again = await post(`/settings/w/${a.slug}/members/${person.id}/link`, adminA.cookie, { csrf: adminA.csrf });
    expect(again.statusCode).toBe(303);
    expect(
      await db.query(`SELECT workspace_id FROM password_links WHERE user_id = $1 AND used_at IS NULL`, [person.id]),
    ).toEqual([{ workspace_id: a.id }]);
    // Changing it on the account page keeps it bound to A.
    const changed = await post('/settings/account/password', cookie, {
      csrf: (await app.get(SessionsService).find(cookie.split('=')[1]))!.csrf,
      current: PASSWORD,
      password: 'a brand new passphrase',
    });
    expect(changed.statusCode).toBe(200);
    expect((await user(y)).boundTo).toBe(a.id);

    // A member of A alone whose password the operator set: A's admin cannot reset it.
    const own = await signedIn('viewer', a);
    await app.get(OAuthService).setPassword(own.email, PASSWORD, null);
    const refused = await post(`/settings/w/${a.slug}/members/${own.userId}/link`, adminA.cookie, {
      csrf: adminA.csrf,
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toContain(`${own.email} already has a password of their own`);
    expect(await linksOf(own.userId)).toBe(0);
  });

  it("prints the CLI's owner link with no workspace: the password set with it acts everywhere", async () => {
    const slug = `cli-${unique()}`;
    const email = `boss-${unique()}@example.com`;
    const created = await cli([
      'workspace',
      'create',
      '--name',
      'C',
      '--slug',
      slug,
      '--plan',
      'free',
      '--owner-email',
      email,
      '--json',
    ]);
    expect(created.code).toBe(0);
    const owner = await user(email);
    expect(await db.query(`SELECT workspace_id FROM password_links WHERE user_id = $1`, [owner.id])).toEqual([
      { workspace_id: null },
    ]);
    await usePasswordLink(/set-password\/([A-Za-z0-9_-]{43})$/.exec(created.json.setPasswordLink as string)![1]);
    expect((await user(email)).boundTo).toBeNull();
  });

  it('clears the passwords bound to a deleted workspace and signs those people out', async () => {
    const w = await createWorkspace(app, 'pro');
    const adminW = await signedIn('admin', w);
    const z = `z-${unique()}@example.com`;
    const added = await addOnPage(adminW, w, z, 'viewer');
    await usePasswordLink(added.token!);
    const person = await user(z);
    await app.get(WorkspacesService).addMember(b.slug, z, 'viewer'); // the operator, meanwhile
    const held = (await signIn(z, PASSWORD))!;
    const pending = await app.get(SessionsService).passwordLink(person.id, w.id);

    await db.query(`DELETE FROM workspaces WHERE id = $1`, [w.id]);

    expect(await user(z)).toEqual({ id: person.id, hash: null, boundTo: null });
    expect((await get(`/settings/w/${b.slug}/apps`, held)).statusCode).toBe(303); // signed out, not let into B
    expect((await get(`/settings/set-password/${pending}`)).statusCode).toBe(404); // the link went with W
    expect(await memberOf(b, person.id)).toBe('viewer');
  });

  /** An OAuth access token of a grant in `ws` for the person, stored as the authorization server stores it. */
  async function accessToken(userId: string, ws: TestWorkspace): Promise<string> {
    return (await createOAuthAccessToken(app, { workspaceId: ws.id, userId })).token;
  }
});

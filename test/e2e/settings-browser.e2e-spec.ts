import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdirSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Browser, Page } from 'playwright-core';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { OAuthService } from '../../src/oauth/oauth.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createForm, createOAuthAccessToken, createWorkspace, TestWorkspace } from '../factories';
import { axeProblems, launchChromium } from '../utils/browser';
import { waitUntil } from '../utils/cluster';
import { createAppOn, isolatedDatabaseUrl, WebhookReceiver } from '../utils/webhooks';

jest.setTimeout(120_000); // a browser on a shared, slow machine
const PASSWORD = 'correct horse battery staple';
const RESULTS = join(__dirname, '..', '..', 'test-results'); // git-ignored
/** Waits until `check` holds, polling (the 5-second promise of revocation is a bound, not a timing under test). */
async function eventually(check: () => Promise<boolean>, ms = 8000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return check();
}

describe('workspace settings in a real browser (Debian chromium)', () => {
  let app: NestFastifyApplication;
  let browser: Browser;
  let base: string;
  let ws: TestWorkspace;
  let receiver: WebhookReceiver;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    // A schema of its own, delivering to a local receiver (as webhooks.e2e-spec): the Webhooks page's log shows real attempts.
    const isolated = await isolatedDatabaseUrl('browser');
    drop = isolated.drop;
    app = await createAppOn(isolated.url, { WEBHOOKS_ALLOW_PRIVATE_URLS: 'true' });
    receiver = await WebhookReceiver.start();
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchChromium();
    ws = await createWorkspace(app, 'pro');
    await app.get(OAuthService).setPassword(`owner-${ws.slug}@example.com`, PASSWORD);
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await receiver?.down();
    await drop?.();
  });

  async function member(role: 'viewer' | 'editor' | 'admin' | 'owner') {
    const email = `${role}-${randomBytes(4).toString('hex')}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(ws.slug, email, role);
    await app.get(OAuthService).setPassword(email, PASSWORD);
    return { email, id: user.id };
  }

  async function signIn(email: string, path = '/settings'): Promise<Page> {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${base}${path}`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForLoadState();
    return page;
  }
  /**
   * Every page the tests show: no serious or critical axe-core violation, and screenshots at a
   * desktop width and a 390 px wide phone (test-results/, looked at by people, not compared).
   */
  async function shot(page: Page, name: string) {
    expect({ page: name, problems: await axeProblems(page) }).toEqual({ page: name, problems: [] });
    await page.screenshot({ path: join(RESULTS, `settings-${name}.png`), fullPage: true });
    const desktop = page.viewportSize();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(RESULTS, `settings-${name}-390.png`), fullPage: true });
    // Nothing scrolls sideways on a phone: not the page, not a table (whose rows are cards there).
    const overflow = await page.evaluate(() => ({
      page: Math.max(0, document.documentElement.scrollWidth - window.innerWidth),
      regions: Array.from(document.querySelectorAll('.scroll'))
        .filter((e) => e.scrollWidth > e.clientWidth)
        .map((e) => e.getAttribute('aria-label')),
    }));
    if (desktop) await page.setViewportSize(desktop);
    expect({ page: name, overflow }).toEqual({ page: name, overflow: { page: 0, regions: [] } });
  }
  const me = (token: string) => request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`);

  it('an owner signs in, creates a viewer token shown once, uses it, and revokes it', async () => {
    const page = await (await browser.newContext()).newPage();
    const res = await page.goto(`${base}/settings/w/${ws.slug}/tokens`);
    expect(page.url()).toContain('/settings/sign-in?next=');
    expect(res!.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res!.headers()['content-security-policy']).not.toContain("unsafe-inline'; script");
    await shot(page, 'sign-in');
    // A wrong password: the error next to the field and in the focused summary.
    await page.getByLabel('Email').fill(`owner-${ws.slug}@example.com`);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.evaluate('document.activeElement.id')).toBe('errors');
    await shot(page, 'sign-in-error');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'API tokens' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/settings/w/${ws.slug}/tokens`); // back where they were going

    await page.getByLabel('Name').fill('Nightly export');
    await page.getByLabel('Role').selectOption('viewer');
    await page.getByLabel('forms:read').check();
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByRole('heading', { name: 'Token created' }).waitFor();
    const secret = (await page.locator('#secret').textContent())!.trim();
    expect(await page.getByRole('button', { name: 'Copy' }).isVisible()).toBe(true); // the script file ran
    await shot(page, 'token-created');
    expect((await me(secret)).status).toBe(200);
    expect((await me(secret)).body).toMatchObject({ role: 'viewer', scopes: ['forms:read'] });

    // Reloading never shows it again, and going back does not re-create the token.
    const reload = await page.reload();
    expect(reload!.headers()['cache-control']).toBe('no-store');
    expect(await page.content()).not.toContain(secret);
    await page.getByRole('heading', { name: 'Secret no longer shown' }).waitFor();
    const db = app.get(DataSource);
    const count = async () =>
      (await db.query('SELECT count(*)::int AS n FROM api_tokens WHERE workspace_id = $1', [ws.id]))[0].n;
    expect(await count()).toBe(1);

    await page.goto(`${base}/settings/w/${ws.slug}/tokens`);
    await shot(page, 'tokens');
    expect(await page.locator('tbody tr').count()).toBe(1);
    expect(await page.locator('tbody').textContent()).toContain(`owner-${ws.slug}@example.com`);
    await page.getByRole('link', { name: /Revoke/ }).click();
    await shot(page, 'token-revoke-confirm');
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('heading', { name: 'API tokens' }).waitFor();
    // The notice of the change, after the redirect.
    expect(await page.getByRole('status').textContent()).toContain('Token revoked.');
    await shot(page, 'token-revoked');
    expect(await eventually(async () => (await me(secret)).status === 401, 5000)).toBe(true);

    // Audit log: the settings actions, newest first, by the person.
    await page.goto(`${base}/settings/w/${ws.slug}/audit`);
    await shot(page, 'audit');
    const actions = await page.locator('tbody tr td:nth-child(3)').allTextContents();
    expect(actions.slice(0, 2)).toEqual(['token.revoke', 'token.create']);

    // Sign out ends the session: the settings ask to sign in again.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.goto(`${base}/settings/w/${ws.slug}/tokens`);
    expect(page.url()).toContain('/settings/sign-in');
  });

  it('a re-submitted token form creates nothing', async () => {
    const page = await signIn(`owner-${ws.slug}@example.com`, `/settings/w/${ws.slug}/tokens`);
    const db = app.get(DataSource);
    const before = (await db.query('SELECT count(*)::int AS n FROM api_tokens WHERE workspace_id = $1', [ws.id]))[0].n;
    const form = page.locator('form[action$="/tokens"]');
    const fields = Object.fromEntries(
      await form
        .locator('input[type=hidden]')
        .evaluateAll((els) => (els as unknown as Array<{ name: string; value: string }>).map((e) => [e.name, e.value])),
    ) as Record<string, string>;
    const post = () =>
      page.request.post(`${base}/settings/w/${ws.slug}/tokens`, {
        form: { ...fields, name: 'Twice', role: 'viewer', scopes: 'forms:read', expiry: '30' },
        maxRedirects: 0,
      });
    expect((await post()).status()).toBe(303);
    expect((await post()).status()).toBe(303);
    expect((await db.query('SELECT count(*)::int AS n FROM api_tokens WHERE workspace_id = $1', [ws.id]))[0].n).toBe(
      before + 1,
    );
  });

  it('an admin cannot create an owner-role token; a viewer gets a 403 page for tokens', async () => {
    const admin = await member('admin');
    const page = await signIn(admin.email, `/settings/w/${ws.slug}/tokens`);
    expect(await page.getByLabel('Role').locator('option').allTextContents()).not.toContain(
      expect.stringContaining('owner'),
    );
    const csrf = await page.locator('input[name=csrf]').first().inputValue();
    const nonce = await page.locator('input[name=nonce]').inputValue();
    const forged = await page.request.post(`${base}/settings/w/${ws.slug}/tokens`, {
      form: { csrf, nonce, name: 'Sneaky', role: 'owner', scopes: 'forms:read', expiry: '30' },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    expect(
      (await app.get(DataSource).query(`SELECT count(*)::int AS n FROM api_tokens WHERE name = 'Sneaky'`))[0].n,
    ).toBe(0);

    const viewer = await member('viewer');
    const vpage = await signIn(viewer.email);
    const res = await vpage.goto(`${base}/settings/w/${ws.slug}/tokens`);
    expect(res!.status()).toBe(403);
    await vpage.getByRole('heading', { name: 'Not allowed' }).waitFor();
    await shot(vpage, 'forbidden');
    await vpage.goto(`${base}/settings`);
    await shot(vpage, 'home');
  });

  it('a new member follows the one-time link, sets a password and signs in', async () => {
    const page = await signIn(`owner-${ws.slug}@example.com`, `/settings/w/${ws.slug}/members`);
    const email = `new-${randomBytes(4).toString('hex')}@example.com`;
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Role', { exact: true }).selectOption('editor');
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.getByRole('heading', { name: 'Set-password link' }).waitFor();
    const link = (await page.locator('#secret').textContent())!.trim().replace('http://formwork.test', base);
    await shot(page, 'member-link');
    await page.goto(`${base}/settings/w/${ws.slug}/members`);
    await shot(page, 'members');
    expect(await page.locator('tbody').textContent()).toContain(email);

    const fresh = await (await browser.newContext()).newPage();
    await fresh.goto(link);
    await shot(fresh, 'set-password');
    await fresh.getByLabel('Password').fill('short');
    await fresh.getByRole('button', { name: 'Set password' }).click();
    await fresh.getByRole('alert').waitFor();
    await fresh.getByLabel('Password').fill(PASSWORD);
    await fresh.getByRole('button', { name: 'Set password' }).click();
    await fresh.getByRole('heading', { name: 'Sign in to Formwork' }).waitFor();
    await fresh.getByLabel('Email').fill(email);
    await fresh.getByLabel('Password').fill(PASSWORD);
    await fresh.getByRole('button', { name: 'Sign in' }).click();
    await fresh.getByRole('heading', { name: 'Your workspaces' }).waitFor();
    // The link works once.
    expect((await fresh.goto(link))!.status()).toBe(404);
  });

  it('a person disconnects an app and its token is refused within 5 seconds', async () => {
    const person = await member('editor');
    const { token } = await createOAuthAccessToken(app, {
      workspaceId: ws.id,
      userId: person.id,
      clientName: 'Agent Smith',
    });
    expect((await me(token)).status).toBe(200);
    const page = await signIn(person.email, `/settings/w/${ws.slug}/apps`);
    await page.getByRole('heading', { name: 'Connected apps' }).waitFor();
    await shot(page, 'apps');
    // Disconnect asks first, like Revoke; Cancel changes nothing.
    await page.getByRole('link', { name: /Disconnect/ }).click();
    await page.getByRole('heading', { name: 'Disconnect Agent Smith?' }).waitFor();
    await shot(page, 'app-disconnect-confirm');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.getByRole('heading', { name: 'Connected apps' }).waitFor();
    expect((await me(token)).status).toBe(200);
    await page.getByRole('link', { name: /Disconnect/ }).click();
    await page.getByRole('button', { name: 'Disconnect' }).click();
    await page.getByText('No connected apps.').waitFor();
    expect(await page.getByRole('status').textContent()).toContain('App disconnected.');
    expect(await eventually(async () => (await me(token)).status === 401, 5000)).toBe(true);
  });

  it('a post without the CSRF token changes nothing', async () => {
    const page = await signIn(`owner-${ws.slug}@example.com`, `/settings/w/${ws.slug}/plan`);
    await shot(page, 'plan');
    const res = await page.request.post(`${base}/settings/w/${ws.slug}/plan`, {
      form: { plan: 'free' },
      maxRedirects: 0,
    });
    expect(res.status()).toBe(403);
    expect((await app.get(DataSource).query('SELECT plan FROM workspaces WHERE id = $1', [ws.id]))[0].plan).toBe('pro');
    await page.goto(`${base}/settings/account`);
    await shot(page, 'account');
  });

  it('an admin creates a webhook endpoint, copies its secret once, sends a test event and reads the delivery log', async () => {
    await createForm(app, ws, { title: 'Customer feedback' });
    const page = await signIn(`owner-${ws.slug}@example.com`, `/settings/w/${ws.slug}/webhooks`);
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
    expect(await page.getByRole('link', { name: 'Webhooks' }).getAttribute('aria-current')).toBe('page');
    // Nothing chosen: the error by the field and in the focused summary.
    await page.getByLabel('URL').fill(receiver.url('/browser'));
    await page.getByLabel('response.created').uncheck();
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.evaluate('document.activeElement.id')).toBe('errors');
    await page.getByLabel('response.created').check();
    await page.getByLabel('form.published').check();
    await page.getByLabel('Description (optional)').fill('CRM sync');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.getByRole('heading', { name: 'Endpoint created' }).waitFor();
    const secret = (await page.locator('#secret').textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);
    expect(await page.getByRole('button', { name: 'Copy' }).isVisible()).toBe(true);
    await shot(page, 'webhook-created');
    receiver.setSecrets('/browser', [secret]);
    await page.reload();
    await page.getByRole('heading', { name: 'Secret no longer shown' }).waitFor();

    await page.goto(`${base}/settings/w/${ws.slug}/webhooks`);
    expect(await page.locator('tbody tr').count()).toBe(1);
    await shot(page, 'webhooks');
    await page.getByRole('link', { name: /^Deliveries/ }).click();
    await page.getByRole('heading', { name: 'Webhook endpoint' }).waitFor();
    await page.getByLabel('Event').selectOption('response.created');
    await page.getByRole('button', { name: 'Send test event' }).click();
    await waitUntil(async () => receiver.for('/browser').length === 1, 20_000, 'the test event');
    expect(receiver.for('/browser')[0].verifiedBy).toEqual([secret]);
    await waitUntil(
      async () => {
        await page.reload();
        return (await page.locator('tbody ol li').count()) === 1;
      },
      20_000,
      'the attempt in the log',
    );
    expect(await page.locator('tbody ol li').textContent()).toMatch(/answered 200 in \d+ ms/);
    await shot(page, 'webhook-deliveries');
    await page.getByRole('button', { name: /^Redeliver/ }).click();
    await waitUntil(async () => receiver.for('/browser').length === 2, 20_000, 'the redelivery');
    expect(receiver.for('/browser')[1].id).toBe(receiver.for('/browser')[0].id);

    await page.getByRole('link', { name: 'Rotate secret' }).click();
    await shot(page, 'webhook-rotate-confirm');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('heading', { name: 'Secret rotated' }).waitFor();
    expect(await page.getByText('keeps signing beside this one for 24 hours').isVisible()).toBe(true);
    expect((await page.locator('#secret').textContent())!.trim()).not.toBe(secret);
  });

  it('names holding markup or a javascript: URL are shown as text on every settings page that shows them', async () => {
    const payloads = [
      '<script>window.__xss=1</script>',
      '"><img src=x onerror="window.__xss=1">',
      'javascript:window.__xss=1',
    ];
    const page = await signIn(`owner-${ws.slug}@example.com`, `/settings/w/${ws.slug}/tokens`);
    const dialogs: string[] = [];
    page.on('dialog', (d) => void dialogs.push(d.message()));
    const csrf = await page.locator('input[name=csrf]').first().inputValue();
    const nonceOf = async (path: string) => {
      await page.goto(`${base}${path}`);
      return page.locator('input[name=nonce]').inputValue();
    };
    const post = async (path: string, form: Record<string, string>) =>
      expect((await page.request.post(`${base}${path}`, { form: { csrf, ...form }, maxRedirects: 0 })).status()).toBe(
        303,
      );
    const w = `/settings/w/${ws.slug}`;
    const db = app.get(DataSource);
    const owner = (await db.query('SELECT id FROM users WHERE email = $1', [`owner-${ws.slug}@example.com`]))[0].id;
    for (const [i, p] of payloads.entries()) {
      const form = { name: `token ${p}`, role: 'viewer', scopes: 'forms:read', expiry: '30' };
      await post(`${w}/tokens`, { ...form, nonce: await nonceOf(`${w}/tokens`) });
      const hook = { url: receiver.url(`/xss-${i}`), events: 'form.published', description: `hook ${p}` };
      await post(`${w}/webhooks`, { ...hook, nonce: await nonceOf(`${w}/webhooks`) });
      await post(`${w}/members`, { email: `${p.replace(/\s/g, '')}@example.com`, role: 'viewer' });
      await createOAuthAccessToken(app, { workspaceId: ws.id, userId: owner, clientName: `app ${p}` });
    }
    const ids = async (sql: string): Promise<string[]> =>
      (await db.query(sql, [ws.id])).map((r: { id: string }) => r.id);
    const tokenIds = await ids(`SELECT id FROM api_tokens WHERE workspace_id = $1 AND name LIKE 'token %'`);
    const hookIds = await ids(`SELECT id FROM webhook_endpoints WHERE workspace_id = $1 AND description LIKE 'hook %'`);
    const memberIds = await ids(
      `SELECT m.user_id AS id FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND u.email LIKE '%@example.com' AND (u.email LIKE '%<%' OR u.email LIKE 'javascript:%')`,
    );
    const grantIds = await ids(
      `SELECT grant_id AS id FROM oauth_grants WHERE workspace_id = $1 AND client_name LIKE 'app %'`,
    );
    expect([tokenIds.length, hookIds.length, memberIds.length, grantIds.length]).toEqual([3, 3, 3, 3]);

    const pages: Array<[path: string, shows: string[]]> = [
      [`${w}/tokens`, payloads.map((p) => `token ${p}`)],
      ...tokenIds.map((id): [string, string[]] => [`${w}/tokens/${id}/revoke`, ['token ']]),
      [`${w}/webhooks`, payloads.map((p) => `hook ${p}`)],
      ...hookIds.flatMap((id): Array<[string, string[]]> => [
        [`${w}/webhooks/${id}`, ['hook ']],
        [`${w}/webhooks/${id}/delete`, []],
      ]),
      [`${w}/members`, payloads.map((p) => `${p.replace(/\s/g, '')}@example.com`)],
      ...memberIds.map((id): [string, string[]] => [`${w}/members/${id}/remove`, ['@example.com']]),
      [`${w}/apps`, payloads.map((p) => `app ${p}`)],
      ...grantIds.map((id): [string, string[]] => [`${w}/apps/${encodeURIComponent(id)}/disconnect`, ['app ']]),
      [`${w}/audit`, []],
    ];
    for (const [path, shows] of pages) {
      const res = await page.goto(`${base}${path}`);
      expect({ path, status: res!.status() }).toEqual({ path, status: 200 });
      const text = (await page.locator('main').textContent()) ?? '';
      for (const s of shows) expect({ path, shown: text.includes(s) }).toEqual({ path, shown: true });
      // Shown as text: nothing the names hold became an element, a handler or a link.
      const injected = await page.evaluate(() => ({
        scripts: document.querySelectorAll('main script, main img').length,
        handlers: document.querySelectorAll('[onerror]').length,
        javascriptLinks: document.querySelectorAll('a[href^="javascript" i]').length,
        ran: (window as unknown as { __xss?: number }).__xss ?? 0,
      }));
      expect({ path, injected }).toEqual({ path, injected: { scripts: 0, handlers: 0, javascriptLinks: 0, ran: 0 } });
    }
    // Every payload reached some page whole, as text (the audit log names the tokens and apps too).
    await page.goto(`${base}${w}/tokens`);
    for (const p of payloads) expect(await page.getByRole('cell', { name: `token ${p}`, exact: true }).count()).toBe(1);
    expect(dialogs).toEqual([]);
    await shot(page, 'tokens-hostile-names');
    await page.goto(`${base}${w}/webhooks`);
    await shot(page, 'webhooks-hostile-names');
    await page.goto(`${base}${w}/members`);
    await shot(page, 'members-hostile-names');
    await page.goto(`${base}${w}/apps`);
    await shot(page, 'apps-hostile-names');
  });
});

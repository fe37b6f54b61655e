/**
 * Sign-in and consent in a real browser (Debian's chromium through playwright-core), against the
 * BUILT service on a fresh PostgreSQL database. The client is a tiny local web server (its
 * redirect URI) and oauth4webapi; the person is the browser.
 * Run: npm run --silent build && node --test test/oauth/
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright-core';
import {
  api,
  authorizationUrl,
  callTool,
  discover,
  ensureBuilt,
  exchangeCode,
  registerClient,
  seededDatabase,
  startInstance,
} from './support.mjs';

const CHROMIUM = '/usr/bin/chromium';
/** Screenshots, git-ignored: look at them after a change to the pages. */
const RESULTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-results');
mkdirSync(RESULTS, { recursive: true });
const OWNER = 'grace@acme.test';
const PASSWORD = 'a long enough password';

describe('sign-in and consent in a real browser (Debian chromium)', { timeout: 180_000 }, () => {
  let db;
  let instance;
  let browser;
  let callbackServer;
  let redirectUri;
  const callbacks = []; // what the client's redirect URI received
  const posted = []; // what it received by POST (response_mode=form_post)

  before(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `This test drives Debian's Chromium at ${CHROMIUM}, which is missing: install it with "apt-get install -y chromium" (.ci/run does).`,
      );
    }
    ensureBuilt();
    db = await seededDatabase('browser', {
      workspaces: [
        { name: 'Acme', slug: 'acme', plan: 'pro', ownerEmail: OWNER },
        { name: 'Lab', slug: 'lab', plan: 'pro', ownerEmail: OWNER },
      ],
      passwords: { [OWNER]: `${PASSWORD}\n` },
    });
    instance = await startInstance(db.url);

    // The client's redirect URI: a local web server that keeps what it receives.
    callbackServer = http.createServer(async (req, res) => {
      const url = new URL(req.url, redirectUri);
      if (url.pathname !== '/callback') return res.writeHead(404).end(); // the browser also asks for /favicon.ico
      if (req.method === 'POST') {
        // response_mode=form_post: the parameters come in the body.
        let body = '';
        for await (const chunk of req) body += chunk;
        posted.push(new URL(`?${body}`, redirectUri));
      } else {
        callbacks.push(url);
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>Connected</title><h1>You can close this window</h1>');
    });
    await new Promise((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    redirectUri = `http://127.0.0.1:${callbackServer.address().port}/callback`;

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => (callbackServer ? callbackServer.close(resolve) : resolve()));
    await instance?.stop();
    await db?.drop();
  });

  test('a person signs in, picks a workspace and allows; the client gets a code it exchanges for a working token', async () => {
    const { as, resource } = await discover(instance.base);
    const client = await registerClient(as, { redirectUri, name: 'Browser test app' });
    const request = await authorizationUrl(as, client, {
      redirectUri,
      scopes: ['forms:read', 'forms:write'],
      resource,
    });

    const page = await browser.newPage();
    try {
      await page.goto(request.url.href);

      // A wrong password first: the page says so and the person can try again.
      await page.getByLabel('Email').fill(OWNER);
      await page.getByLabel('Password').fill('not my password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('Email or password is wrong').waitFor();
      // The error box holds its message with no empty line above it: the same inset above as below.
      const box = await page.getByRole('alert').boundingBox();
      const message = await page.getByRole('alert').locator('p').boundingBox();
      assert.ok(Math.abs(message.y - box.y - (box.y + box.height - message.y - message.height)) < 2, 'error box inset');
      await page.screenshot({ path: join(RESULTS, 'oauth-sign-in-error.png'), fullPage: true });

      await page.getByLabel('Email').fill(OWNER);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();

      // The consent page: who asks, for what, in which workspace.
      await page.getByRole('button', { name: 'Allow' }).waitFor();
      const text = await page.locator('body').innerText();
      assert.ok(text.includes('Browser test app'), 'the consent page names the client');
      assert.ok(text.includes('See your forms'));
      assert.ok(text.includes('Create, change, publish and delete forms'));
      assert.ok(!text.includes('See responses'), 'only the requested scopes');
      assert.ok(await page.getByRole('button', { name: 'Deny' }).isVisible());
      const radios = page.locator('input[type="radio"][name="workspace"]');
      assert.equal(await radios.count(), 2);
      assert.ok(await radios.first().isChecked(), 'the first workspace is chosen by default');
      // Allow and Deny side by side with a gap; each radio centred on its label's first line.
      const allow = await page.getByRole('button', { name: 'Allow' }).boundingBox();
      const deny = await page.getByRole('button', { name: 'Deny' }).boundingBox();
      assert.ok(
        Math.abs(allow.y - deny.y) < 1 && deny.x >= allow.x + allow.width + 8,
        'Allow and Deny in one row, apart',
      );
      for (const option of await page.locator('label.option').all()) {
        const radio = await option.locator('input').boundingBox();
        const label = await option.locator('span').first().boundingBox();
        assert.ok(
          Math.abs(radio.y + radio.height / 2 - (label.y + label.height / 2)) < 2,
          'radio centred on its label',
        );
      }
      await page.screenshot({ path: join(RESULTS, 'oauth-consent.png'), fullPage: true });
      await page.locator('input[type="radio"][name="workspace"][value="lab"]').check();
      await page.getByRole('button', { name: 'Allow' }).click();

      await page.waitForURL((url) => url.href.startsWith(redirectUri));
      await page.getByRole('heading', { name: 'You can close this window' }).waitFor();
    } finally {
      await page.close();
    }

    assert.equal(callbacks.length, 1, 'the redirect URI was called once');
    const tokens = await exchangeCode(as, client, { ...request, callback: callbacks[0] }, { redirectUri, resource });
    assert.deepEqual(tokens.scope.split(' ').sort(), ['forms:read', 'forms:write']);

    const me = await api(instance.base, tokens.access_token, 'GET', '/api/v1');
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.workspace.slug, 'lab', 'the token acts in the workspace picked in the browser');
    assert.equal(me.body.role, 'owner');
    const created = await callTool(instance.base, tokens.access_token, 'create_form', {
      title: 'Made from the browser grant',
    });
    assert.equal(created.status, 200, created.text);
    const list = await callTool(instance.base, tokens.access_token, 'list_forms');
    assert.deepEqual(
      list.body.forms.map((f) => f.title),
      ['Made from the browser grant'],
    );
  });

  test('Deny sends the person back to the app with access_denied and grants nothing', async () => {
    const { as, resource } = await discover(instance.base);
    const client = await registerClient(as, { redirectUri, name: 'Denied test app' });
    const request = await authorizationUrl(as, client, { redirectUri, scopes: ['forms:read'], resource });
    const page = await browser.newPage();
    const before = callbacks.length;
    try {
      await page.goto(request.url.href);
      await page.getByLabel('Email').fill(OWNER);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Deny' }).click();
      await page.waitForURL((url) => url.href.startsWith(redirectUri));
    } finally {
      await page.close();
    }
    assert.equal(callbacks.length, before + 1);
    assert.equal(callbacks.at(-1).searchParams.get('error'), 'access_denied');
    assert.equal(callbacks.at(-1).searchParams.get('code'), null);
  });

  test('one sign-in serves the settings and the consent page; disconnecting in the settings stops the token; signing out ends both', async () => {
    const { as, resource } = await discover(instance.base);
    const client = await registerClient(as, { redirectUri, name: 'Settings test app' });
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`${instance.base}/settings`);
      await page.getByLabel('Email').fill(OWNER);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Your workspaces' }).waitFor();

      // Signed in to the settings: the authorization goes straight to the consent page.
      const request = await authorizationUrl(as, client, { redirectUri, scopes: ['forms:read'], resource });
      await page.goto(request.url.href);
      await page.getByRole('button', { name: 'Allow' }).waitFor();
      await page.locator('input[type="radio"][name="workspace"][value="acme"]').check();
      const before = callbacks.length;
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL((url) => url.href.startsWith(redirectUri));
      const tokens = await exchangeCode(
        as,
        client,
        { ...request, callback: callbacks[before] },
        { redirectUri, resource },
      );
      assert.equal((await api(instance.base, tokens.access_token, 'GET', '/api/v1')).status, 200);

      // The app is listed in the settings; Disconnect stops its token within 5 seconds.
      await page.goto(`${instance.base}/settings/w/acme/apps`);
      await page.getByRole('cell', { name: 'Settings test app', exact: true }).waitFor();
      // Disconnect asks first (the settings' confirmation step), then says it was done.
      await page.getByRole('link', { name: /Disconnect/ }).click();
      await page.getByRole('button', { name: 'Disconnect' }).click();
      await page.getByText('No connected apps.').waitFor();
      await page.getByText('App disconnected.').waitFor();
      let status = 0;
      for (const end = Date.now() + 5000; Date.now() < end; await new Promise((r) => setTimeout(r, 250))) {
        status = (await api(instance.base, tokens.access_token, 'GET', '/api/v1')).status;
        if (status === 401) break;
      }
      assert.equal(status, 401);

      // The workspace's audit log shows the consent (who, which app, which grant) and the disconnect.
      await page.goto(`${instance.base}/settings/w/acme/audit`);
      const rows = await page.locator('tbody tr').allInnerTexts();
      const connect = rows.find((r) => r.includes('app.connect'));
      assert.ok(connect, `an app.connect row in ${JSON.stringify(rows)}`);
      assert.ok(connect.includes(OWNER), 'the consent names who gave it');
      const grantId = connect.split('\t')[3];
      assert.ok(
        rows.some((r) => r.includes('app.disconnect') && r.includes(grantId)),
        'the disconnect of the same grant',
      );

      // Sign out: the next authorization asks to sign in again.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in to Formwork' }).waitFor();
      const again = await authorizationUrl(as, client, { redirectUri, scopes: ['forms:read'], resource });
      await page.goto(again.url.href);
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      assert.ok(await page.getByLabel('Password').isVisible());
    } finally {
      await context.close();
    }
  });

  test('response_mode=form_post: the auto-submitting page runs under the strict CSP and posts the code to the client', async () => {
    const { as, resource } = await discover(instance.base);
    const client = await registerClient(as, { redirectUri, name: 'Form post app' });
    const request = await authorizationUrl(as, client, {
      redirectUri,
      scopes: ['forms:read'],
      resource,
      extra: { response_mode: 'form_post' },
    });
    const page = await browser.newPage();
    const violations = [];
    page.on(
      'console',
      (m) => /Content Security Policy|Content-Security-Policy/i.test(m.text()) && violations.push(m.text()),
    );
    try {
      await page.goto(request.url.href);
      await page.getByLabel('Email').fill(OWNER);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL((url) => url.href.startsWith(redirectUri));
      await page.getByRole('heading', { name: 'You can close this window' }).waitFor();
    } finally {
      await page.close();
    }
    assert.deepEqual(violations, [], 'no CSP violation or warning');
    assert.equal(posted.length, 1, 'the code was posted to the redirect URI');
    const tokens = await exchangeCode(as, client, { ...request, callback: posted[0] }, { redirectUri, resource });
    assert.equal((await callTool(instance.base, tokens.access_token, 'list_forms')).status, 200);
  });
});

import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SCOPES } from '../../src/common/access/roles';
import { callToolAt, ensureBuilt, httpRequest, Instance } from '../utils/cluster';
import { WebhookReceiver } from '../utils/webhooks';

/**
 * A newcomer's first hour on the README's own default start: the built service (`npm start`) with
 * no DATABASE_URL, so on the embedded PostgreSQL, whose one session every pooled connection shares.
 * Signs in with the printed password, makes a token on the settings page and adds a member there,
 * then builds a form and reads its answers with that token, and runs a webhook's whole life (the
 * test event from the tool and from the page's button). Each step must answer; before the
 * transaction rule (src/database/transaction.ts) the token step froze the whole service.
 */
describe('the first hour on the embedded database (npm start, no DATABASE_URL)', () => {
  let dir: string;
  let instance: Instance;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    ensureBuilt();
    receiver = await WebhookReceiver.start();
    dir = mkdtempSync(join(tmpdir(), 'formwork-first-hour-'));
    instance = await Instance.start(
      'first-hour',
      // Private webhook URLs only because the test's receiver is on loopback.
      { DATA_DIR: dir, NODE_ENV: 'development', LOG_LEVEL: 'warn', WEBHOOKS_ALLOW_PRIVATE_URLS: 'true' },
      90_000,
    );
    const until = Date.now() + 30_000;
    while (!instance.lines.some((l) => /password: \S+/.test(l)) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50));
  }, 150_000);

  afterAll(async () => {
    await instance?.stop();
    await receiver?.down();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A browser-like request: form posts, cookies kept by the caller, redirects not followed. */
  function page(path: string, cookie: string, form?: Record<string, string> | URLSearchParams) {
    const body = form ? new URLSearchParams(form).toString() : undefined;
    return new Promise<{ status: number; location?: string; cookies: string[]; text: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: instance.port,
          path,
          method: form ? 'POST' : 'GET',
          headers: {
            cookie,
            ...(body
              ? { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) }
              : {}),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c) => (text += c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              location: res.headers.location,
              cookies: (res.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]),
              text,
            }),
          );
        },
      );
      req.setTimeout(15_000, () => req.destroy(new Error(`${path} did not answer within 15 s`)));
      req.on('error', reject);
      if (body) req.write(body);
      req.end();
    });
  }
  const field = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(html)?.[1] ?? '';

  it('answers every step, from the printed password to a deleted webhook', async () => {
    const printed = instance.lines.join('\n');
    const email = /email: (\S+)/.exec(printed)![1];
    const password = /password: (\S+)/.exec(printed)![1];

    // Sign in with the printed password.
    const signIn = async (withPassword: string) => {
      const signInForm = await page('/settings/sign-in', '');
      return page('/settings/sign-in', signInForm.cookies.join('; '), {
        csrf: field(signInForm.text, 'csrf'),
        email,
        password: withPassword,
        next: '/settings',
      });
    };
    const signedIn = await signIn(password);
    expect(signedIn.status).toBe(303);
    const once = signedIn.cookies.find((c) => c.startsWith('fw_session='))!;
    expect(once).toBeDefined();

    // The printed password works once: every page and post leads to choosing a new one first.
    for (const path of ['/settings', '/settings/w/demo/tokens', '/settings/w/demo/forms'])
      expect(await page(path, once)).toMatchObject({ status: 303, location: '/settings/account' });
    const choose = await page('/settings/account', once);
    expect(choose.status).toBe(200);
    expect(choose.text).toContain('Choose a new password');
    const sneaked = await page('/settings/w/demo/tokens', once, { csrf: field(choose.text, 'csrf'), name: 'x' });
    expect(sneaked).toMatchObject({ status: 303, location: '/settings/account' });
    const same = await page('/settings/account/password', once, {
      csrf: field(choose.text, 'csrf'),
      current: password,
      password,
    });
    expect(same.status).toBe(400); // the printed password again is no new password
    const mine = 'my own first-hour passphrase';
    const chosen = await page('/settings/account/password', once, {
      csrf: field(choose.text, 'csrf'),
      current: password,
      password: mine,
    });
    expect(chosen).toMatchObject({ status: 303, location: '/settings?done=password-chosen' });
    const session = chosen.cookies.find((c) => c.startsWith('fw_session='))!;
    expect((await page(chosen.location!, session)).text).toContain('the printed one no longer works');
    expect((await page('/settings', once)).location).toMatch(/^\/settings\/sign-in/); // signed out
    expect((await signIn(password)).status).toBe(401);
    expect((await signIn(mine)).status).toBe(303);

    // Create an API token on the settings page: the step that froze the embedded database.
    const tokens = await page('/settings/w/demo/tokens', session);
    expect(tokens.status).toBe(200);
    const form = new URLSearchParams({
      csrf: field(tokens.text, 'csrf'),
      nonce: field(tokens.text, 'nonce'),
      name: 'first hour',
      role: 'admin',
      expiry: '30',
    });
    for (const scope of SCOPES) form.append('scopes', scope);
    const created = await page('/settings/w/demo/tokens', session, form);
    expect(created.status).toBe(303);
    const token = /fw_[A-Za-z0-9_]+/.exec((await page(created.location!, session)).text)?.[0];
    expect(token).toBeDefined();
    const tool = (name: string, args: unknown) => callToolAt(instance.port, token!, name, args);
    expect((await tool('list_forms', {})).status).toBe(200);

    // Add a member on the settings page: a new person gets a set-password link.
    const members = await page('/settings/w/demo/members', session);
    const added = await page('/settings/w/demo/members', session, {
      csrf: field(members.text, 'csrf'),
      email: 'grace@example.com',
      role: 'editor',
    });
    expect(added.status).toBe(303);
    expect((await page(added.location!, session)).text).toContain('/settings/set-password/');

    // The results pages, where the README's first session leads: the demo's feedback form
    // filtered by its hidden field (where people came from), on Responses and on the Summary.
    const forms = await page('/settings/w/demo/forms', session);
    const feedback = /href="\/settings\/w\/demo\/forms\/([^"/?]+)">Customer feedback</.exec(forms.text)![1];
    const segment = 'block=hidden%3Asource&op=equals&value=newsletter';
    for (const tab of ['/responses', '']) {
      const filtered = await page(`/settings/w/demo/forms/${feedback}${tab}?${segment}`, session);
      expect(filtered.status).toBe(200);
      expect(filtered.text).toContain('52 responses match');
    }

    // Create, edit and publish a form; submit, list and summarize its answers.
    const made = await tool('create_form', {
      title: 'First hour',
      blocks: [{ type: 'short_text', title: 'Name', required: true }],
    });
    expect(made.status).toBe(200);
    const { publicId } = made.json;
    const edited = await tool('update_form', { publicId, title: 'First hour, edited' });
    expect(edited.status).toBe(200);
    expect((await tool('publish_form', { publicId })).status).toBe(200);
    const blockId = (await tool('get_form', { publicId })).json.blocks[0].id;
    const submitted = await tool('create_response', { publicId, answers: { [blockId]: 'Ada' } });
    expect(submitted.status).toBe(200);
    const listed = await tool('list_responses', { publicId });
    expect(listed.status).toBe(200);
    expect(listed.json.total).toBe(1);
    const summary = await tool('summarize_responses', { publicId });
    expect(summary.status).toBe(200);
    expect(summary.json.total).toBe(1);

    // A webhook's whole life: create, a test event (tool and button), rotate, delete.
    const hook = await tool('create_webhook', { url: receiver.url('/first-hour'), events: ['response.created'] });
    expect(hook.status).toBe(200);
    const test = await tool('send_test_webhook', { webhookId: hook.json.id, publicId });
    expect(test.status).toBe(200);
    const hookPage = await page(`/settings/w/demo/webhooks/${hook.json.id}`, session);
    expect(hookPage.status).toBe(200);
    const button = await page(`/settings/w/demo/webhooks/${hook.json.id}/test`, session, {
      csrf: field(hookPage.text, 'csrf'),
      event: 'response.created',
    });
    expect(button.status).toBe(303);
    expect((await tool('rotate_webhook_secret', { webhookId: hook.json.id })).status).toBe(200);
    expect((await tool('delete_webhook', { webhookId: hook.json.id })).status).toBe(200);

    // The service is still whole.
    expect((await httpRequest(instance.port, '/readyz')).status).toBe(200);
    expect((await tool('list_forms', {})).status).toBe(200);
  }, 120_000);
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Role } from '../../src/common/access/roles';
import { SessionsService } from '../../src/settings/sessions.service';
import { WebhookSecretBox } from '../../src/webhooks/secret-box';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createForm, createWorkspace, TestWorkspace } from '../factories';
import { waitUntil } from '../utils/cluster';
import { createAppOn, isolatedDatabaseUrl, WebhookReceiver } from '../utils/webhooks';

/**
 * The settings Webhooks page over HTTP: each action does what the webhook tool does (stored rows,
 * audit records naming the person), with the tools' rules (admin, Pro for writes, the tools'
 * messages), and another workspace's endpoint or delivery is not found. The app delivers to a
 * local receiver (verified with `standardwebhooks`), on a schema of its own as in webhooks.e2e-spec.
 */
describe('settings: the Webhooks page', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let drop: () => Promise<void>;
  let receiver: WebhookReceiver;
  let ws: TestWorkspace;
  let other: TestWorkspace;

  beforeAll(async () => {
    const isolated = await isolatedDatabaseUrl('hookpage');
    drop = isolated.drop;
    app = await createAppOn(isolated.url, { WEBHOOKS_ALLOW_PRIVATE_URLS: 'true', WEBHOOKS_RETRY_BASE_MS: '100' });
    await app.init();
    db = app.get(DataSource);
    receiver = await WebhookReceiver.start();
    ws = await createWorkspace(app, 'pro');
    other = await createWorkspace(app, 'pro');
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await receiver?.down();
    await drop?.();
  }, 30_000);

  async function signedIn(role: Role, workspace = ws) {
    const email = `${role}-${randomBytes(4).toString('hex')}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(workspace.slug, email, role);
    const cookie = await app.get(SessionsService).start(user.id);
    const { csrf } = (await app.get(SessionsService).find(cookie))!;
    return { email, userId: user.id, cookie: `fw_session=${cookie}`, csrf };
  }
  const get = (url: string, cookie: string) => app.inject({ method: 'GET', url, headers: { cookie } });
  const post = (url: string, cookie: string, form: Array<[string, string]> | Record<string, string>) =>
    app.inject({
      method: 'POST',
      url,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(form).toString(),
    });
  const nonceIn = (html: string) => /name="nonce" value="([^"]+)"/.exec(html)![1];
  const secretIn = (html: string) => /id="secret">(whsec_[^<]+)</.exec(html)?.[1];
  /** The stored endpoints, their secrets opened (they are stored sealed, never as shown: see webhook-secrets.e2e-spec). */
  const endpoints = async (workspaceId: string) => {
    const box = app.get(WebhookSecretBox);
    const rows = await db.query(
      'SELECT id, url, events, enabled, description, secret, previous_secret FROM webhook_endpoints WHERE workspace_id = $1 ORDER BY created_at',
      [workspaceId],
    );
    for (const row of rows) expect(`${row.secret} ${row.previous_secret}`).not.toContain('whsec_');
    return rows.map((row: { secret: string; previous_secret: string | null }) => ({
      ...row,
      secret: box.open(row.secret),
      previous_secret: row.previous_secret && box.open(row.previous_secret),
    }));
  };
  const audit = (workspaceId: string, action: string) =>
    db.query(
      'SELECT subject_id, actor_kind, actor_id, actor_user_id FROM audit_events WHERE workspace_id = $1 AND action = $2 ORDER BY at',
      [workspaceId, action],
    );

  /** Creates an endpoint through the page; its id and secret, as shown once. */
  async function createThroughPage(
    person: { cookie: string; csrf: string },
    path: string,
    events = ['response.created', 'form.created'],
    workspace = ws,
  ) {
    const base = `/settings/w/${workspace.slug}/webhooks`;
    const page = await get(base, person.cookie);
    const res = await post(base, person.cookie, [
      ['csrf', person.csrf],
      ['nonce', nonceIn(page.body)],
      ['url', receiver.url(path)],
      ...events.map((e): [string, string] => ['events', e]),
      ['description', `page ${path}`],
    ]);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`${base}/secret`);
    const shown = await get(`${base}/secret`, person.cookie);
    const secret = secretIn(shown.body)!;
    expect(secret).toMatch(/^whsec_/);
    receiver.setSecrets(path, [secret]);
    const [row] = (await endpoints(workspace.id)).filter((e: { url: string }) => e.url === receiver.url(path));
    return { id: row.id as string, secret };
  }

  it('creates an endpoint, shows its secret once, and records who did it', async () => {
    const admin = await signedIn('admin');
    const base = `/settings/w/${ws.slug}/webhooks`;
    const list = await get(base, admin.cookie);
    expect(list.statusCode).toBe(200);
    expect(list.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(list.body).toContain('<h1>Webhooks</h1>');
    expect(list.body).toContain(`href="${base}" aria-current="page"`);

    const page = await get(base, admin.cookie);
    const nonce = nonceIn(page.body);
    const form: Array<[string, string]> = [
      ['csrf', admin.csrf],
      ['nonce', nonce],
      ['url', receiver.url('/created')],
      ['events', 'response.created'],
      ['events', 'form.published'],
      ['description', 'CRM sync'],
    ];
    const res = await post(base, admin.cookie, form);
    expect(res.statusCode).toBe(303);
    const shown = await get(`${base}/secret`, admin.cookie);
    expect(shown.statusCode).toBe(200);
    const secret = secretIn(shown.body);
    const [stored] = await endpoints(ws.id);
    expect(stored).toMatchObject({
      url: receiver.url('/created'),
      events: ['response.created', 'form.published'],
      enabled: true,
      description: 'CRM sync',
      secret,
    });
    // Once: a reload shows no secret, and the same form sent again creates nothing.
    const again = await get(`${base}/secret`, admin.cookie);
    expect(again.body).not.toContain('whsec_');
    expect(again.body).toContain('Secret no longer shown');
    expect((await post(base, admin.cookie, form)).statusCode).toBe(303);
    expect(await endpoints(ws.id)).toHaveLength(1);
    // The list shows it, never its secret.
    const listed = await get(base, admin.cookie);
    expect(listed.body).toContain(receiver.url('/created'));
    expect(listed.body).toContain('response.created, form.published');
    expect(listed.body).not.toContain('whsec_');
    expect(await audit(ws.id, 'webhook.create')).toEqual([
      { subject_id: stored.id, actor_kind: 'session', actor_id: admin.userId, actor_user_id: admin.userId },
    ]);
  });

  it('refuses bad input by its field and stores nothing', async () => {
    const admin = await signedIn('admin', other);
    const base = `/settings/w/${other.slug}/webhooks`;
    const send = async (fields: Array<[string, string]>) =>
      post(base, admin.cookie, [
        ['csrf', admin.csrf],
        ['nonce', nonceIn((await get(base, admin.cookie)).body)],
        ...fields,
      ]);
    const noEvents = await send([['url', receiver.url('/x')]]);
    expect(noEvents.statusCode).toBe(400);
    expect(noEvents.body).toMatch(/id="events-error">Choose at least one event/);
    const badUrl = await send([
      ['url', 'ftp://hooks.example.com/x'],
      ['events', 'form.created'],
    ]);
    expect(badUrl.statusCode).toBe(400);
    expect(badUrl.body).toMatch(/id="url-error">[^<]+/);
    expect(badUrl.body).toContain('value="ftp://hooks.example.com/x"'); // kept for correcting
    const badEvent = await send([
      ['url', receiver.url('/x')],
      ['events', 'form.exploded'],
    ]);
    expect(badEvent.statusCode).toBe(400);
    expect(badEvent.body).toMatch(/id="events-error">/);
    expect(await endpoints(other.id)).toEqual([]);
  });

  it('is for admins (403 below), writes need Pro with the tool message, and paused deliveries are said', async () => {
    const editor = await signedIn('editor');
    const base = `/settings/w/${ws.slug}/webhooks`;
    expect((await get(base, editor.cookie)).statusCode).toBe(403);
    const forged = await post(base, editor.cookie, {
      csrf: editor.csrf,
      nonce: 'n'.repeat(30),
      url: receiver.url('/editor'),
      events: 'form.created',
    });
    expect(forged.statusCode).toBe(403);

    const free = await createWorkspace(app, 'free');
    const admin = await signedIn('admin', free);
    const freeBase = `/settings/w/${free.slug}/webhooks`;
    const page = await get(freeBase, admin.cookie);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Deliveries are paused');
    const refused = await post(freeBase, admin.cookie, {
      csrf: admin.csrf,
      nonce: nonceIn(page.body),
      url: receiver.url('/free'),
      events: 'form.created',
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toContain(
      `The tool create_webhook changes data and needs a Pro workspace; &quot;${free.slug}&quot; is on Free.`,
    );
    expect(await endpoints(free.id)).toEqual([]);
    expect(await db.query(`SELECT 1 FROM webhook_endpoints WHERE url = $1`, [receiver.url('/editor')])).toEqual([]);
  });

  it('disables and enables, rotates (old secret signs for 24 hours), and deletes, each audited', async () => {
    const admin = await signedIn('admin');
    const hook = await createThroughPage(admin, '/manage');
    const base = `/settings/w/${ws.slug}/webhooks`;
    const state = async () => (await endpoints(ws.id)).find((e: { id: string }) => e.id === hook.id);

    expect(
      (await post(`${base}/${hook.id}/enabled`, admin.cookie, { csrf: admin.csrf, enabled: 'false' })).statusCode,
    ).toBe(303);
    expect((await state()).enabled).toBe(false);
    expect((await get(base, admin.cookie)).body).toContain('<strong>Disabled</strong>');
    expect(
      (await post(`${base}/${hook.id}/enabled`, admin.cookie, { csrf: admin.csrf, enabled: 'true' })).statusCode,
    ).toBe(303);
    expect((await state()).enabled).toBe(true);
    expect(
      (await audit(ws.id, 'webhook.update')).filter((r: { subject_id: string }) => r.subject_id === hook.id),
    ).toHaveLength(2);

    const confirm = await get(`${base}/${hook.id}/rotate`, admin.cookie);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain('keeps signing beside it for 24 hours');
    const nonce = nonceIn(confirm.body);
    const rotated = await post(`${base}/${hook.id}/rotate`, admin.cookie, { csrf: admin.csrf, nonce });
    expect(rotated.statusCode).toBe(303);
    expect(rotated.headers.location).toBe(`${base}/secret`);
    const shown = await get(`${base}/secret`, admin.cookie);
    const fresh = secretIn(shown.body)!;
    expect(shown.body).toContain('Secret rotated');
    expect(shown.body).toMatch(/The old secret keeps signing beside this one for 24 hours, until \d{4}-\d\d-\d\d/);
    expect(await state()).toMatchObject({ secret: fresh, previous_secret: hook.secret });
    // The same confirmation sent twice (a double click) rotates once: the old secret keeps its overlap.
    expect((await post(`${base}/${hook.id}/rotate`, admin.cookie, { csrf: admin.csrf, nonce })).statusCode).toBe(303);
    expect(await state()).toMatchObject({ secret: fresh, previous_secret: hook.secret });
    expect(await audit(ws.id, 'webhook.rotate_secret')).toHaveLength(1);

    expect((await get(`${base}/${hook.id}/delete`, admin.cookie)).statusCode).toBe(200);
    expect((await post(`${base}/${hook.id}/delete`, admin.cookie, { csrf: admin.csrf })).statusCode).toBe(303);
    expect(await state()).toBeUndefined();
    expect(await audit(ws.id, 'webhook.delete')).toEqual([
      { subject_id: hook.id, actor_kind: 'session', actor_id: admin.userId, actor_user_id: admin.userId },
    ]);
    expect((await get(`${base}/${hook.id}`, admin.cookie)).statusCode).toBe(404);
  });

  it('sends a test event, shows each attempt in the delivery log, and redelivers with the same webhook-id', async () => {
    const admin = await signedIn('admin');
    const hook = await createThroughPage(admin, '/log', ['form.created']);
    await createForm(app, ws, { title: 'For the test' });
    const here = `/settings/w/${ws.slug}/webhooks/${hook.id}`;
    receiver.script('/log', { status: 503 }); // the first attempt fails, the retry gets 200
    expect((await post(`${here}/test`, admin.cookie, { csrf: admin.csrf, event: 'response.created' })).statusCode).toBe(
      303,
    );
    await waitUntil(async () => receiver.for('/log').length >= 2, 20_000, 'the test event, then its retry');
    const [delivery] = await db.query('SELECT id, event_id FROM webhook_deliveries WHERE endpoint_id = $1', [hook.id]);
    await waitUntil(
      async () =>
        (await db.query('SELECT status FROM webhook_deliveries WHERE id = $1', [delivery.id]))[0].status ===
        'delivered',
      10_000,
      'the delivery recorded',
    );
    const log = await get(here, admin.cookie);
    expect(log.statusCode).toBe(200);
    expect(log.body).toContain(delivery.event_id);
    expect(log.body).toContain('(test)');
    expect(log.body).toMatch(
      /answered 503 in \d+ ms <span class="error">\(the endpoint answered 503\)<\/span>; next retry \d{4}-/,
    );
    expect(log.body).toMatch(/answered 200 in \d+ ms<\/li>/);
    expect(receiver.for('/log').every((r) => r.verifiedBy.length === 1 && r.payload.test === true)).toBe(true);
    expect(await audit(ws.id, 'webhook.test')).toContainEqual(
      expect.objectContaining({ subject_id: hook.id, actor_kind: 'session', actor_user_id: admin.userId }),
    );

    const res = await post(`/settings/w/${ws.slug}/webhooks/deliveries/${delivery.id}/redeliver`, admin.cookie, {
      csrf: admin.csrf,
    });
    expect(res.statusCode).toBe(303);
    // Back to the log, with the notice of the change (a fixed key, never free text).
    expect(res.headers.location).toBe(`${here}?done=redelivered`);
    expect((await get(res.headers.location as string, admin.cookie)).body).toContain('Delivery queued again.');
    await waitUntil(async () => receiver.for('/log').length >= 3, 20_000, 'the redelivery');
    expect(new Set(receiver.for('/log').map((r) => r.id))).toEqual(new Set([delivery.event_id]));
    expect(await audit(ws.id, 'webhook.redeliver')).toEqual([
      { subject_id: delivery.id, actor_kind: 'session', actor_id: admin.userId, actor_user_id: admin.userId },
    ]);
    // Filtered by status.
    expect((await get(`${here}?status=failed`, admin.cookie)).body).toContain('No deliveries in the last 30 days.');
  });

  it("answers 404 to another workspace's endpoint or delivery, and changes nothing there", async () => {
    const theirs = await createThroughPage(await signedIn('admin', other), '/theirs', ['form.created'], other);
    const [delivery] = await db.query(
      `INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, status)
       VALUES ($1, $2, 'msg_theirs', 'form.created', '{}', 'delivered') RETURNING id`,
      [other.id, theirs.id],
    );
    const admin = await signedIn('admin');
    const mine = await createThroughPage(admin, '/mine', ['form.created']);
    const base = `/settings/w/${ws.slug}/webhooks`;
    const csrf = { csrf: admin.csrf };
    expect((await get(`${base}/${theirs.id}`, admin.cookie)).statusCode).toBe(404);
    expect((await get(`${base}/not-an-id`, admin.cookie)).statusCode).toBe(404);
    expect((await post(`${base}/${theirs.id}/enabled`, admin.cookie, { ...csrf, enabled: 'false' })).statusCode).toBe(
      404,
    );
    expect((await get(`${base}/${theirs.id}/rotate`, admin.cookie)).statusCode).toBe(404);
    expect(
      (await post(`${base}/${theirs.id}/rotate`, admin.cookie, { ...csrf, nonce: 'n'.repeat(40) })).statusCode,
    ).toBe(404);
    expect((await post(`${base}/${theirs.id}/delete`, admin.cookie, csrf)).statusCode).toBe(404);
    expect((await post(`${base}/${theirs.id}/test`, admin.cookie, { ...csrf, event: 'form.created' })).statusCode).toBe(
      404,
    );
    // Their delivery: not found, not redelivered.
    expect((await post(`${base}/deliveries/${delivery.id}/redeliver`, admin.cookie, csrf)).statusCode).toBe(404);
    expect((await post(`${base}/deliveries/not-an-id/redeliver`, admin.cookie, csrf)).statusCode).toBe(404);
    const [after] = await endpoints(other.id);
    expect(after).toMatchObject({ id: theirs.id, enabled: true, secret: theirs.secret, previous_secret: null });
    expect((await db.query('SELECT status FROM webhook_deliveries WHERE id = $1', [delivery.id]))[0].status).toBe(
      'delivered',
    );
    // A post without the session's CSRF token changes nothing either.
    expect((await post(`${base}/${mine.id}/enabled`, admin.cookie, { enabled: 'false' })).statusCode).toBe(403);
    expect((await endpoints(ws.id)).find((e: { id: string }) => e.id === mine.id).enabled).toBe(true);
  });
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { ParsedMail } from 'mailparser';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { Role } from '../../src/common/access/roles';
import { SessionsService } from '../../src/settings/sessions.service';
import { WebhookDeliveryWorker } from '../../src/webhooks/delivery.worker';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { waitUntil } from '../utils/cluster';
import { callTool } from '../utils/http';
import { TestSmtpServer } from '../utils/smtp';
import { createAppOn, isolatedDatabaseUrl } from '../utils/webhooks';

/** A header's value as sent (mailparser folds the List-* headers into an object of its own). */
const header = (mail: ParsedMail, name: string) =>
  mail.headerLines.find((h) => h.key === name)?.line.replace(/^[^:]+:\s*/, '');

/**
 * Email end to end (issue 48): a member's notifications and digests, sent by the delivery loop
 * through a real SMTP server in this process and read back; the outbox row written with the
 * response; one-click unsubscribe; the server's 421, 550 and absence; the Email settings page.
 */
describe('email', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let drop: () => Promise<void>;
  let smtp: TestSmtpServer;
  let ws: TestWorkspace;
  let token: string;

  beforeAll(async () => {
    smtp = await TestSmtpServer.start();
    const isolated = await isolatedDatabaseUrl('email');
    drop = isolated.drop;
    app = await createAppOn(isolated.url, {
      SMTP_URL: smtp.url,
      MAIL_FROM: 'Formwork <forms@formwork.test>',
      MAIL_RETRY_BASE_MS: '100',
    });
    await app.init();
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    ({ token } = await createToken(app, ws, { role: 'admin' }));
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await smtp?.down();
    await drop?.();
  }, 30_000);

  async function member(role: Role, workspace = ws) {
    const email = `${role}-${randomBytes(4).toString('hex')}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(workspace.slug, email, role);
    const cookie = await app.get(SessionsService).start(user.id);
    const { csrf } = (await app.get(SessionsService).find(cookie))!;
    return { email, userId: user.id, cookie: `fw_session=${cookie}`, csrf };
  }
  type Member = Awaited<ReturnType<typeof member>>;
  const post = (url: string, m: Member, form: Record<string, string>) =>
    app.inject({
      method: 'POST',
      url,
      headers: { cookie: m.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf: m.csrf, ...form }).toString(),
    });
  const page = (m: Member, query = '') =>
    app.inject({ method: 'GET', url: `/settings/w/${ws.slug}/email${query}`, headers: { cookie: m.cookie } });
  const notify = (m: Member, publicId: string, mode: string) =>
    post(`/settings/w/${ws.slug}/email/notify`, m, { form: publicId, mode });

  async function publishedForm(title = 'Feedback') {
    return createForm(app, ws, { title, status: 'published', blocks: [{ type: 'long_text', title: 'Your comment' }] });
  }
  async function respond(form: Awaited<ReturnType<typeof publishedForm>>, answer: string): Promise<string> {
    const res = await callTool(app, token, 'create_response', {
      publicId: form.publicId,
      answers: { [form.blocks[0].id]: answer },
    });
    expect(res.status).toBe(200);
    return res.body.id;
  }
  const rows = (where: string, params: unknown[]) =>
    db.query(
      `SELECT id, kind, to_address, status, attempt_count, last_code, last_answer FROM email_outbox WHERE ${where} ORDER BY created_at`,
      params,
    );
  const until = (what: string, check: () => Promise<boolean>) => waitUntil(check, 20_000, what);

  it('mails a subscribed member each response: the answers escaped, a link to it, one-click unsubscribe', async () => {
    const owner = await member('editor');
    const form = await publishedForm('Feedback <b>&</b> "ideas"');
    expect((await notify(owner, form.publicId, 'each')).statusCode).toBe(303);

    const id = await respond(form, 'Great <script>alert(1)</script>\nSecond line');
    // Written with the response, in its transaction.
    const [row] = await rows('response_id = $1', [id]);
    expect(row).toMatchObject({ kind: 'notification', to_address: owner.email });

    await until('the notification arrives', async () => smtp.to(owner.email).length === 1);
    const mail = smtp.to(owner.email)[0];
    expect(mail.subject).toBe('New response to Feedback <b>&</b> "ideas"');
    expect(mail.from?.value).toEqual([{ name: 'Formwork', address: 'forms@formwork.test' }]);
    expect(mail.messageId).toBe(`<${row.id}@formwork>`);
    expect(mail.text).toContain('Great <script>alert(1)</script>');
    expect(mail.html).toContain('Great &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(mail.html).not.toContain('<script>');
    const link = `http://formwork.test/settings/w/${ws.slug}/forms/${form.publicId}/responses/${id}`;
    expect(mail.text).toContain(link);
    expect(header(mail, 'list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    const unsubscribe = /^<(http[^>]+)>$/.exec(header(mail, 'list-unsubscribe')!)![1];
    await until('the message is recorded as sent', async () => (await rows('id = $1', [row.id]))[0].status === 'sent');
    expect((await rows('id = $1', [row.id]))[0]).toMatchObject({ attempt_count: 1, last_code: 250 });

    // A link scanner's GET changes nothing; the mail client's one-click POST (no cookie, no CSRF token) unsubscribes.
    const path = new URL(unsubscribe).pathname;
    const asked = await app.inject({ method: 'GET', url: path });
    expect(asked.statusCode).toBe(200);
    expect(asked.body).toContain('Unsubscribe');
    const done = await app.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'List-Unsubscribe=One-Click',
    });
    expect(done.statusCode).toBe(200);
    expect((await app.inject({ method: 'POST', url: path, payload: {} })).statusCode).toBe(404);
    // A forged token opens nothing.
    const forged = path.replace(/\.[A-Za-z0-9_-]+$/, `.${'A'.repeat(43)}`);
    expect((await app.inject({ method: 'GET', url: forged })).statusCode).toBe(404);
    const after = await respond(form, 'After unsubscribing');
    expect(await rows('response_id = $1', [after])).toEqual([]);
  }, 60_000);

  it('notifies members only: one who left gets nothing, and another workspace cannot subscribe to the form', async () => {
    const leaving = await member('viewer');
    const form = await publishedForm();
    expect((await notify(leaving, form.publicId, 'each')).statusCode).toBe(303);
    await app.get(WorkspacesService).removeMember(ws.slug, leaving.email);
    const id = await respond(form, 'Nobody should hear of this');
    expect(await rows('response_id = $1', [id])).toEqual([]);

    const other = await createWorkspace(app, 'pro');
    const stranger = await member('admin', other);
    const refused = await post(`/settings/w/${other.slug}/email/notify`, stranger, {
      form: form.publicId,
      mode: 'each',
    });
    expect(refused.statusCode).toBe(404);
    const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM email_subscriptions WHERE user_id = $1`, [
      stranger.userId,
    ]);
    expect(n).toBe(0);
  }, 30_000);

  it('sends an hourly digest of the responses in its window, once', async () => {
    const owner = await member('viewer');
    const form = await publishedForm('Digest form');
    expect((await notify(owner, form.publicId, 'hourly')).statusCode).toBe(303);
    const ids = [await respond(form, 'one'), await respond(form, 'two')];
    // No per-response messages for a digest subscriber.
    expect(await rows(`response_id = ANY($1)`, [ids])).toEqual([]);
    // An hour has passed (the window moved back rather than waited for).
    await db.query(`UPDATE email_subscriptions SET digest_from = digest_from - interval '2 hours' WHERE user_id = $1`, [
      owner.userId,
    ]);
    await app.get(WebhookDeliveryWorker).periodic('email');
    await app.get(WebhookDeliveryWorker).periodic('email');
    await until('the digest arrives', async () => smtp.to(owner.email).length === 1);
    const mail = smtp.to(owner.email)[0];
    expect(mail.subject).toBe('2 new responses to Digest form (last hour)');
    for (const id of ids) expect(mail.text).toContain(`/responses/${id}`);
    expect(header(mail, 'list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    expect(await rows(`kind = 'digest' AND to_address = $1`, [owner.email])).toHaveLength(1);
  }, 30_000);

  it('retries a 421 and a server that is down, and stops at a 550 with its answer on the settings page', async () => {
    const admin = await member('admin');
    const form = await publishedForm('Faults');
    expect((await notify(admin, form.publicId, 'each')).statusCode).toBe(303);

    smtp.script('421');
    const first = await respond(form, 'after a 421');
    await until('the 421 is retried and sent', async () => smtp.to(admin.email).length === 1);
    await until('recorded', async () => (await rows('response_id = $1', [first]))[0].status === 'sent');
    expect((await rows('response_id = $1', [first]))[0].attempt_count).toBe(2);

    smtp.script('550');
    const refused = await respond(form, 'refused');
    await until('the 550 is recorded', async () => (await rows('response_id = $1', [refused]))[0].status === 'failed');
    const [failed] = await rows('response_id = $1', [refused]);
    expect(failed).toMatchObject({ attempt_count: 1, last_code: 550 });
    expect(failed.last_answer).toContain('No such user here');

    await smtp.down();
    const waiting = await respond(form, 'while the server is down');
    await until(
      'a connection failure is recorded',
      async () => (await rows('response_id = $1', [waiting]))[0].attempt_count >= 1,
    );
    const [down] = await rows('response_id = $1', [waiting]);
    expect(down.status).toBe('pending');
    expect(down.last_code).toBeNull();
    // Workspace admins read it: the kind of failure, never the operator's mail host or port.
    expect(down.last_answer).toMatch(/^could not reach the mail server \(/);
    expect(down.last_answer).not.toMatch(/127\.0\.0\.1|:\d{2,5}/);
    // The page shows each message's state and the server's last answer.
    const shown = await page(admin, '?status=failed');
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain('No such user here');

    await smtp.up();
    await until('the waiting message goes once the server is back', async () => smtp.to(admin.email).length === 2);
    await until('recorded', async () => (await rows('response_id = $1', [waiting]))[0].status === 'sent');
    // Nothing was sent twice: one message per row that was sent.
    const sent = smtp.to(admin.email).map((m) => m.messageId);
    expect(new Set(sent).size).toBe(sent.length);
    expect(sent.length).toBe(2);

    // An admin sends the failed one again from the page; another workspace's admin cannot.
    const otherWs = await createWorkspace(app, 'pro');
    const stranger = await member('admin', otherWs);
    const foreign = await app.inject({
      method: 'POST',
      url: `/settings/w/${otherWs.slug}/email/${failed.id}/retry`,
      headers: { cookie: stranger.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf: stranger.csrf }).toString(),
    });
    expect(foreign.statusCode).toBe(404);
    expect((await rows('id = $1', [failed.id]))[0].status).toBe('failed');
    expect((await post(`/settings/w/${ws.slug}/email/${failed.id}/retry`, admin, {})).statusCode).toBe(303);
    await until('the message sent again arrives', async () => smtp.to(admin.email).length === 3);
    await until('recorded', async () => (await rows('id = $1', [failed.id]))[0].status === 'sent');
  }, 60_000);

  it("shares the sending fairly: one workspace's backlog does not hold back another's message", async () => {
    const busy = await createWorkspace(app, 'pro');
    const quiet = await createWorkspace(app, 'pro');
    // 300 messages of one workspace, due a minute before the other's one.
    await db.query(
      `INSERT INTO email_outbox (workspace_id, kind, to_address, next_attempt_at)
       SELECT $1, 'test', 'busy@example.com', now() - interval '1 minute' FROM generate_series(1, 300)`,
      [busy.id],
    );
    await db.query(
      `INSERT INTO email_outbox (workspace_id, kind, to_address) VALUES ($1, 'test', 'quiet@example.com')`,
      [quiet.id],
    );
    await until('the quiet workspace gets its message', async () => smtp.to('quiet@example.com').length === 1);
    const busyBefore = smtp.received
      .slice(0, smtp.received.indexOf(smtp.to('quiet@example.com')[0]))
      .filter((m) => smtp.to('busy@example.com').includes(m)).length;
    // Oldest first would send all 300 before it; a workspace's share is 32 to 64 of the 128 sends in flight.
    expect(busyBefore).toBeLessThan(150);
    await waitUntil(async () => smtp.to('busy@example.com').length === 300, 60_000, 'the backlog is sent');
  }, 90_000);

  it('reports the mail server on /readyz, and shows members their notifications without the outbox', async () => {
    const ready = await request(app.getHttpServer()).get('/readyz');
    expect(ready.body.email).toMatchObject({ configured: true, server: 'ok' });
    expect(typeof ready.body.email.pending).toBe('number');

    const viewer = await member('viewer');
    const form = await publishedForm('Visible form');
    const shown = await page(viewer);
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain('Visible form');
    expect(shown.body).not.toContain('Send a test message');
    expect(
      (await post(`/settings/w/${ws.slug}/email/notify`, viewer, { form: form.publicId, mode: 'weekly' })).statusCode,
    ).toBe(404);
    expect((await post(`/settings/w/${ws.slug}/email/test`, viewer, {})).statusCode).toBe(403);
  }, 30_000);
});

describe('email without a mail server', () => {
  let app: NestFastifyApplication;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const isolated = await isolatedDatabaseUrl('email_off');
    drop = isolated.drop;
    app = await createAppOn(isolated.url, {});
    await app.init();
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await drop?.();
  }, 30_000);

  it('keeps messages in the outbox, and the Email page says how to configure a server', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { user } = await app
      .get(WorkspacesService)
      .addMember(ws.slug, `a-${randomBytes(4).toString('hex')}@example.com`, 'admin');
    const cookie = `fw_session=${await app.get(SessionsService).start(user.id)}`;
    const { csrf } = (await app.get(SessionsService).find(cookie.slice('fw_session='.length)))!;
    const queued = await app.inject({
      method: 'POST',
      url: `/settings/w/${ws.slug}/email/test`,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf }).toString(),
    });
    expect(queued.statusCode).toBe(303);
    const shown = await app.inject({ method: 'GET', url: `/settings/w/${ws.slug}/email`, headers: { cookie } });
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain('No mail server is configured');
    expect(shown.body).toContain('SMTP_URL');
    const [row] = await app
      .get(DataSource)
      .query(`SELECT status, attempt_count FROM email_outbox WHERE workspace_id = $1`, [ws.id]);
    expect(row).toEqual({ status: 'pending', attempt_count: 0 });
    const ready = await request(app.getHttpServer()).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.email).toEqual({ configured: false, pending: expect.any(Number) });
  }, 30_000);
});

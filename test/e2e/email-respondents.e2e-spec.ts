import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { waitUntil } from '../utils/cluster';
import { callTool } from '../utils/http';
import { TestSmtpServer } from '../utils/smtp';
import { createAppOn, isolatedDatabaseUrl } from '../utils/webhooks';

/**
 * Email to respondents end to end (issue 48, items 4 and 5): receipts and "email me the link to
 * finish later", sent by the delivery loop through a real SMTP server in this process and read
 * back; recall in a receipt's subject and message, with no header injected; addresses checked
 * before anything is queued; the hour's limits per recipient (429 with a hint, on the page and in JSON).
 */
describe('email to respondents', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let drop: () => Promise<void>;
  let smtp: TestSmtpServer;
  let ws: TestWorkspace;
  let token: string;
  let n = 0;
  const address = (what: string) => `${what}-${++n}-${Date.now()}@example.com`;

  beforeAll(async () => {
    smtp = await TestSmtpServer.start();
    const isolated = await isolatedDatabaseUrl('email_respondents');
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

  const until = (what: string, check: () => boolean | Promise<boolean>) => waitUntil(async () => check(), 20_000, what);
  const outbox = (where: string, params: unknown[]) =>
    db.query(`SELECT kind, to_address, status, sealed FROM email_outbox WHERE ${where} ORDER BY created_at`, params);

  async function receiptForm(receipt: Record<string, unknown>) {
    const created = await callTool(app, token, 'create_form', {
      title: 'Workshop sign-up',
      blocks: [
        { ref: 'name', type: 'short_text', title: 'Your name' },
        { ref: 'email', type: 'email', title: 'Your email' },
        { ref: 'size', type: 'multiple_choice', title: 'T-shirt', choices: ['S', 'M', 'L'] },
      ],
      receipt,
    });
    expect(created.status).toBe(200);
    await callTool(app, token, 'publish_form', { publicId: created.body.publicId });
    const ids = Object.fromEntries(
      (created.body.blocks as Array<{ ref: string; id: string }>).map((b) => [b.ref, b.id]),
    ) as Record<string, string>;
    const m = (created.body.blocks as Array<{ ref: string; choices?: Array<{ id: string; label: string }> }>).find(
      (b) => b.ref === 'size',
    )!.choices![1].id;
    return { publicId: created.body.publicId as string, ids, medium: m, view: created.body };
  }

  describe('receipts', () => {
    it('mails the respondent their answers with the response, recall filled in, and no header a subject could inject', async () => {
      const f = await receiptForm({
        to: 'email',
        subject: 'Thanks {{name}}\r\nBcc: victim@example.org',
        message: 'Hello {{name}},\n\nsee you there in size {{size}}. <b>Bring a pen</b>.',
      });
      expect(f.view.receipt).toEqual({
        to: 'email',
        subject: 'Thanks {{name}}\r\nBcc: victim@example.org',
        message: 'Hello {{name}},\n\nsee you there in size {{size}}. <b>Bring a pen</b>.',
      });
      const to = address('ada');
      const res = await callTool(app, token, 'create_response', {
        publicId: f.publicId,
        answers: { [f.ids.name]: 'Ada <script>x</script>', [f.ids.email]: to.toUpperCase(), [f.ids.size]: f.medium },
      });
      expect(res.status).toBe(200);
      // Written with the response (in its transaction), to the address lower-cased.
      expect(await outbox('response_id = $1', [res.body.id])).toEqual([
        { kind: 'receipt', to_address: to, status: 'pending', sealed: null },
      ]);

      await until('the receipt arrives', () => smtp.to(to).length === 1);
      const mail = smtp.to(to)[0];
      expect(mail.subject).toBe('Thanks Ada <script>x</script> Bcc: victim@example.org');
      expect(mail.bcc).toBeUndefined();
      expect(mail.headerLines.some((h) => h.key === 'bcc')).toBe(false);
      expect([mail.to].flat()[0]!.value).toEqual([{ address: to, name: '' }]);
      expect(mail.text).toContain('Hello Ada <script>x</script>,');
      expect(mail.text).toContain('see you there in size M.');
      expect(mail.text).toContain('T-shirt\n  M');
      expect(mail.html).toContain('Ada &lt;script&gt;x&lt;/script&gt;');
      expect(mail.html).toContain('&lt;b&gt;Bring a pen&lt;/b&gt;');
      expect(mail.html).not.toContain('<script>');
      expect(mail.headerLines.some((h) => h.key === 'list-unsubscribe')).toBe(false);
    });

    it('refuses a receipt that names no email block, or carries another field, at its path; update_form can clear it', async () => {
      for (const [receipt, path] of [
        [{ to: 'name' }, '/receipt/to'],
        [{ to: 'nobody' }, '/receipt/to'],
        [{ to: 'email', cc: 'x@example.com' }, '/receipt/cc'],
        [{ to: 'email', subject: 'x'.repeat(151) }, '/receipt/subject'],
        ['email', '/receipt'],
      ] as const) {
        const res = await callTool(app, token, 'create_form', {
          title: 'Bad receipt',
          blocks: [
            { ref: 'name', type: 'short_text', title: 'Name' },
            { ref: 'email', type: 'email', title: 'Email' },
          ],
          receipt,
        });
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('invalid_arguments');
        expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
      }
      const f = await receiptForm({ to: 'email' });
      // Removing the email block a receipt names is refused; clearing the receipt is not.
      const removed = await callTool(app, token, 'update_form', {
        publicId: f.publicId,
        blocks: [{ id: f.ids.name, type: 'short_text', title: 'Your name' }],
      });
      expect(removed.status).toBe(400);
      expect(removed.body.error.details.map((d: { path: string }) => d.path)).toContain('/receipt/to');
      const cleared = await callTool(app, token, 'update_form', { publicId: f.publicId, receipt: null });
      expect(cleared.status).toBe(200);
      expect(cleared.body.receipt).toBeUndefined();
      const res = await callTool(app, token, 'create_response', {
        publicId: f.publicId,
        answers: { [f.ids.email]: address('cleared') },
      });
      expect(await outbox('response_id = $1', [res.body.id])).toEqual([]);
    });

    it('sends one address at most 3 an hour, whatever the concurrency; the responses are all kept', async () => {
      const f = await receiptForm({ to: 'email' });
      const to = address('many');
      const created = await Promise.all(
        Array.from({ length: 6 }, () =>
          callTool(app, token, 'create_response', { publicId: f.publicId, answers: { [f.ids.email]: to } }),
        ),
      );
      expect(created.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect(await outbox('to_address = $1', [to])).toHaveLength(3);
    });
  });

  describe('the link to finish later, emailed', () => {
    let publicId: string;
    let ids: Record<string, string>;
    const stateOf = (html: string) => /<input type="hidden" name="_state" value="([^"]+)"\/>/.exec(html)![1];
    const resumeOf = (html: string) => /<input type="hidden" name="_resume" value="([^"]+)"\/>/.exec(html)![1];

    beforeAll(async () => {
      const created = await callTool(app, token, 'create_form', {
        title: 'Grant application',
        partialResponses: true,
        blocks: [
          { ref: 'email', type: 'email', title: 'Your email' },
          { ref: 'next', type: 'page_break', title: 'Project' },
          { ref: 'project', type: 'long_text', title: 'Your project' },
        ],
      });
      publicId = created.body.publicId;
      ids = Object.fromEntries((created.body.blocks as Array<{ ref: string; id: string }>).map((b) => [b.ref, b.id]));
      await callTool(app, token, 'publish_form', { publicId });
    });

    /** A browser that answers page 1 with `email`, and saves page 2 to finish later: the saved page. */
    async function saved(email: string) {
      const browser = request.agent(app.getHttpServer());
      const first = await browser.get(`/f/${publicId}`);
      const second = await browser
        .post(`/f/${publicId}`)
        .type('form')
        .send(
          new URLSearchParams([
            ['_state', stateOf(first.text)],
            [ids.email, email],
            ['_action', 'next'],
          ]).toString(),
        );
      const page = await browser
        .post(`/f/${publicId}`)
        .type('form')
        .send(
          new URLSearchParams([
            ['_state', stateOf(second.text)],
            [ids.project, 'A garden'],
            ['_action', 'save'],
          ]).toString(),
        );
      expect(page.status).toBe(200);
      return { browser, page };
    }
    const ask = (browser: ReturnType<typeof request.agent>, fields: Record<string, string>, json = false) => {
      const req = browser.post(`/f/${publicId}/email-link`);
      return json
        ? req.set('Accept', 'application/json').send(fields)
        : req.type('form').send(new URLSearchParams(fields).toString());
    };

    it('offers the address answered, mails the link (without JavaScript: a plain post), and the link opens the answers', async () => {
      const to = address('grace');
      const { browser, page } = await saved(to);
      expect(page.text).toContain('Email me the link');
      expect(page.text).toContain(`value="${to}"`);
      const secret = resumeOf(page.text);

      const sent = await ask(browser, { _resume: secret, email: to });
      expect(sent.status).toBe(200);
      expect(sent.text).toContain(`We are sending the link to ${to}`);
      await until('the link arrives', () => smtp.to(to).length === 1);
      const mail = smtp.to(to)[0];
      expect(mail.subject).toBe('Finish “Grant application” later');
      const link = new URL(/http\S+\?resume=[\w-]+/.exec(mail.text!)![0]);
      expect(link.searchParams.get('resume')).toBe(secret);
      // Sent: the sealed link is gone from the outbox row.
      await until('recorded as sent', async () => (await outbox('to_address = $1', [to]))[0]?.status === 'sent');
      expect(await outbox('to_address = $1', [to])).toEqual([
        { kind: 'resume', to_address: to, status: 'sent', sealed: null },
      ]);
      // Another browser opens the link: the answers move there (the resume page of issue 36).
      const other = request.agent(app.getHttpServer());
      const opened = await other.get(`${link.pathname}${link.search}`).set('Sec-Fetch-User', '?1');
      expect(opened.status).toBe(303);
      const resumed = await other.get(`/f/${publicId}`);
      expect(resumed.text).toContain('A garden');
    });

    it('takes an address typed instead; refuses what is not one address (400 with a hint), and a secret that opens nothing', async () => {
      const { browser, page } = await saved(address('first'));
      const secret = resumeOf(page.text);
      for (const bad of ['not an address', 'a@b.com, c@d.com', 'x@example.com\r\nBcc: y@example.com', '']) {
        const res = await ask(browser, { _resume: secret, email: bad });
        expect(res.status).toBe(400);
        expect(res.text).toContain('Enter one email address');
        const json = await ask(browser, { _resume: secret, email: bad }, true);
        expect(json.status).toBe(400);
        expect(json.body.error).toMatchObject({ code: 'invalid_arguments', details: [{ path: '/email' }] });
        expect(json.body.error.hint).toContain('one address');
      }
      const typed = address('typed');
      expect((await ask(browser, { _resume: secret, email: `  ${typed} ` }, true)).body).toEqual({
        sent: true,
        to: typed,
      });
      const unknown = await ask(browser, { _resume: 'x'.repeat(43), email: typed }, true);
      expect(unknown.status).toBe(404);
      expect(await outbox('to_address = $1', [typed])).toHaveLength(1);
    });

    it('sends one address at most 3 messages an hour (then 429 with Retry-After and a hint, the link still on the page)', async () => {
      const to = address('limited');
      const { browser, page } = await saved(to);
      const secret = resumeOf(page.text);
      const answers = await Promise.all(
        Array.from({ length: 5 }, () => ask(browser, { _resume: secret, email: to }, true)),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([202, 202, 202, 429, 429]);
      const refused = answers.find((a) => a.status === 429)!;
      expect(refused.body.error.code).toBe('rate_limited');
      expect(refused.body.error.hint).toContain('3 messages an hour');
      expect(refused.headers['retry-after']).toBe('3600');
      const onPage = await ask(browser, { _resume: secret, email: to });
      expect(onPage.status).toBe(429);
      expect(onPage.text).toContain('This address was sent 3 messages');
      expect(onPage.text).toContain('id="resume-link"');
      expect(await outbox('to_address = $1', [to])).toHaveLength(3);
    });
  });
});

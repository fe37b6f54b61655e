import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { EmailService } from '../../src/email/email.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createForm, createToken, createWorkspace } from '../factories';
import { callToolAt, destroyAgents, ensureBuilt, Instance, TEST_WEBHOOK_SECRET_KEY, waitUntil } from '../utils/cluster';
import { TestSmtpServer } from '../utils/smtp';
import { createAppOn, isolatedDatabaseUrl } from '../utils/webhooks';

/**
 * The email outbox survives the instance (built instances, dist/: the loop in its worker thread):
 * one is killed with SIGKILL while the mail server holds its message unanswered; another sends the
 * message once the claim expires, and the server has it once.
 */
describe('email across instances', () => {
  let setup: NestFastifyApplication;
  let drop: () => Promise<void>;
  let url: string;
  let smtp: TestSmtpServer;
  let a: Instance | undefined;
  let b: Instance | undefined;

  const env = () => ({
    DATABASE_URL: url,
    NODE_ENV: 'production',
    BOOTSTRAP_DEMO: 'false',
    PUBLIC_URL: 'http://formwork.test',
    DATABASE_POOL_SIZE: '4',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_ENABLED: 'false',
    SMTP_URL: smtp.url,
    MAIL_RETRY_BASE_MS: '100',
  });

  beforeAll(async () => {
    ensureBuilt();
    const isolated = await isolatedDatabaseUrl('email_failover');
    url = isolated.url;
    drop = isolated.drop;
    setup = await createAppOn(url, { WEBHOOKS_DELIVERY: 'false', WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY });
    await setup.init();
    smtp = await TestSmtpServer.start();
  }, 120_000);

  afterAll(async () => {
    destroyAgents();
    await Promise.all([a?.stop(), b?.stop()]);
    await setup?.close();
    await smtp?.down();
    await drop?.();
  }, 30_000);

  it('sends a message whose instance died (SIGKILL) in its SMTP transaction once, from another instance', async () => {
    const ws = await createWorkspace(setup, 'pro');
    const { token } = await createToken(setup, ws, { role: 'admin' });
    const form = await createForm(setup, ws, { status: 'published', blocks: [{ type: 'short_text', title: 'Name' }] });
    const { user } = await setup.get(WorkspacesService).addMember(ws.slug, 'owner@example.com', 'editor');
    expect(await setup.get(EmailService).setMode(ws.id, user.id, form.publicId, 'each')).toBe(true);
    let release!: () => void;
    smtp.script({ hold: new Promise<void>((resolve) => (release = resolve)) });

    a = await Instance.start('a', env());
    const created = await callToolAt(a.port, token, 'create_response', {
      publicId: form.publicId,
      answers: { [form.blocks[0].id]: 'Ada' },
    });
    expect(created.status).toBe(200);
    // The instance has sent the whole message; the server holds its answer, and the instance dies waiting.
    await waitUntil(async () => smtp.dataArrived === 1, 20_000, 'the first instance sent the message');
    const closed = smtp.sessionsClosed;
    a.signal('SIGKILL');
    await a.exited;
    // The server has seen its connections end (the message never got its 250), then answers.
    await waitUntil(async () => smtp.sessionsClosed > closed, 20_000, 'the server saw the connection end');
    release();

    b = await Instance.start('b', env());
    const db = setup.get(DataSource);
    await waitUntil(
      async () =>
        (await db.query(`SELECT status FROM email_outbox WHERE workspace_id = $1`, [ws.id]))[0]?.status === 'sent',
      60_000,
      'the other instance sent the message after the claim expired',
    );
    const [row] = await db.query(`SELECT id, attempt_count FROM email_outbox WHERE workspace_id = $1`, [ws.id]);
    expect(row.attempt_count).toBe(1);
    expect(smtp.dataArrived).toBe(2);
    // The held copy was never accepted (its sender died before the 250): the server has the message once.
    expect(smtp.to('owner@example.com').map((m) => m.messageId)).toEqual([`<${row.id}@formwork>`]);
  }, 120_000);
});

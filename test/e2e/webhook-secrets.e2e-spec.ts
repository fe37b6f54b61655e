import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { SealedSecretError, WebhookSecretBox } from '../../src/webhooks/secret-box';
import { WebhooksService } from '../../src/webhooks/webhooks.service';
import { createToken, createWorkspace } from '../factories';
import { waitUntil } from '../utils/cluster';
import { callTool } from '../utils/http';
import { createAppOn, isolatedDatabaseUrl, WebhookReceiver } from '../utils/webhooks';

/**
 * Webhook signing secrets at rest: stored sealed under WEBHOOK_SECRET_KEY, so that the database
 * alone (a dump) holds neither a secret nor the key; deliveries still verify with the
 * `standardwebhooks` package; a new key reseals every secret at start while the old one, listed in
 * WEBHOOK_SECRET_KEY_PREVIOUS, still opens them; a secret stored before encryption is sealed by
 * the first start that finds it. Each step is an instance started with other keys on one database.
 */
describe('webhook secrets at rest', () => {
  const keyA = randomBytes(32).toString('base64');
  const keyB = randomBytes(32).toString('base64');
  let url: string;
  let drop: () => Promise<void>;
  let receiver: WebhookReceiver;
  let app: NestFastifyApplication | undefined;
  let admin: string;
  let hook: { id: string; secret: string };
  let sent = 0;

  /** An instance that delivers to the receiver, with these keys. */
  async function start(env: Record<string, string>): Promise<NestFastifyApplication> {
    await app?.close();
    app = await createAppOn(url, { WEBHOOKS_ALLOW_PRIVATE_URLS: 'true', WEBHOOKS_RETRY_BASE_MS: '100', ...env });
    await app.init();
    return app;
  }

  const stored = async (): Promise<{ secret: string; previous_secret: string | null }> =>
    (
      await app!.get(DataSource).query('SELECT secret, previous_secret FROM webhook_endpoints WHERE id = $1', [hook.id])
    )[0];

  /**
   * The tables of the service's schema with a row whose text (what a dump would hold) contains
   * one of the needles. Searched in SQL, table by table: on the embedded database the schema also
   * holds what earlier test files stored, too much to fetch as text.
   */
  async function tablesHolding(needles: string[]): Promise<string[]> {
    const db = app!.get(DataSource);
    const tables: Array<{ name: string }> = await db.query(
      `SELECT quote_ident(table_name) AS name FROM information_schema.tables
        WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`,
    );
    expect(tables.map((t) => t.name)).toContain('webhook_endpoints');
    const found: string[] = [];
    const where = needles.map((_, i) => `strpos(t::text, $${i + 1}) > 0`).join(' OR ');
    for (const { name } of tables) {
      const [{ hit }] = await db.query(`SELECT EXISTS (SELECT 1 FROM ${name} t WHERE ${where}) AS hit`, needles);
      if (hit) found.push(name);
    }
    return found;
  }

  /** A test event through the delivery loop; the secrets its signature verified with at the receiver. */
  async function deliveredVerifiedBy(): Promise<string[]> {
    const res = await callTool(app!, admin, 'send_test_webhook', { webhookId: hook.id, event: 'form.updated' });
    expect([res.status, res.body.error?.code]).toEqual([200, undefined]);
    sent += 1;
    await waitUntil(async () => receiver.for('/sealed').length >= sent, 20_000, `delivery ${sent}`);
    expect(receiver.unverified).toEqual([]);
    return receiver.for('/sealed')[sent - 1].verifiedBy;
  }

  beforeAll(async () => {
    const isolated = await isolatedDatabaseUrl('hooksecrets');
    url = isolated.url;
    drop = isolated.drop;
    receiver = await WebhookReceiver.start();
    await start({ WEBHOOK_SECRET_KEY: keyA });
    const ws = await createWorkspace(app!, 'pro');
    admin = (await createToken(app!, ws, { role: 'admin' })).token;
    // A test event is built from a form of the workspace.
    const form = await callTool(app!, admin, 'create_form', {
      title: 'Survey',
      blocks: [{ type: 'short_text', title: 'Name' }],
    });
    expect(form.status).toBe(200);
    const res = await callTool(app!, admin, 'create_webhook', {
      url: receiver.url('/sealed'),
      events: ['form.updated'],
    });
    expect(res.status).toBe(200);
    hook = res.body;
    receiver.setSecrets('/sealed', [hook.secret]);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await receiver?.down();
    await drop?.();
  }, 30_000);

  it('stores the secret sealed, and a dump of the database holds neither the secret nor the key', async () => {
    const row = await stored();
    expect(row.secret).toMatch(/^fwse1:[0-9a-f]{8}:/);
    expect(new WebhookSecretBox([Buffer.from(keyA, 'base64')]).open(row.secret)).toBe(hook.secret);
    expect(() => new WebhookSecretBox([randomBytes(32)]).open(row.secret)).toThrow(SealedSecretError);
    const body = hook.secret.slice('whsec_'.length);
    const needles = [
      body,
      Buffer.from(body, 'base64').toString('hex'),
      keyA,
      Buffer.from(keyA, 'base64').toString('hex'),
    ];
    expect(await tablesHolding(needles)).toEqual([]);
    // The search sees what is stored: the sealed secret is found where it is.
    expect(await tablesHolding([row.secret])).toEqual(['webhook_endpoints']);
    expect(await deliveredVerifiedBy()).toEqual([hook.secret]);
  });

  it('stores the answer of create_webhook and rotate_webhook_secret under an Idempotency-Key sealed: a replay shows the secret, a dump does not', async () => {
    const once = (key: string) => ({ 'Idempotency-Key': `${key}-${randomBytes(4).toString('hex')}` });
    const createKey = once('create');
    const args = { url: receiver.url('/idempotent'), events: ['form.updated'] };
    const created = await callTool(app!, admin, 'create_webhook', args, createKey);
    expect(created.status).toBe(200);
    const rotateKey = once('rotate');
    const rotated = await callTool(app!, admin, 'rotate_webhook_secret', { webhookId: created.body.id }, rotateKey);
    expect(rotated.status).toBe(200);

    const db = app!.get(DataSource);
    const [{ text }] = await db.query(
      `SELECT coalesce(string_agg(k::text, E'\\n'), '') AS text FROM idempotency_keys k WHERE tool IN ('create_webhook', 'rotate_webhook_secret')`,
    );
    expect(text).toContain('fwse1:');
    for (const secret of [created.body.secret, rotated.body.secret])
      expect(text).not.toContain(secret.slice('whsec_'.length));

    // A retry gets the first answer, byte for byte, its secret included.
    const again = await callTool(app!, admin, 'create_webhook', args, createKey);
    expect([again.status, again.headers['idempotency-replayed'], again.text]).toEqual([200, 'true', created.text]);
    const rotatedAgain = await callTool(
      app!,
      admin,
      'rotate_webhook_secret',
      { webhookId: created.body.id },
      rotateKey,
    );
    expect([rotatedAgain.status, rotatedAgain.headers['idempotency-replayed'], rotatedAgain.text]).toEqual([
      200,
      'true',
      rotated.text,
    ]);
    expect((await callTool(app!, admin, 'delete_webhook', { webhookId: created.body.id })).status).toBe(200);
  });

  it('stores the answer of export_responses under an Idempotency-Key sealed: a replay gives the same link, a dump gives none', async () => {
    const form = await callTool(app!, admin, 'create_form', {
      title: 'Kept',
      blocks: [{ type: 'short_text', title: 'Name' }],
    });
    const key = { 'Idempotency-Key': `export-${randomBytes(4).toString('hex')}` };
    const args = { publicId: form.body.publicId, format: 'csv' };
    const exported = await callTool(app!, admin, 'export_responses', args, key);
    expect(exported.status).toBe(200);
    const token = new URL(exported.body.url).searchParams.get('token')!;
    expect(token.length).toBeGreaterThan(40);
    const [{ text }] = await app!
      .get(DataSource)
      .query(
        `SELECT coalesce(string_agg(k::text, E'\\n'), '') AS text FROM idempotency_keys k WHERE tool = 'export_responses'`,
      );
    expect(text).toContain('fwse1:');
    expect(text).not.toContain(token);
    const again = await callTool(app!, admin, 'export_responses', args, key);
    expect([again.status, again.headers['idempotency-replayed'], again.text]).toEqual([200, 'true', exported.text]);
  });

  it('rotates the key: a start with a new key and the old one as previous reseals every secret, and deliveries verify', async () => {
    // A rotated endpoint has two secrets stored: both are resealed.
    const rotated = await callTool(app!, admin, 'rotate_webhook_secret', { webhookId: hook.id });
    expect(rotated.status).toBe(200);
    const old = hook.secret;
    hook = { ...hook, secret: rotated.body.secret };
    receiver.setSecrets('/sealed', [hook.secret, old]);
    const before = await stored();

    await start({ WEBHOOK_SECRET_KEY: keyB, WEBHOOK_SECRET_KEY_PREVIOUS: keyA });
    const after = await stored();
    const underB = new WebhookSecretBox([Buffer.from(keyB, 'base64')]);
    expect(after.secret.startsWith(underB.currentPrefix)).toBe(true);
    expect(after.previous_secret!.startsWith(underB.currentPrefix)).toBe(true);
    expect(after.secret.split(':')[1]).not.toBe(before.secret.split(':')[1]);
    expect([underB.open(after.secret), underB.open(after.previous_secret!)]).toEqual([hook.secret, old]);
    expect(await deliveredVerifiedBy()).toEqual([hook.secret, old]);

    // The old key may go now: nothing needs it.
    await start({ WEBHOOK_SECRET_KEY: keyB });
    expect(await deliveredVerifiedBy()).toEqual([hook.secret, old]);
    // (On the embedded database, other test files' endpoints are here too, sealed under their own key.)
    expect((await app!.get(WebhooksService).resealSecrets()).unreadable).not.toContain(hook.id);
    expect((await stored()).secret).toBe(after.secret);
  });

  it('names the endpoints that no configured key opens (a lost key), without touching them', async () => {
    await start({ WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'), WEBHOOKS_DELIVERY: 'false' });
    const before = await stored();
    expect((await app!.get(WebhooksService).resealSecrets()).unreadable).toContain(hook.id);
    expect(await stored()).toEqual(before);
  });

  it('seals a secret stored in plain text (before encryption) at the next start', async () => {
    await start({ WEBHOOK_SECRET_KEY: keyB, WEBHOOKS_DELIVERY: 'false' });
    await app!
      .get(DataSource)
      .query('UPDATE webhook_endpoints SET secret = $2, previous_secret = NULL WHERE id = $1', [hook.id, hook.secret]);
    receiver.setSecrets('/sealed', [hook.secret]);
    await start({ WEBHOOK_SECRET_KEY: keyB });
    const row = await stored();
    expect(row.secret).toMatch(/^fwse1:/);
    expect(row.secret).not.toContain(hook.secret.slice('whsec_'.length));
    expect(new WebhookSecretBox([Buffer.from(keyB, 'base64')]).open(row.secret)).toBe(hook.secret);
    expect(await deliveredVerifiedBy()).toEqual([hook.secret]);
  });
});

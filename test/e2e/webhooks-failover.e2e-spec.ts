import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { createForm, createToken, createWorkspace } from '../factories';
import { callToolAt, destroyAgents, ensureBuilt, Instance, TEST_WEBHOOK_SECRET_KEY, waitUntil } from '../utils/cluster';
import { callTool } from '../utils/http';
import { createAppOn, isolatedDatabaseUrl, WebhookReceiver } from '../utils/webhooks';

/**
 * The outbox survives the instance: built instances (dist/), one killed with SIGKILL right after
 * it committed a response; the event is delivered by another instance started afterwards.
 */
describe('webhooks across instances', () => {
  let setup: NestFastifyApplication;
  let drop: () => Promise<void>;
  let url: string;
  let receiver: WebhookReceiver;
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
    WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOKS_RETRY_BASE_MS: '100',
  });

  beforeAll(async () => {
    ensureBuilt();
    const isolated = await isolatedDatabaseUrl('hooks_failover');
    url = isolated.url;
    drop = isolated.drop;
    // Seals the endpoints' secrets with the key of the built instances (production), which deliver.
    setup = await createAppOn(url, {
      WEBHOOKS_DELIVERY: 'false',
      WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
      WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
    });
    await setup.init();
    receiver = await WebhookReceiver.start();
  }, 120_000);

  afterAll(async () => {
    destroyAgents();
    await Promise.all([a?.stop(), b?.stop()]);
    await setup?.close();
    await receiver?.down();
    await drop?.();
  }, 30_000);

  /**
   * An admin's workspace with a one-question form and an endpoint for response.created at `path`,
   * whose answers the receiver holds until `release()`.
   */
  async function heldEndpoint(path: string) {
    const ws = await createWorkspace(setup, 'pro');
    const { token } = await createToken(setup, ws, { role: 'admin' });
    const form = await createForm(setup, ws, { blocks: [{ type: 'short_text', title: 'Name' }] });
    const hook = await callTool(setup, token, 'create_webhook', {
      url: receiver.url(path),
      events: ['response.created'],
    });
    expect(hook.status).toBe(200);
    receiver.setSecrets(path, [hook.body.secret]);
    let release!: () => void;
    receiver.script(path, { status: 200, hold: new Promise<void>((resolve) => (release = resolve)) });
    return { token, form, hook, release };
  }

  /** Starts instance `name` and submits `answer` through it to the form of `held` (a heldEndpoint). */
  async function submitThrough(name: string, held: Awaited<ReturnType<typeof heldEndpoint>>, answer: string) {
    const instance = await Instance.start(name, env());
    try {
      const created = await callToolAt(instance.port, held.token, 'create_response', {
        publicId: held.form.publicId,
        answers: { [held.form.blocks[0].id]: answer },
      });
      return { instance, created };
    } catch (err) {
      await instance.stop(); // not yet known to afterAll
      throw err;
    }
  }

  /** Waits until the endpoint's one delivery is recorded as delivered. */
  async function delivered(endpointId: string, withinMs: number, what: string) {
    const db = setup.get(DataSource);
    await waitUntil(
      async () =>
        (await db.query(`SELECT status FROM webhook_deliveries WHERE endpoint_id = $1`, [endpointId]))[0]?.status ===
        'delivered',
      withinMs,
      what,
    );
  }

  it('delivers the event of a commit whose instance was killed (SIGKILL) right after it', async () => {
    // If the doomed instance gets to send it, its request is held unanswered until it is dead.
    const held = await heldEndpoint('/failover');
    const { form, hook, release } = held;

    const sent = await submitThrough('a', held, 'Ada');
    a = sent.instance;
    const created = sent.created;
    a.signal('SIGKILL');
    expect(created.status).toBe(200);
    await a.exited;
    const killedAt = Date.now();
    release();

    b = await Instance.start('b', env());
    const db = setup.get(DataSource);
    await delivered(hook.body.id, 60_000, 'the other instance delivered the event');
    const got = receiver.for('/failover');
    expect(got.length).toBeGreaterThanOrEqual(1);
    expect(receiver.unverified).toEqual([]);
    expect(new Set(got.map((r) => r.id)).size).toBe(1);
    expect(got.at(-1)!.payload).toMatchObject({
      type: 'response.created',
      data: { form: { publicId: form.publicId }, response: { id: created.json.id } },
    });
    // The answered attempt was made after the first instance died: by the second one.
    const attempts: Array<{ status_code: number | null; attempted_at: Date }> = await db.query(
      `SELECT a.status_code, a.attempted_at FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1`,
      [hook.body.id],
    );
    expect(attempts.filter((x) => x.status_code === 200 && x.attempted_at.getTime() >= killedAt)).toHaveLength(1);
  }, 120_000);

  it('delivers an event whose instance died in the middle of its attempt, once the claim expires', async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    const held = await heldEndpoint('/mid-attempt');
    const { hook, release } = held;
    const arrived = receiver.arrived;

    const sent = await submitThrough('a2', held, 'Grace');
    a = sent.instance;
    expect(sent.created.status).toBe(200);
    // The only instance has claimed the delivery and sent it; the answer is held, and the instance dies waiting.
    await waitUntil(async () => receiver.arrived > arrived, 20_000, 'the first instance sent the event');
    a.signal('SIGKILL');
    await a.exited;
    release();

    b = await Instance.start('b2', env());
    const db = setup.get(DataSource);
    await delivered(hook.body.id, 60_000, 'the other instance delivered the event after the claim expired');
    const got = receiver.for('/mid-attempt');
    expect(got).toHaveLength(2); // the held one (its answer never reached the dead instance), then the one that counted
    expect(got[0].id).toBe(got[1].id);
    expect(got.every((r) => r.verifiedBy.length === 1)).toBe(true);
    const [{ n }] = await db.query(
      `SELECT count(*)::int AS n FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1 AND a.status_code = 200`,
      [hook.body.id],
    );
    expect(n).toBe(1);
  }, 120_000);

  it('hands an attempt under way back when its instance stops (SIGTERM): due again at once, for any instance', async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    const held = await heldEndpoint('/stopping');
    const { hook, release } = held;
    const arrived = receiver.arrived;

    const sent = await submitThrough('a3', held, 'Hedy');
    a = sent.instance;
    expect(sent.created.status).toBe(200);
    await waitUntil(async () => receiver.arrived > arrived, 20_000, 'the instance sent the event');
    // Its delivery thread is told to stop while the answer is held: it abandons the attempt.
    const stopping = Date.now();
    a.signal('SIGTERM');
    expect(await a.exited).toBe(0);
    expect(Date.now() - stopping).toBeLessThan(10_000);
    const db = setup.get(DataSource);
    const [row] = await db.query(
      `SELECT d.status, d.attempt_count, d.claim_token, d.claimed_until,
              (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id) AS attempts
         FROM webhook_deliveries d WHERE d.endpoint_id = $1`,
      [hook.body.id],
    );
    // Released, not counted: no attempt recorded, no lease to wait for.
    expect(row).toEqual({ status: 'pending', attempt_count: 0, claim_token: null, claimed_until: null, attempts: 0 });
    release();

    b = await Instance.start('b3', env());
    await delivered(hook.body.id, 20_000, 'the other instance delivered the event without waiting for a lease');
    const got = receiver.for('/stopping');
    expect(got.length).toBeGreaterThanOrEqual(2);
    expect(new Set(got.map((r) => r.id)).size).toBe(1);
    expect(receiver.unverified).toEqual([]);
  }, 120_000);
});

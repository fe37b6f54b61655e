import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { AuditService } from '../../src/audit/audit.service';
import { Role, Scope } from '../../src/common/access/roles';
import { ClaimedDelivery, DeliveryLoopRepository } from '../../src/webhooks/delivery-loop.repository';
import { WebhookDeliveryWorker } from '../../src/webhooks/delivery.worker';
import { WebhookOutbox } from '../../src/webhooks/webhook-outbox.service';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { freePort, waitUntil } from '../utils/cluster';
import { callTool, expectError } from '../utils/http';
import { createAppOn, isolatedDatabaseUrl, WebhookReceiver } from '../utils/webhooks';

/**
 * Webhooks end to end: the app delivers to a local receiver that verifies every request with the
 * `standardwebhooks` package. Retries run on a 100 ms base (WEBHOOKS_RETRY_BASE_MS), so a day of
 * schedule takes seconds. The app runs on a schema of its own, so no other test file's instance
 * (which refuses loopback URLs) claims these deliveries.
 */
describe('webhooks', () => {
  let app: NestFastifyApplication;
  let strict: NestFastifyApplication;
  let db: DataSource;
  let drop: () => Promise<void>;
  let databaseUrl: string;
  let receiver: WebhookReceiver;
  let ws: TestWorkspace;
  let admin: string;
  let editor: string;

  const ALL_EVENTS = [
    'response.created',
    'response.deleted',
    'form.created',
    'form.updated',
    'form.published',
    'form.closed',
    'form.deleted',
  ];

  beforeAll(async () => {
    const isolated = await isolatedDatabaseUrl('hooks');
    drop = isolated.drop;
    databaseUrl = isolated.url;
    app = await createAppOn(isolated.url, { WEBHOOKS_ALLOW_PRIVATE_URLS: 'true', WEBHOOKS_RETRY_BASE_MS: '100' });
    await app.init();
    // An instance as production runs it: private URLs refused. It does not deliver, so it never claims the receiver's deliveries.
    strict = await createAppOn(isolated.url, { WEBHOOKS_DELIVERY: 'false' });
    await strict.init();
    db = app.get(DataSource);
    receiver = await WebhookReceiver.start();
    ws = await createWorkspace(app, 'pro');
    admin = (await createToken(app, ws, { role: 'admin' })).token;
    editor = (await createToken(app, ws, { role: 'editor' })).token;
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await strict?.close();
    await receiver?.down();
    await drop?.();
  }, 30_000);

  /** An endpoint for `path` on the receiver, its secret given to the receiver. */
  async function endpoint(path: string, events: string[] = ALL_EVENTS, token = admin) {
    const res = await callTool(app, token, 'create_webhook', {
      url: receiver.url(path),
      events,
      description: `test ${path}`,
    });
    expect(res.status).toBe(200);
    expect(res.body.secret).toMatch(/^whsec_/);
    receiver.setSecrets(path, [res.body.secret]);
    return res.body as { id: string; secret: string };
  }

  /** A delivered delivery of the endpoint, created `age` ago, with its one attempt; its id. */
  async function deliveredWithAttempt(endpointId: string, age = '0 seconds'): Promise<string> {
    const [row] = await db.query(
      `INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, status, attempt_count, created_at)
       VALUES ($1, $2, 'msg_stored', 'form.deleted', '{}', 'delivered', 1, now() - $3::interval) RETURNING id`,
      [ws.id, endpointId, age],
    );
    await db.query(
      `INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, duration_ms) VALUES ($1, now() - $2::interval, 200, 5)`,
      [row.id, age],
    );
    return row.id as string;
  }

  /** Which of these deliveries are still stored, each with how many attempts it has. */
  const deliveriesLeft = (ids: string[]) =>
    db.query(
      `SELECT d.id, (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id) AS attempts
         FROM webhook_deliveries d WHERE d.id = ANY ($1)`,
      [ids],
    );

  /** How many attempts of these deliveries are stored (none once the deliveries are gone). */
  const attemptsOf = async (ids: string[]): Promise<number> =>
    (await db.query('SELECT count(*)::int AS n FROM webhook_attempts WHERE delivery_id = ANY ($1)', [ids]))[0].n;

  const waitFor = (path: string, n: number, what = `${n} deliveries at ${path}`) =>
    waitUntil(async () => receiver.for(path).length >= n, 20_000, what);

  async function deliveries(webhookId: string, token = admin) {
    const res = await callTool(app, token, 'list_webhook_deliveries', { webhookId, limit: 100 });
    expect(res.status).toBe(200);
    return res.body.deliveries as Array<{
      id: string;
      eventId: string;
      type: string;
      status: string;
      payload: any; // eslint-disable-line @typescript-eslint/no-explicit-any
      redacted: string | null;
      attempts: Array<{
        statusCode: number | null;
        error: string | null;
        attemptedAt: string;
        nextAttemptAt: string | null;
      }>;
    }>;
  }

  async function newForm(token = admin, title = 'Survey') {
    const res = await callTool(app, token, 'create_form', {
      title,
      blocks: [
        { type: 'short_text', title: 'Name', required: true },
        { type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Blue'] },
      ],
    });
    expect(res.status).toBe(200);
    return res.body as { publicId: string; title: string; blocks: Array<{ id: string }> };
  }

  it('sends one signed event per change, of every kind, whatever made it (tools and the respondent page)', async () => {
    const hook = await endpoint('/all');
    const form = await newForm();
    const [name, colour] = form.blocks.map((b) => b.id);
    const updated = (
      await callTool(app, admin, 'update_form', { publicId: form.publicId, title: 'Survey 2', blocks: form.blocks })
    ).body;
    const published = (await callTool(app, admin, 'publish_form', { publicId: form.publicId })).body;
    const viaPage = await request(app.getHttpServer())
      .post(`/f/${form.publicId}`)
      .send({ answers: { [name]: 'Ada', [colour]: 'Red' } });
    expect(viaPage.status).toBe(201);
    const viaTool = (
      await callTool(app, editor, 'create_response', { publicId: form.publicId, answers: { [name]: 'Grace' } })
    ).body;
    const seen = (await callTool(app, admin, 'get_response', { publicId: form.publicId, responseId: viaTool.id })).body;
    // Sent before it is deleted (a response.created not yet sent when its response is deleted is not sent at all).
    await waitFor('/all', 5);
    expect(
      (await callTool(app, editor, 'delete_response', { publicId: form.publicId, responseId: viaTool.id })).status,
    ).toBe(200);
    const closed = (await callTool(app, admin, 'close_form', { publicId: form.publicId })).body;
    const before = (await callTool(app, admin, 'get_form', { publicId: form.publicId })).body;
    expect((await callTool(app, admin, 'delete_form', { publicId: form.publicId })).status).toBe(200);

    await waitFor('/all', 8);
    const got = receiver.for('/all');
    expect(receiver.unverified).toEqual([]);
    expect(got.every((r) => r.verifiedBy.length === 1)).toBe(true);
    const byType = (t: string) => got.filter((r) => r.payload.type === t).map((r) => r.payload);
    expect(got.map((r) => r.payload.type).sort()).toEqual(
      [
        'form.closed',
        'form.created',
        'form.deleted',
        'form.published',
        'form.updated',
        'response.created',
        'response.created',
        'response.deleted',
      ].sort(),
    );
    expect(byType('form.created')[0].data).toMatchObject({
      publicId: form.publicId,
      title: 'Survey',
      status: 'draft',
      blocks: form.blocks,
    });
    expect(byType('form.updated')[0].data).toEqual(updated);
    expect(byType('form.published')[0].data).toEqual(published);
    // A close by hand says so (issue 47: the schedule's say "schedule").
    expect(byType('form.closed')[0].data).toEqual({ ...closed, reason: 'manual' });
    // delete_form: one event, the form as it was; none for the response it deleted with it.
    expect(byType('form.deleted')[0].data).toEqual(before);
    const created = byType('response.created').map((p) => p.data);
    expect(created).toContainEqual({ form: { publicId: form.publicId, title: 'Survey 2' }, response: viaPage.body });
    expect(created).toContainEqual({ form: { publicId: form.publicId, title: 'Survey 2' }, response: seen });
    // The deletion is sent without the deleted answers.
    expect(byType('response.deleted')[0].data).toEqual({
      form: { publicId: form.publicId, title: 'Survey 2' },
      response: { id: seen.id, submittedAt: seen.submittedAt },
    });
    for (const r of got) {
      expect(Object.keys(r.payload).sort()).toEqual(['data', 'timestamp', 'type']);
      expect(r.id).toMatch(/^msg_/);
    }
    // The log: each delivered once, with its 200 (successes are recorded in batches, shortly after the receiver has them).
    await waitUntil(
      async () => (await deliveries(hook.id)).filter((d) => d.status === 'delivered').length === 8,
      10_000,
      'the 8 deliveries recorded',
    );
    const log = await deliveries(hook.id);
    expect(log).toHaveLength(8);
    expect(
      log.every((d) => d.status === 'delivered' && d.attempts.length === 1 && d.attempts[0].statusCode === 200),
    ).toBe(true);
    expect(new Set(log.map((d) => d.eventId))).toEqual(new Set(got.map((r) => r.id)));
  });

  it('writes an event only for subscribed endpoints of the workspace', async () => {
    const hook = await endpoint('/published-only', ['form.published']);
    const other = await createWorkspace(app, 'pro');
    const otherAdmin = (await createToken(app, other, { role: 'admin' })).token;
    await newForm(otherAdmin); // another workspace: never sent here
    const form = await newForm();
    await callTool(app, admin, 'publish_form', { publicId: form.publicId });
    await waitFor('/published-only', 1);
    const log = await deliveries(hook.id);
    expect(log.map((d) => d.type)).toEqual(['form.published']);
  });

  it('emits nothing when the write rolls back after its event was written', async () => {
    const hook = await endpoint('/rollback', ['form.created', 'response.created']);
    const form = await newForm();
    const answers = { [form.blocks[0].id]: 'Lost' };
    const outbox = app.get(WebhookOutbox);
    const real = outbox.emit.bind(outbox);
    // A transactional write: the event is inserted, then the write fails: the whole transaction must go.
    const spy = jest.spyOn(outbox, 'emit').mockImplementation(async (...args: Parameters<typeof real>) => {
      await real(...args);
      throw new Error('the write failed after its event was written');
    });
    // create_response writes its event in the one statement that stores the response: a failure in
    // any part of that statement (here its audit record) takes the event with it...
    const auditService = app.get(AuditService);
    const record = auditService.recordJson.bind(auditService);
    const audit = jest
      .spyOn(auditService, 'recordJson')
      .mockImplementation((...args: Parameters<typeof record>) => ({ ...record(...args), workspaceId: null as never }));
    // ...with an Idempotency-Key too, which that same statement claims (with the answer).
    try {
      expectError(
        await callTool(app, editor, 'create_response', { publicId: form.publicId, answers }),
        500,
        'internal_error',
      );
      expectError(
        await callTool(
          app,
          editor,
          'create_response',
          { publicId: form.publicId, answers },
          { 'Idempotency-Key': `rollback-r-${Date.now()}` },
        ),
        500,
        'internal_error',
      );
      audit.mockRestore();
      const keyed = await callTool(
        app,
        admin,
        'create_form',
        { title: 'Lost too' },
        { 'Idempotency-Key': `rollback-${Date.now()}` },
      );
      expectError(keyed, 500, 'internal_error');
    } finally {
      spy.mockRestore();
      audit.mockRestore();
    }
    const after = await newForm(admin, 'After');
    await waitUntil(
      async () => receiver.for('/rollback').some((r) => r.payload.data.publicId === after.publicId),
      20_000,
      'the event after the rollback',
    );
    const types = (await deliveries(hook.id)).map((d) => d.type).sort();
    expect(types).toEqual(['form.created', 'form.created']); // `form` and `after`: nothing of the rolled-back writes
    // Nor did anything of them reach the receiver.
    expect(receiver.for('/rollback').map((r) => r.payload.type)).toEqual(['form.created', 'form.created']);
    const [{ n }] = await db.query(
      `SELECT count(*)::int AS n FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1`,
      [form.publicId],
    );
    expect(n).toBe(0);
  });

  it('writes response.created with the response whichever path stored it, as get_response shows it', async () => {
    const hook = await endpoint('/created', ['response.created']);
    const form = await newForm();
    await callTool(app, admin, 'publish_form', { publicId: form.publicId });
    const [name, colour] = form.blocks.map((b) => b.id);
    // This instance knows the form (it just published it): the one-statement path, for the tool and the page.
    const viaTool = await callTool(app, editor, 'create_response', {
      publicId: form.publicId,
      answers: { [name]: 'Ada', [colour]: 'Blue' },
    });
    expect(viaTool.status).toBe(200);
    // The other instance does not: it locks, reads and validates, then runs the same statement.
    const viaOther = await request(strict.getHttpServer())
      .post(`/f/${form.publicId}`)
      .send({ answers: { [name]: 'Grace' } });
    expect(viaOther.status).toBe(201);
    await waitFor('/created', 2);
    const got = receiver.for('/created').map((r) => r.payload.data);
    expect(got).toContainEqual({ form: { publicId: form.publicId, title: 'Survey' }, response: viaTool.body });
    expect(got).toContainEqual({ form: { publicId: form.publicId, title: 'Survey' }, response: viaOther.body });
    // The event is the response as get_response shows it (labels, not choice ids; the stored time).
    const seen = await callTool(app, admin, 'get_response', { publicId: form.publicId, responseId: viaTool.body.id });
    expect(got).toContainEqual({ form: { publicId: form.publicId, title: 'Survey' }, response: seen.body });
    expect(viaTool.body.answers).toEqual({ [name]: 'Ada', [colour]: 'Blue' });
    const log = await deliveries(hook.id);
    expect(log).toHaveLength(2);
  });

  it('retries a receiver that is down, then up, with the same webhook-id, honouring Retry-After', async () => {
    const down = await WebhookReceiver.start(await freePort());
    await down.down(); // nothing listens on its port yet
    const res = await callTool(app, admin, 'create_webhook', { url: down.url('/later'), events: ['form.created'] });
    down.setSecrets('/later', [res.body.secret]);
    down.script('/later', { status: 503, headers: { 'Retry-After': '1' } });
    const form = await newForm();
    await waitUntil(
      async () => (await deliveries(res.body.id))[0]?.attempts.length >= 1,
      20_000,
      'a first failed attempt',
    );
    await down.up();
    try {
      await waitUntil(async () => down.for('/later').length >= 2, 30_000, 'the retries after the receiver came back');
      const got = down.for('/later');
      expect(got.map((r) => r.answered)).toEqual([503, 200]);
      expect(new Set(got.map((r) => r.id)).size).toBe(1);
      expect(got.every((r) => r.verifiedBy.length === 1 && r.payload.data.publicId === form.publicId)).toBe(true);
      await waitUntil(
        async () => (await deliveries(res.body.id))[0].status === 'delivered',
        10_000,
        'the delivery recorded',
      );
      const [delivery] = await deliveries(res.body.id);
      expect(delivery.eventId).toBe(got[0].id);
      const attempts = delivery.attempts;
      expect(attempts[0]).toMatchObject({ statusCode: null, error: 'connection refused' });
      expect(attempts.at(-1)).toMatchObject({ statusCode: 200, error: null, nextAttemptAt: null });
      const after503 = attempts.find((a) => a.statusCode === 503)!;
      expect(after503.nextAttemptAt).not.toBeNull();
      // Retry-After: 1 asked for more than the schedule's delay (about 100 ms at this point).
      expect(Date.parse(after503.nextAttemptAt!) - Date.parse(after503.attemptedAt)).toBeGreaterThanOrEqual(1000);
    } finally {
      await down.down();
    }
  });

  it('redelivers a delivery with the same webhook-id', async () => {
    const hook = await endpoint('/again', ['form.created']);
    await newForm();
    await waitFor('/again', 1);
    const [delivery] = await deliveries(hook.id);
    await waitUntil(
      async () => (await deliveries(hook.id))[0].status === 'delivered',
      10_000,
      'the first delivery recorded',
    );
    const res = await callTool(app, admin, 'redeliver_webhook', { deliveryId: delivery.id });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: delivery.id, eventId: delivery.eventId, status: 'pending' });
    await waitFor('/again', 2);
    const [first, second] = receiver.for('/again');
    expect(second.id).toBe(first.id);
    expect(second.body).toBe(first.body);
    expect(second.verifiedBy).toHaveLength(1);
    await waitUntil(
      async () => (await deliveries(hook.id))[0].attempts.length === 2,
      10_000,
      'the second attempt logged',
    );
    expectError(
      await callTool(app, admin, 'redeliver_webhook', { deliveryId: '00000000-0000-4000-8000-000000000000' }),
      404,
      'not_found',
    );
  });

  it("records a receiver's answer with a NUL byte once, as delivered, and the rest of its batch with it", async () => {
    // Issue 23: `200 "ok\0"` failed the statement recording the whole batch, and every delivery of
    // it (other workspaces' too) was sent again every ~20 s, past its schedule and the 10-attempt cap.
    const hook = await endpoint('/nul', ['form.created']);
    receiver.script('/nul', { status: 200, body: Buffer.from('ok\0 \xff', 'latin1') });
    const other = await createWorkspace(app, 'pro');
    const otherAdmin = (await createToken(app, other, { role: 'admin' })).token;
    const otherHook = await endpoint('/nul-neighbour', ['form.created'], otherAdmin);
    // Both events due together, so that one claim and one record take both.
    await db.query(
      `INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
       VALUES ($1, $2, 'msg_nul_1', 'form.created', '{"type":"form.created"}', now()),
              ($3, $4, 'msg_nul_2', 'form.created', '{"type":"form.created"}', now())`,
      [ws.id, hook.id, other.id, otherHook.id],
    );
    await waitFor('/nul', 1);
    await waitFor('/nul-neighbour', 1);
    const recorded = async (webhookId: string, token: string) => {
      const log = await deliveries(webhookId, token);
      return log.length === 1 && log[0].status === 'delivered' ? log[0] : undefined;
    };
    await waitUntil(async () => !!(await recorded(hook.id, admin)), 10_000, 'the NUL answer recorded');
    await waitUntil(async () => !!(await recorded(otherHook.id, otherAdmin)), 10_000, "the neighbour's recorded");
    const mine = (await recorded(hook.id, admin))!;
    expect(mine.attempts).toHaveLength(1);
    expect(mine.attempts[0]).toMatchObject({ statusCode: 200, error: null, responseBody: 'ok\ufffd \ufffd' });
    expect((await recorded(otherHook.id, otherAdmin))!.attempts).toMatchObject([
      { statusCode: 200, responseBody: 'ok' },
    ]);
    // Sent once each: nothing comes again once a lease would have ended.
    const [{ leased }] = await db.query(
      `SELECT count(*)::int AS leased FROM webhook_deliveries WHERE event_id LIKE 'msg_nul_%' AND claim_token IS NOT NULL`,
    );
    expect(leased).toBe(0);
    expect(receiver.for('/nul')).toHaveLength(1);
    expect(receiver.for('/nul-neighbour')).toHaveLength(1);
  });

  it('keeps no deleted answers in the delivery log, and neither sends nor redelivers them', async () => {
    const hook = await endpoint('/forget', ['response.created', 'response.deleted']);
    const form = await newForm();
    const [name] = form.blocks.map((b) => b.id);
    expect((await callTool(app, admin, 'publish_form', { publicId: form.publicId })).status).toBe(200);
    const respond = async (answer: string) =>
      (await callTool(app, editor, 'create_response', { publicId: form.publicId, answers: { [name]: answer } })).body
        .id as string;
    const log = async () => {
      const all = await deliveries(hook.id);
      const of = (responseId: string, type = 'response.created') =>
        all.find((d) => d.type === type && d.payload.data.response.id === responseId)!;
      return { all, of };
    };

    // r1 is delivered; r2's only attempt is answered 503 "in an hour", so it is still pending when deleted.
    const r1 = await respond('secret-one');
    await waitFor('/forget', 1);
    await waitUntil(async () => (await log()).of(r1).status === 'delivered', 10_000, 'r1 recorded as delivered');
    receiver.script('/forget', { status: 503, headers: { 'Retry-After': '3600' } });
    const r2 = await respond('secret-two');
    await waitFor('/forget', 2);
    await waitUntil(async () => (await log()).of(r2).attempts.length === 1, 10_000, "r2's failed attempt recorded");

    for (const responseId of [r1, r2]) {
      const res = await callTool(app, editor, 'delete_response', { publicId: form.publicId, responseId });
      expect(res.status).toBe(200);
    }
    const after = await log();
    // Shown redacted: the response's id and time, not its answers.
    expect(JSON.stringify(after.all)).not.toMatch(/secret-(one|two)/);
    const delivered = after.of(r1);
    expect(delivered).toMatchObject({ status: 'delivered', redacted: 'response_deleted' });
    expect(Object.keys(delivered.payload.data.response).sort()).toEqual(['id', 'submittedAt']);
    // Not sent again: 404 with a hint that says why.
    const again = await callTool(app, admin, 'redeliver_webhook', { deliveryId: delivered.id });
    expectError(again, 404, 'not_found');
    expect(again.body.error.hint).toMatch(/not sent again/);
    expect(again.body.error.message).toMatch(/response was deleted/);
    // r2's pending response.created is not sent at all; its response.deleted is sent, redacted.
    expect(after.of(r2)).toMatchObject({ status: 'failed', redacted: 'response_deleted', nextAttemptAt: null });
    expect(after.of(r2).attempts.map((a) => a.error)).toEqual([
      'the endpoint answered 503',
      'not sent: the response was deleted before it was delivered',
    ]);
    await waitUntil(
      async () => receiver.for('/forget').filter((r) => r.payload.type === 'response.deleted').length === 2,
      10_000,
      'both response.deleted events sent',
    );
    const sent = receiver.for('/forget');
    expect(sent.filter((r) => r.payload.type === 'response.created')).toHaveLength(2);
    // (Each response.created was sent once, before the delete; no later request carries the answers.)
    expect(
      sent
        .filter((r) => r.payload.type === 'response.deleted')
        .map((r) => r.body)
        .join(),
    ).not.toMatch(/secret-(one|two)/);
    expect(
      sent.find((r) => r.payload.type === 'response.deleted' && r.payload.data.response.id === r2)!.payload.data,
    ).toEqual({
      form: { publicId: form.publicId, title: 'Survey' },
      response: { id: r2, submittedAt: expect.any(String) },
    });

    // delete_form: the answers of every response of the form.
    const r3 = await respond('secret-three');
    await waitUntil(async () => (await log()).of(r3)?.status === 'delivered', 10_000, 'r3 recorded as delivered');
    expect((await callTool(app, admin, 'delete_form', { publicId: form.publicId })).status).toBe(200);
    const gone = (await log()).of(r3);
    expect(gone.redacted).toBe('form_deleted');
    expect(JSON.stringify(await deliveries(hook.id))).not.toMatch(/secret-three/);
    const refused = await callTool(app, admin, 'redeliver_webhook', { deliveryId: gone.id });
    expectError(refused, 404, 'not_found');
    expect(refused.body.error.message).toMatch(/form was deleted/);
  });

  it('signs with both secrets for 24 hours after a rotation, and each verifies', async () => {
    const hook = await endpoint('/rotate', ['form.created']);
    const rotated = await callTool(app, admin, 'rotate_webhook_secret', { webhookId: hook.id });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(hook.secret);
    const overlap = Date.parse(rotated.body.previousSecretExpiresAt) - Date.now();
    expect(overlap).toBeGreaterThan(23.9 * 3600_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3600_000);
    receiver.setSecrets('/rotate', [rotated.body.secret, hook.secret]);
    await newForm();
    await waitFor('/rotate', 1);
    const [got] = receiver.for('/rotate');
    expect(got.signature.split(' ')).toHaveLength(2);
    expect(got.verifiedBy.sort()).toEqual([rotated.body.secret, hook.secret].sort());
    // Once the overlap is over, only the new secret signs.
    await db.query(
      `UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`,
      [hook.id],
    );
    await newForm();
    await waitFor('/rotate', 2);
    const later = receiver.for('/rotate')[1];
    expect(later.signature.split(' ')).toHaveLength(1);
    expect(later.verifiedBy).toEqual([rotated.body.secret]);
  });

  it('pauses deliveries while the workspace is Free, keeps the events, and sends them on Pro', async () => {
    const team = await createWorkspace(app, 'pro');
    const owner = (await createToken(app, team, { role: 'owner' })).token;
    const hook = await endpoint('/paused', ['response.created'], owner);
    const form = await newForm(owner);
    await callTool(app, owner, 'publish_form', { publicId: form.publicId });
    await db.query(`UPDATE workspaces SET plan = 'free' WHERE id = $1`, [team.id]);
    // The respondent page still takes answers on Free: the event is kept.
    expect(
      (
        await request(app.getHttpServer())
          .post(`/f/${form.publicId}`)
          .send({ answers: { [form.blocks[0].id]: 'Kept' } })
      ).status,
    ).toBe(201);
    const listed = await callTool(app, owner, 'list_webhooks', {});
    expect(listed.body.deliveriesPaused).toBe(true);
    // A claim by the loop sets it aside, out of the due index: listed as pending, never attempted.
    await app.get(WebhookDeliveryWorker).claimAndStart(32);
    const [paused] = await deliveries(hook.id, owner);
    expect(paused).toMatchObject({ type: 'response.created', status: 'pending', attemptCount: 0, attempts: [] });
    expect((await db.query('SELECT status FROM webhook_deliveries WHERE id = $1', [paused.id]))[0].status).toBe(
      'paused',
    );
    const pendingOnly = await callTool(app, owner, 'list_webhook_deliveries', {
      webhookId: hook.id,
      status: 'pending',
    });
    expect(pendingOnly.body.deliveries.map((d: { id: string }) => d.id)).toEqual([paused.id]);
    expect(receiver.for('/paused')).toHaveLength(0);
    await db.query(`UPDATE workspaces SET plan = 'pro' WHERE id = $1`, [team.id]);
    await waitFor('/paused', 1);
    expect(receiver.for('/paused')[0].payload.data.response.answers).toEqual({ [form.blocks[0].id]: 'Kept' });
  });

  it('disables an endpoint that answers 410 Gone, and says why', async () => {
    const hook = await endpoint('/gone', ['form.created']);
    receiver.script('/gone', { status: 410 });
    await newForm();
    await waitUntil(
      async () =>
        (await callTool(app, admin, 'list_webhooks', {})).body.webhooks.find((w: { id: string }) => w.id === hook.id)
          .enabled === false,
      20_000,
      'the endpoint disabled',
    );
    const listed = (await callTool(app, admin, 'list_webhooks', {})).body.webhooks.find(
      (w: { id: string }) => w.id === hook.id,
    );
    expect(listed.disabledReason).toMatch(/410 Gone/);
    expect((await deliveries(hook.id))[0]).toMatchObject({ status: 'failed', attempts: [{ statusCode: 410 }] });
    // Disabled: later changes write nothing for it, and a redelivery is refused.
    await newForm();
    expect(await deliveries(hook.id)).toHaveLength(1);
    expectError(
      await callTool(app, admin, 'redeliver_webhook', { deliveryId: (await deliveries(hook.id))[0].id }),
      400,
      'tool_error',
    );
    // Enabled again by a person: the reason goes.
    const enabled = await callTool(app, admin, 'update_webhook', { webhookId: hook.id, enabled: true });
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
  });

  it('disables an endpoint whose every attempt failed for 5 days', async () => {
    const hook = await endpoint('/failing', ['form.created']);
    receiver.script('/failing', { status: 500 });
    // The endpoint has been failing for 5 days (moved in the database rather than waited for).
    await db.query(`UPDATE webhook_endpoints SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`, [
      hook.id,
    ]);
    await newForm();
    await waitUntil(
      async () =>
        (await callTool(app, admin, 'list_webhooks', {})).body.webhooks.find((w: { id: string }) => w.id === hook.id)
          .enabled === false,
      20_000,
      'the endpoint disabled',
    );
    const listed = (await callTool(app, admin, 'list_webhooks', {})).body.webhooks.find(
      (w: { id: string }) => w.id === hook.id,
    );
    expect(listed.disabledReason).toMatch(/failed for 5 days/);
    expect(listed.disabledReason).toMatch(/answered 500/);
  });

  it('sends a test event built from a real form of the workspace', async () => {
    const hook = await endpoint('/test', ['form.deleted']);
    const form = await newForm(admin, 'For the test');
    const res = await callTool(app, admin, 'send_test_webhook', { webhookId: hook.id, publicId: form.publicId });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      type: 'response.created',
      status: 'pending',
      payload: { test: true, type: 'response.created' },
    });
    await waitFor('/test', 1);
    const [got] = receiver.for('/test');
    expect(got.payload).toMatchObject({
      type: 'response.created',
      test: true,
      data: { form: { publicId: form.publicId, title: 'For the test' } },
    });
    expect(Object.keys(got.payload.data.response.answers)).toEqual(form.blocks.map((b) => b.id));
    const formEvent = await callTool(app, admin, 'send_test_webhook', { webhookId: hook.id, event: 'form.updated' });
    expect(formEvent.body.payload.data.publicId).toMatch(/\w+/);
  });

  it('refuses URLs that reach private, loopback, link-local or metadata addresses, unless allowed', async () => {
    const refused = [
      'http://example.com/hook', // not https
      'https://127.0.0.1/hook',
      'https://localhost:8443/hook',
      'https://[::1]/hook',
      'https://10.0.0.5/hook',
      'https://192.168.1.10/hook',
      'https://172.20.0.1/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[fd00:ec2::254]/',
      'https://[::ffff:127.0.0.1]/hook',
      'https://100.100.100.200/',
      'https://0.0.0.0/',
      'https://hooks.invalid/x', // does not resolve
      'https://user:pass@hooks.example.com/x',
      'ftp://hooks.example.com/x',
      'not a url',
    ];
    for (const url of refused) {
      const res = await callTool(strict, admin, 'create_webhook', { url, events: ['form.created'] });
      const error = expectError(res, 400, 'invalid_arguments');
      expect({ url, details: error.details }).toEqual({
        url,
        details: [{ path: '/url', message: expect.any(String) }],
      });
    }
    // A public address passes the same check (no request is sent: nothing happens in this workspace).
    const quiet = await createWorkspace(app, 'pro');
    const quietAdmin = (await createToken(app, quiet, { role: 'admin' })).token;
    const ok = await callTool(strict, quietAdmin, 'create_webhook', {
      url: 'https://93.184.215.14/hook',
      events: ['form.deleted'],
    });
    expect(ok.status).toBe(200);
    expect((await callTool(strict, quietAdmin, 'delete_webhook', { webhookId: ok.body.id })).status).toBe(200);
    // The instance that allows private URLs (development, tests) takes http:// and loopback.
    expect(
      (await callTool(app, quietAdmin, 'create_webhook', { url: 'http://127.0.0.1:9/x', events: ['form.deleted'] }))
        .status,
    ).toBe(200);
    // Moving an endpoint to a private URL is refused the same way.
    const kept = await callTool(strict, quietAdmin, 'create_webhook', {
      url: 'https://93.184.215.14/other',
      events: ['form.deleted'],
    });
    const moved = expectError(
      await callTool(strict, quietAdmin, 'update_webhook', { webhookId: kept.body.id, url: 'https://10.1.1.1/' }),
      400,
      'invalid_arguments',
    );
    expect(moved.details).toEqual([{ path: '/url', message: expect.stringMatching(/10\.1\.1\.1/) }]);
  });

  it('refuses bad arguments with their paths, never a 500', async () => {
    const bad = async (tool: string, body: unknown, path: string) => {
      const error = expectError(await callTool(app, admin, tool, body), 400, 'invalid_arguments');
      expect(error.details?.map((d) => d.path)).toContain(path);
    };
    await bad('create_webhook', { url: receiver.url('/x'), events: [] }, '/events');
    await bad('create_webhook', { url: receiver.url('/x'), events: ['form.exploded'] }, '/events/0');
    await bad('create_webhook', { url: receiver.url('/x'), events: ['form.created', 'form.created'] }, '/events');
    await bad('create_webhook', { events: ['form.created'] }, '/url');
    await bad('update_webhook', { webhookId: 'not-a-uuid' }, '/webhookId');
    await bad('list_webhook_deliveries', { status: 'lost' }, '/status');
    await bad('redeliver_webhook', { deliveryId: '12' }, '/deliveryId');
  });

  it('checks scope, plan and role: webhooks:read / webhooks:write, admin, writes on Pro', async () => {
    const scoped = (role: Role, scopes?: Scope[], w = ws) => createToken(app, w, { role, scopes }).then((t) => t.token);
    const hook = await endpoint('/access', ['form.created']);
    expectError(await callTool(app, editor, 'list_webhooks', {}), 403, 'forbidden');
    expectError(
      await callTool(app, editor, 'create_webhook', { url: receiver.url('/e'), events: ['form.created'] }),
      403,
      'forbidden',
    );
    expectError(
      await callTool(app, await scoped('admin', ['forms:read', 'forms:write']), 'list_webhooks', {}),
      403,
      'insufficient_scope',
    );
    const reader = await scoped('admin', ['webhooks:read']);
    expect((await callTool(app, reader, 'list_webhooks', {})).status).toBe(200);
    expect((await callTool(app, reader, 'list_webhook_deliveries', {})).status).toBe(200);
    for (const [tool, args] of [
      ['create_webhook', { url: receiver.url('/r'), events: ['form.created'] }],
      ['update_webhook', { webhookId: hook.id, enabled: false }],
      ['delete_webhook', { webhookId: hook.id }],
      ['rotate_webhook_secret', { webhookId: hook.id }],
      ['send_test_webhook', { webhookId: hook.id }],
    ] as const) {
      const res = await callTool(app, reader, tool, args);
      expectError(res, 403, 'insufficient_scope');
      expect(res.headers['www-authenticate']).toContain('scope="webhooks:write"');
    }
    const free = await createWorkspace(app, 'free');
    const freeAdmin = await scoped('admin', undefined, free);
    expectError(
      await callTool(app, freeAdmin, 'create_webhook', { url: receiver.url('/f'), events: ['form.created'] }),
      403,
      'pro_required',
    );
    expect((await callTool(app, freeAdmin, 'list_webhooks', {})).body).toMatchObject({
      total: 0,
      deliveriesPaused: true,
      webhooks: [],
    });
    // Another workspace's endpoint does not exist for this one.
    const other = await createWorkspace(app, 'pro');
    const otherAdmin = await scoped('admin', undefined, other);
    expectError(await callTool(app, otherAdmin, 'delete_webhook', { webhookId: hook.id }), 404, 'not_found');
    expectError(await callTool(app, otherAdmin, 'list_webhook_deliveries', { webhookId: hook.id }), 404, 'not_found');
  });

  it('shows the secret only at creation and rotation', async () => {
    const hook = await endpoint('/secret', ['form.created']);
    const listed = await callTool(app, admin, 'list_webhooks', {});
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');
    const updated = await callTool(app, admin, 'update_webhook', {
      webhookId: hook.id,
      description: 'renamed',
      events: ['form.created', 'form.closed'],
    });
    expect(updated.body).toMatchObject({ description: 'renamed', events: ['form.created', 'form.closed'] });
    expect(JSON.stringify(updated.body)).not.toContain('whsec_');
    const log = await callTool(app, admin, 'list_webhook_deliveries', {});
    expect(JSON.stringify(log.body)).not.toContain('whsec_');
    const deleted = await callTool(app, admin, 'delete_webhook', { webhookId: hook.id });
    expect(deleted.body).toEqual({ id: hook.id, deleted: true });
  });

  it("deletes an endpoint's deliveries and their attempts with it, and only those", async () => {
    const doomed = await endpoint('/doomed', ['form.deleted']);
    const kept = await endpoint('/kept', ['form.deleted']);
    const gone = await deliveredWithAttempt(doomed.id);
    const stays = await deliveredWithAttempt(kept.id);
    expect((await callTool(app, admin, 'delete_webhook', { webhookId: doomed.id })).status).toBe(200);
    expect(await deliveriesLeft([gone, stays])).toEqual([{ id: stays, attempts: 1 }]);
    expect(await attemptsOf([gone])).toBe(0);
    await callTool(app, admin, 'delete_webhook', { webhookId: kept.id });
  });

  it('records the attempts of a batch when one of its deliveries was deleted during its attempt', async () => {
    const hook = await endpoint('/batch', ['form.deleted']);
    // Three deliveries claimed by an instance (due in an hour: this app's own loop leaves them alone).
    const [kept, deleted, failed] = (await db.query(
      `INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, attempt_count, next_attempt_at, claim_token, claimed_until)
       SELECT $1, $2, 'msg_batch_' || g, 'form.deleted', '{}', 1, now() + interval '1 hour', gen_random_uuid(), now() + interval '1 hour'
         FROM generate_series(1, 3) g
       RETURNING id, claim_token`,
      [ws.id, hook.id],
    )) as Array<Pick<ClaimedDelivery, 'id' | 'claim_token'>>;
    // What delete_webhook does while the attempts are under way.
    await db.query('DELETE FROM webhook_deliveries WHERE id = ANY ($1)', [[deleted.id, failed.id]]);
    const claimed = (r: Pick<ClaimedDelivery, 'id' | 'claim_token'>) =>
      ({ ...r, endpoint_id: hook.id }) as ClaimedDelivery;
    const attempt = { attemptedAt: new Date(), statusCode: 200, durationMs: 3, error: null, responseBody: 'ok' };
    const loop = new DeliveryLoopRepository(databaseUrl, () => undefined);
    try {
      await loop.recordDelivered([kept, deleted].map((r) => ({ claimed: claimed(r), attempt })));
      await loop.recordAttempt(claimed(failed), { ...attempt, statusCode: 500 }, 'retry', new Date(), 5);
    } finally {
      await loop.end();
    }
    // The delivery still there is delivered, once: no lease left to run out and send it again.
    const [row] = await db.query(
      `SELECT status, claim_token, (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id) AS attempts
         FROM webhook_deliveries d WHERE id = $1`,
      [kept.id],
    );
    expect(row).toEqual({ status: 'delivered', claim_token: null, attempts: 1 });
    expect(await attemptsOf([deleted.id, failed.id])).toBe(0);
  });

  it('purges deliveries older than 30 days with their attempts, and keeps the others', async () => {
    const hook = await endpoint('/purged', ['form.deleted']);
    const old = await deliveredWithAttempt(hook.id, '31 days');
    const recent = await deliveredWithAttempt(hook.id, '29 days');
    expect(await app.get(WebhookDeliveryWorker).purge()).toBeGreaterThanOrEqual(1);
    expect(await deliveriesLeft([old, recent])).toEqual([{ id: recent, attempts: 1 }]);
    expect(await attemptsOf([old])).toBe(0);
  });
});

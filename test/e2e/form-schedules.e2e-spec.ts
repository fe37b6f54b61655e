import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { AccessService } from '../../src/access/access.service';
import { inWords } from '../../src/forms/schedule';
import { createToken, createWorkspace } from '../factories';
import { waitUntil } from '../utils/cluster';
import { callTool, expectError } from '../utils/http';
import { createAppOn, isolatedDatabaseUrl, WebhookReceiver } from '../utils/webhooks';

/**
 * Issue 47, item 1: a form's schedule. opensAt and closesAt on create_form / update_form, shown by
 * get_form; answers refused before and after (tools: 409 form_not_open / form_closed with the time;
 * the page says when); the status turns closed at closesAt, and two instances sweeping at once
 * close each form once, with one form.closed event (reason "schedule").
 */
describe('form schedules', () => {
  let a: NestFastifyApplication;
  let b: NestFastifyApplication;
  let db: DataSource;
  let drop: () => Promise<void>;
  let receiver: WebhookReceiver;
  let token: string;

  const ask = (name: string, args: object) => callTool(a, token, name, args);
  const iso = (msFromNow: number) => new Date(Date.now() + msFromNow).toISOString();
  const page = (publicId: string) => request(a.getHttpServer()).get(`/f/${publicId}`).set('Accept', 'text/html');
  const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/&#x27;|&#39;/g, "'");

  /** A published one-question form with `schedule`; its publicId and block id. */
  async function published(schedule: { opensAt?: string | null; closesAt?: string | null } = {}) {
    const created = await ask('create_form', {
      title: 'Sign-up',
      blocks: [{ type: 'short_text', title: 'Name' }],
      ...schedule,
    });
    expect(created.status).toBe(200);
    expect((await ask('publish_form', { publicId: created.body.publicId })).status).toBe(200);
    return { publicId: created.body.publicId as string, block: created.body.blocks[0].id as string };
  }

  const stored = async (publicId: string) =>
    (
      await db.query(
        `SELECT count(*)::int AS n FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1`,
        [publicId],
      )
    )[0].n as number;

  beforeAll(async () => {
    const isolated = await isolatedDatabaseUrl('schedules');
    drop = isolated.drop;
    const env = { WEBHOOKS_ALLOW_PRIVATE_URLS: 'true', WEBHOOKS_RETRY_BASE_MS: '100' };
    a = await createAppOn(isolated.url, env);
    await a.init();
    b = await createAppOn(isolated.url, env);
    await b.init();
    db = a.get(DataSource);
    receiver = await WebhookReceiver.start();
    const ws = await createWorkspace(a, 'pro');
    token = (await createToken(a, ws, { role: 'admin' })).token;
  }, 60_000);

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await receiver?.down();
    await drop?.();
  }, 30_000);

  it('takes opensAt and closesAt, shows them, clears them with null, and refuses a bad schedule at its path', async () => {
    const opensAt = '2030-01-01T09:00:00.000Z';
    const created = await ask('create_form', {
      title: 'Later',
      opensAt: '2030-01-01T10:00:00+01:00',
      closesAt: '2030-02-01T09:00:00Z',
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ opensAt, closesAt: '2030-02-01T09:00:00.000Z' });
    const { publicId } = created.body;
    expect((await ask('get_form', { publicId })).body).toMatchObject({ opensAt, closesAt: '2030-02-01T09:00:00.000Z' });

    // closesAt not after opensAt: at /closesAt, the times in the message, a hint; nothing changed.
    const before = await ask('update_form', { publicId, closesAt: opensAt });
    expectError(before, 400, 'invalid_arguments');
    expect(before.body.error.details).toEqual([{ path: '/closesAt', message: expect.stringContaining(opensAt) }]);
    // Moving opensAt past the stored closesAt: at /opensAt.
    const late = await ask('update_form', { publicId, opensAt: '2030-03-01T00:00:00Z' });
    expectError(late, 400, 'invalid_arguments');
    expect(late.body.error.details[0].path).toBe('/opensAt');
    const same = await ask('create_form', { title: 'x', opensAt, closesAt: opensAt });
    expectError(same, 400, 'invalid_arguments');
    expect(same.body.error.details[0].path).toBe('/closesAt');
    // Not a date-time (nor one without its zone).
    for (const bad of ['next monday', '2030-01-01T09:00:00', 42]) {
      const res = await ask('update_form', { publicId, closesAt: bad });
      expectError(res, 400, 'invalid_arguments');
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain('/closesAt');
    }
    expect((await ask('get_form', { publicId })).body).toMatchObject({ opensAt, closesAt: '2030-02-01T09:00:00.000Z' });

    const cleared = await ask('update_form', { publicId, opensAt: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ opensAt: null, closesAt: '2030-02-01T09:00:00.000Z' });
    expect((await ask('get_form', { publicId })).body.opensAt).toBeNull();
  });

  it('refuses answers before opensAt (409 form_not_open) with the time, and the page says when it opens', async () => {
    const opensAt = new Date(Math.ceil((Date.now() + 3_600_000) / 60_000) * 60_000);
    const { publicId, block } = await published({ opensAt: opensAt.toISOString() });
    const res = await ask('create_response', { publicId, answers: { [block]: 'Ada' } });
    expectError(res, 409, 'form_not_open');
    expect(res.body.error.hint).toContain(opensAt.toISOString());
    expect(await stored(publicId)).toBe(0);
    // The form stays published: it is scheduled, not closed.
    expect((await ask('get_form', { publicId })).body.status).toBe('published');

    const shown = await page(publicId);
    expect(shown.status).toBe(409);
    expect(text(shown.text)).toContain('This form is not open yet');
    expect(text(shown.text)).toContain(`This form opens on ${inWords(opensAt)}.`);
    expect(inWords(opensAt)).toMatch(/^\w+day \d{1,2} \w+ \d{4}, \d\d:\d\d UTC$/);
    const posted = await request(a.getHttpServer())
      .post(`/f/${publicId}`)
      .type('form')
      .send({ [block]: 'Ada' });
    expect(posted.status).toBe(409);
    expect(text(posted.text)).toContain('This form is not open yet');
    expect(await stored(publicId)).toBe(0);

    // Opened now: it takes answers.
    expect((await ask('update_form', { publicId, opensAt: iso(-1000) })).status).toBe(200);
    expect((await ask('create_response', { publicId, answers: { [block]: 'Ada' } })).status).toBe(200);
    expect((await page(publicId)).status).toBe(200);
  });

  it('refuses answers after closesAt (409 form_closed with the time), shows the closed page, and reads closed', async () => {
    const { publicId, block } = await published({ closesAt: iso(3_600_000) });
    expect((await ask('create_response', { publicId, answers: { [block]: 'Ada' } })).status).toBe(200);
    const closesAt = new Date(Math.floor((Date.now() - 60_000) / 1000) * 1000);
    expect((await ask('update_form', { publicId, closesAt: closesAt.toISOString() })).status).toBe(200);

    const res = await ask('create_response', { publicId, answers: { [block]: 'Bob' } });
    expectError(res, 409, 'form_closed');
    expect(res.body.error.hint).toContain(closesAt.toISOString());
    const form = (await ask('get_form', { publicId })).body;
    expect(form).toMatchObject({ status: 'closed', closedAt: closesAt.toISOString() });

    const shown = await page(publicId);
    expect(shown.status).toBe(409);
    expect(text(shown.text)).toContain('This form is closed');
    expect(text(shown.text)).toContain(`This form closed on ${inWords(closesAt)}`);
    const posted = await request(a.getHttpServer())
      .post(`/f/${publicId}`)
      .type('form')
      .send({ [block]: 'Bob' });
    expect(posted.status).toBe(409);
    expect(text(posted.text)).toContain('This form is closed');
    const upload = await request(a.getHttpServer())
      .post(`/f/${publicId}/uploads`)
      .send({ block, filename: 'a.txt', contentType: 'text/plain', size: 1 });
    expectError(upload, 409, 'form_closed');
    expect(await stored(publicId)).toBe(1);

    // Reopening needs a later closesAt (or none) first.
    expectError(await ask('publish_form', { publicId }), 400, 'tool_error');
    expect((await ask('update_form', { publicId, closesAt: null })).status).toBe(200);
    expect((await ask('publish_form', { publicId })).body.status).toBe('published');
    expect((await ask('create_response', { publicId, answers: { [block]: 'Bob' } })).status).toBe(200);
  });

  it('closes at closesAt: two instances sweeping at once close each form once, with one form.closed (reason "schedule")', async () => {
    const hook = await ask('create_webhook', { url: receiver.url('/closed'), events: ['form.closed'] });
    expect(hook.status).toBe(200);
    receiver.setSecrets('/closed', [hook.body.secret]);

    // Created closing in an hour, so the work "in time" is in time however slow the runner; then the
    // time is moved in the database (its clock is the one the close goes by), a second past.
    const forms = await Promise.all([1, 2, 3].map(() => published({ closesAt: iso(3_600_000) })));
    const { publicId, block } = forms[0];
    expect((await ask('get_form', { publicId })).body.status).toBe('published');
    expect((await ask('create_response', { publicId, answers: { [block]: 'in time' } })).status).toBe(200);
    // A close by hand says so.
    const manual = await published();
    expect((await ask('close_form', { publicId: manual.publicId })).status).toBe(200);

    const moved: Array<{ closes_at: Date }> = await db.query(
      `WITH t AS (SELECT date_trunc('milliseconds', clock_timestamp()) - interval '1 second' AS at),
       u AS (UPDATE forms SET closes_at = t.at FROM t WHERE public_id = ANY($1) RETURNING closes_at)
       SELECT closes_at FROM u`,
      [forms.map((f) => f.publicId)],
    );
    expect(moved).toHaveLength(forms.length);
    const closesAt = moved[0].closes_at.toISOString();
    // Past the time, before any sweep: read as closed, and refused.
    expect((await callTool(b, token, 'get_form', { publicId })).body).toMatchObject({
      status: 'closed',
      closedAt: closesAt,
    });
    // ... and that read stored the close.
    const [row] = await db.query(`SELECT status FROM forms WHERE public_id = $1`, [publicId]);
    expect(row.status).toBe('closed');
    expectError(
      await callTool(b, token, 'create_response', { publicId, answers: { [block]: 'late' } }),
      409,
      'form_closed',
    );
    const listed = await ask('list_forms', { status: 'closed', limit: 100 });
    expect(listed.body.forms.map((f: { publicId: string }) => f.publicId)).toEqual(
      expect.arrayContaining(forms.map((f) => f.publicId)),
    );

    const sweeps = [a, b, a, b].map((app) => app.get(AccessService).sweep());
    await Promise.all(sweeps);
    const rows: Array<{ status: string; closed_at: Date }> = await db.query(
      `SELECT status, closed_at FROM forms WHERE public_id = ANY($1)`,
      [forms.map((f) => f.publicId)],
    );
    expect(rows.map((r) => [r.status, r.closed_at.toISOString()])).toEqual(forms.map(() => ['closed', closesAt]));

    const expected = forms.length + 1;
    await waitUntil(async () => receiver.for('/closed').length >= expected, 20_000, 'the form.closed deliveries');
    await new Promise((r) => setTimeout(r, 1000)); // no second event comes
    await Promise.all([a, b].map((app) => app.get(AccessService).sweep()));
    const events = receiver.for('/closed').map((r) => r.payload);
    expect(events).toHaveLength(expected);
    expect(events.every((e) => e.type === 'form.closed')).toBe(true);
    const bySchedule = events.filter((e) => e.data.reason === 'schedule').map((e) => e.data.publicId);
    expect(bySchedule.sort()).toEqual(forms.map((f) => f.publicId).sort());
    expect(events.filter((e) => e.data.reason === 'schedule').every((e) => e.data.status === 'closed')).toBe(true);
    expect(events.filter((e) => e.data.reason === 'manual').map((e) => e.data.publicId)).toEqual([manual.publicId]);
  }, 60_000);
});

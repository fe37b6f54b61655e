import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { SessionsService } from '../../src/settings/sessions.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createToken, createWorkspace } from '../factories';
import { callTool, expectError } from '../utils/http';
import { createAppOn, isolatedDatabaseUrl } from '../utils/webhooks';

/**
 * Issue 47, items 2 and 3: a form's cap (maxResponses) and quotas, exact under concurrency. On
 * PostgreSQL two instances of the app (each its own pool, batcher and form cache) take the
 * submissions at once; on the embedded database, one. Also: the 409s, form.closed once (reason
 * "cap"), a partial that would complete past the cap stays one, a delete frees its place, the
 * counts in summaries, the bad input of both, and the page without JavaScript (full page, a quota
 * screening a respondent out at the page where they match).
 */
describe('response caps and quotas', () => {
  let a: NestFastifyApplication;
  let b: NestFastifyApplication;
  let db: DataSource;
  let drop: () => Promise<void>;
  let token: string;
  let workspaceSlug: string;
  const server = process.env.FORMWORK_TEST_DATABASE_KIND === 'server';

  const ask = (name: string, args: object, app = a) => callTool(app, token, name, args);
  const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/&#x27;|&#39;/g, "'");
  const stateOf = (html: string) => /name="_state" value="([^"]+)"/.exec(html)![1];

  /** A published form; its publicId and blocks. */
  async function published(input: Record<string, unknown>) {
    const created = await ask('create_form', { title: 'Panel', ...input });
    expect(created.status).toBe(200);
    expect((await ask('publish_form', { publicId: created.body.publicId })).status).toBe(200);
    return created.body as {
      publicId: string;
      blocks: Array<{ id: string; ref?: string; choices?: Array<{ id: string; label: string }> }>;
    };
  }

  const COUNTRY = {
    ref: 'country',
    type: 'multiple_choice',
    title: 'Where do you live?',
    required: true,
    choices: ['France', 'Germany', 'Spain'],
  };

  const count = async (publicId: string, where = 'TRUE') =>
    (
      await db.query(
        `SELECT count(*)::int AS n FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1 AND ${where}`,
        [publicId],
      )
    )[0].n as number;
  const closedEvents = (publicId: string) =>
    db.query(
      `SELECT d.payload::jsonb -> 'data' ->> 'reason' AS reason FROM webhook_deliveries d WHERE d.event_type = 'form.closed' AND d.payload::jsonb -> 'data' ->> 'publicId' = $1`,
      [publicId],
    );

  /**
   * Sends `n` submissions racing, 100 in flight at a time (more only measures how the pool sheds
   * load: 503 busy, sent again), alternating the instances (and the tool and the page's JSON post); each
   * answer's status, code and body.
   */
  async function race(publicId: string, n: number, answers: (i: number) => Record<string, unknown>) {
    const results: Array<{ status: number; code?: string; body: request.Response['body'] }> = [];
    let next = 0;
    const send = async (i: number, tries = 0): Promise<void> => {
      const app = i % 2 ? b : a;
      const res =
        i % 4 < 2
          ? await ask('create_response', { publicId, answers: answers(i) }, app)
          : await request(app.getHttpServer())
              .post(`/f/${publicId}`)
              .set('Accept', 'application/json')
              .send({ answers: answers(i) });
      // 503: the instance shed the load before storing anything (a busy machine); a client sends it again.
      if (res.status === 503 && tries < 10) return send(i, tries + 1);
      results.push({ status: res.status, code: res.body?.error?.code as string | undefined, body: res.body });
    };
    await Promise.all(
      Array.from({ length: Math.min(100, n) }, async () => {
        while (next < n) await send(next++);
      }),
    );
    return results;
  }
  const tally = (rs: Array<{ status: number; code?: string }>) =>
    rs.reduce<Record<string, number>>((acc, r) => {
      const k = `${r.status}${r.code ? ` ${r.code}` : ''}`;
      return { ...acc, [k]: (acc[k] ?? 0) + 1 };
    }, {});

  beforeAll(async () => {
    const isolated = await isolatedDatabaseUrl('limits');
    drop = isolated.drop;
    a = await createAppOn(isolated.url, { WEBHOOKS_ALLOW_PRIVATE_URLS: 'true' });
    await a.init();
    // Two instances on PostgreSQL; the embedded database is one process's: one instance.
    b = server ? await createAppOn(isolated.url, { WEBHOOKS_ALLOW_PRIVATE_URLS: 'true' }) : a;
    if (b !== a) await b.init();
    db = a.get(DataSource);
    const ws = await createWorkspace(a, 'pro');
    workspaceSlug = ws.slug;
    token = (await createToken(a, ws, { role: 'admin' })).token;
    // A subscribed endpoint, so that form.closed events are written (and counted here).
    const hook = await ask('create_webhook', { url: 'http://127.0.0.1:9/hook', events: ['form.closed'] });
    expect(hook.status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await a?.close();
    if (b !== a) await b?.close();
    await drop?.();
  }, 30_000);

  it('stores exactly maxResponses of 1,000 racing submissions; the others get 409 response_limit_reached; form.closed fires once, reason "cap"', async () => {
    const form = await published({ blocks: [{ type: 'short_text', title: 'Name' }], maxResponses: 100 });
    expect((await ask('get_form', { publicId: form.publicId })).body).toMatchObject({ maxResponses: 100 });
    const results = await race(form.publicId, 1000, (i) => ({ [form.blocks[0].id]: `person ${i}` }));
    const counts = tally(results);
    // (On failure, the tally says what else came back.)
    expect(counts).toEqual({ ...counts, '409 response_limit_reached': 900 });
    expect((counts['200'] ?? 0) + (counts['201'] ?? 0)).toBe(100);
    expect(counts['409 response_limit_reached']).toBe(900);
    expect(await count(form.publicId)).toBe(100);
    const refused = results.find((r) => r.code === 'response_limit_reached')!;
    expect(refused.body.error.hint).toEqual(expect.any(String));
    // The form closes once, however many submissions found it full, with one event.
    for (let i = 0; i < 100 && (await ask('get_form', { publicId: form.publicId })).body.status !== 'closed'; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect((await ask('get_form', { publicId: form.publicId })).body.status).toBe('closed');
    const events = await closedEvents(form.publicId);
    expect(events).toHaveLength(1);
    expect(events[0].reason).toBe('cap');
    // Counted in summaries; the page says it is full.
    expect((await ask('summarize_responses', { publicId: form.publicId })).body.cap).toEqual({
      limit: 100,
      count: 100,
    });
    const page = await request(a.getHttpServer()).get(`/f/${form.publicId}`).set('Accept', 'text/html');
    expect(page.status).toBe(409);
    expect(text(page.text)).toContain('This form is full');
  }, 120_000);

  it('keeps each quota and the cap exact under a race, naming the full quota in 409 quota_full', async () => {
    const form = await published({
      blocks: [COUNTRY],
      maxResponses: 40,
      quotas: [
        { name: 'France', limit: 30, when: { block: 'country', op: 'equals', value: 'France' } },
        { name: 'Germany', limit: 20, when: { block: 'country', op: 'equals', value: 'Germany' } },
      ],
    });
    const [country] = form.blocks;
    const results = await race(form.publicId, 300, (i) => ({ [country.id]: i % 3 === 0 ? 'Germany' : 'France' }));
    const stored = results.filter((r) => r.status < 300).length;
    expect(stored).toBe(40);
    expect(await count(form.publicId)).toBe(40);
    const fr = await count(form.publicId, `r.answers ->> '${country.id}' = '${country.choices![0].id}'`);
    const de = await count(form.publicId, `r.answers ->> '${country.id}' = '${country.choices![1].id}'`);
    expect(fr).toBeLessThanOrEqual(30);
    expect(de).toBeLessThanOrEqual(20);
    expect(fr + de).toBe(40);
    for (const r of results.filter((x) => x.status >= 300))
      expect(['quota_full', 'response_limit_reached']).toContain(r.code);
    const quotaRefusal = results.find((r) => r.code === 'quota_full');
    if (quotaRefusal) expect(quotaRefusal.body.error.details[0].message).toMatch(/"(France|Germany)"/);
    const summary = (await ask('summarize_responses', { publicId: form.publicId })).body;
    expect(summary.cap).toEqual({ limit: 40, count: 40 });
    expect(summary.quotas).toEqual([
      { name: 'France', limit: 30, count: fr },
      { name: 'Germany', limit: 20, count: de },
    ]);
    // The results page's Summary shows the same counts and limits.
    const owner = await a.get(WorkspacesService).addMember(workspaceSlug, 'owner-limits@example.com', 'admin');
    const session = await a.get(SessionsService).start(owner.user.id);
    const resultsPage = await request(a.getHttpServer())
      .get(`/settings/w/${workspaceSlug}/forms/${form.publicId}`)
      .set('Cookie', `fw_session=${session}`);
    expect(resultsPage.status).toBe(200);
    const shown = text(resultsPage.text).replace(/\s+/g, ' ');
    expect(shown).toContain('All responses (maxResponses) 40 40 (full)');
    expect(shown).toContain(`France ${fr} 30`);
    expect(shown).toContain(`Germany ${de} 20`);
  }, 120_000);

  it('fills a quota exactly, then refuses its matches with 409 quota_full naming it while others still count', async () => {
    const form = await published({
      blocks: [COUNTRY],
      quotas: [{ name: 'Spain', limit: 25, when: { block: 'country', op: 'equals', value: 'Spain' } }],
    });
    const [country] = form.blocks;
    const results = await race(form.publicId, 200, (i) => ({ [country.id]: i % 2 ? 'Spain' : 'France' }));
    expect(tally(results)['409 quota_full']).toBe(75);
    expect(await count(form.publicId)).toBe(125);
    const refused = results.find((r) => r.code === 'quota_full')!;
    expect(refused.body.error.details[0].message).toContain('"Spain"');
    // A keyed call refused is refused again, the same, when retried with its key; nothing stored.
    const body = { publicId: form.publicId, answers: { [country.id]: 'Spain' } };
    const keyed = await callTool(a, token, 'create_response', body, { 'Idempotency-Key': 'spain-full-1' });
    expect(expectError(keyed, 409, 'quota_full').message).toContain('"Spain"');
    const again = await callTool(a, token, 'create_response', body, { 'Idempotency-Key': 'spain-full-1' });
    expectError(again, 409, 'quota_full');
    expect(await count(form.publicId)).toBe(125);
    expect((await ask('get_form', { publicId: form.publicId })).body.quotas).toEqual([
      {
        name: 'Spain',
        limit: 25,
        when: { block: country.id, op: 'equals', value: country.choices![2].id },
        onFull: 'end',
      },
    ]);
  }, 60_000);

  it('keeps a partial that would complete past the cap a partial, and a deleted response frees its place', async () => {
    const form = await published({
      blocks: [{ type: 'short_text', title: 'Name', required: true }],
      partialResponses: true,
      maxResponses: 1,
    });
    const block = form.blocks[0].id;
    const partial = await ask('create_response', { publicId: form.publicId, answers: {}, partial: true });
    expect(partial.status).toBe(200);
    const first = await ask('create_response', { publicId: form.publicId, answers: { [block]: 'Ada' } });
    expect(first.status).toBe(200);
    const completing = await ask('update_response', {
      publicId: form.publicId,
      responseId: partial.body.id,
      answers: { [block]: 'Bob' },
      complete: true,
    });
    expectError(completing, 409, 'response_limit_reached');
    const still = await ask('get_response', { publicId: form.publicId, responseId: partial.body.id });
    expect(still.body.status).toBe('partial');
    // A delete takes a response off the count: the partial then completes.
    expect((await ask('delete_response', { publicId: form.publicId, responseId: first.body.id })).status).toBe(200);
    const done = await ask('update_response', {
      publicId: form.publicId,
      responseId: partial.body.id,
      answers: { [block]: 'Bob' },
      complete: true,
    });
    expect(done.status).toBe(200);
    expect(await count(form.publicId)).toBe(1);
  });

  it('refuses a cap below the responses stored with a hint saying how many, unless closeNow; and quotas naming what does not exist', async () => {
    const form = await published({ blocks: [COUNTRY], endings: [{ ref: 'sorry', title: 'Sorry' }] });
    const [country] = form.blocks;
    for (let i = 0; i < 3; i++)
      expect(
        (await ask('create_response', { publicId: form.publicId, answers: { [country.id]: 'France' } })).status,
      ).toBe(200);
    const low = await ask('update_form', { publicId: form.publicId, maxResponses: 2 });
    const err = expectError(low, 400, 'invalid_arguments');
    expect(err.details![0].path).toBe('/maxResponses');
    expect(err.hint).toContain('3');
    expect((await ask('get_form', { publicId: form.publicId })).body.maxResponses).toBeNull();

    const misspelt = await ask('update_form', {
      publicId: form.publicId,
      quotas: [
        { name: 'FR', limit: 5, when: { block: 'contry', op: 'equals', value: 'France' }, onFull: 'ending:sory' },
      ],
    });
    const bad = expectError(misspelt, 400, 'invalid_arguments');
    expect(bad.details).toEqual(
      expect.arrayContaining([
        { path: '/quotas/0/when/block', message: expect.stringContaining('did you mean "country"?') },
        { path: '/quotas/0/onFull', message: expect.stringContaining('did you mean "sorry"?') },
      ]),
    );
    expect((await ask('get_form', { publicId: form.publicId })).body.quotas).toBeUndefined();

    // Beyond what the counters hold (a PostgreSQL integer): refused at its path, never a 500.
    const huge = expectError(
      await ask('update_form', {
        publicId: form.publicId,
        maxResponses: 3e9,
        quotas: [{ name: 'FR', limit: 3e9, when: { block: 'country', op: 'equals', value: 'France' } }],
      }),
      400,
      'invalid_arguments',
    );
    expect(huge.details!.map((d) => d.path)).toContain('/maxResponses');
    const hugeQuota = expectError(
      await ask('update_form', {
        publicId: form.publicId,
        quotas: [{ name: 'FR', limit: 3e9, when: { block: 'country', op: 'equals', value: 'France' } }],
      }),
      400,
      'invalid_arguments',
    );
    expect(hugeQuota.details!.map((d) => d.path)).toContain('/quotas/0/limit');

    const closing = await ask('update_form', { publicId: form.publicId, maxResponses: 2, closeNow: true });
    expect(closing.status).toBe(200);
    expect(closing.body).toMatchObject({ maxResponses: 2, status: 'closed' });
    const events = await closedEvents(form.publicId);
    expect(events.map((e: { reason: string }) => e.reason)).toEqual(['cap']);
    expectError(
      await ask('create_response', { publicId: form.publicId, answers: { [country.id]: 'Spain' } }),
      409,
      'response_limit_reached',
    );
    expect(await count(form.publicId)).toBe(3);
  });

  it('screens a respondent out at the page where they match a full quota (without JavaScript), to its ending', async () => {
    const form = await published({
      blocks: [COUNTRY, { type: 'page_break', title: 'More' }, { ref: 'why', type: 'short_text', title: 'Why?' }],
      endings: [{ ref: 'enough', title: 'We have enough answers from France', message: 'Thank you all the same.' }],
      quotas: [
        {
          name: 'France',
          limit: 1,
          when: { block: 'country', op: 'equals', value: 'France' },
          onFull: 'ending:enough',
        },
      ],
    });
    const [country, , why] = form.blocks;
    expect(
      (await ask('create_response', { publicId: form.publicId, answers: { [country.id]: 'France' } })).status,
    ).toBe(200);
    const http = request(a.getHttpServer());
    const post = (fields: Array<[string, string]>) =>
      http.post(`/f/${form.publicId}`).type('form').send(new URLSearchParams(fields).toString());

    // Germany: on to the second page and submitted.
    const first = await http.get(`/f/${form.publicId}`);
    const second = await post([
      ['_state', stateOf(first.text)],
      [country.id, country.choices![1].id],
      ['_action', 'next'],
    ]);
    expect(text(second.text)).toContain('Why?');
    const done = await post([
      ['_state', stateOf(second.text)],
      [why.id, 'Because'],
      ['_action', 'submit'],
    ]);
    expect(done.status).toBe(200);
    expect(await count(form.publicId)).toBe(2);

    // France, whose quota is full: the ending on the first page's post, nothing stored.
    const again = await http.get(`/f/${form.publicId}`);
    const out = await post([
      ['_state', stateOf(again.text)],
      [country.id, country.choices![0].id],
      ['_action', 'next'],
    ]);
    expect(out.status).toBe(200);
    expect(text(out.text)).toContain('We have enough answers from France');
    expect(text(out.text)).not.toContain('Why?');
    expect(await count(form.publicId)).toBe(2);
  });
});

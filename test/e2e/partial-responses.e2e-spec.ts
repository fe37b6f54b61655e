/**
 * Partial responses (issue 36): the model, the tools (create_response partial, update_response,
 * status on the read tools), the funnel, webhooks, retention, and the respondent page's service
 * contract (save, resume, complete).
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { PartialResponsesService } from '../../src/responses/partial-responses.service';
import { ResponsesService } from '../../src/responses/responses.service';
import { ResponseStatsRepository } from '../../src/summaries/response-stats.repository';
import { FormsService } from '../../src/forms/forms.service';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

describe('partial responses', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let admin: string;
  let other: string;

  beforeAll(async () => {
    // Webhook endpoints on loopback (nothing listens: the deliveries are counted where they are stored).
    app = await createTestApp({ WEBHOOKS_ALLOW_PRIVATE_URLS: 'true', WEBHOOKS_DELIVERY: 'false' });
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    admin = (await createToken(app, ws, { role: 'admin' })).token;
    other = (await createToken(app, await createWorkspace(app, 'pro'), { role: 'admin' })).token;
  });
  afterAll(() => app.close());

  const ok = async (name: string, body: object, token = admin) => {
    const res = await callTool(app, token, name, body);
    if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };

  /**
   * A published three-page form with partialResponses on: page 1 (name required, colour), page 2
   * (age; its page_break jumps to the end when colour is Red), page 3 (why, required).
   */
  async function threePages(partialResponses = true) {
    const form = await ok('create_form', {
      title: 'Application',
      partialResponses,
      hiddenFields: ['src'],
      blocks: [
        { ref: 'name', type: 'short_text', title: 'Name', required: true },
        { ref: 'colour', type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Green'] },
        { ref: 'p2', type: 'page_break', title: 'About you' },
        { ref: 'age', type: 'number', title: 'Age', min: 0, max: 150 },
        {
          ref: 'p3',
          type: 'page_break',
          title: 'Why',
          showIf: { block: 'colour', op: 'equals', value: 'Green' },
        },
        { ref: 'why', type: 'long_text', title: 'Why?', required: true },
      ],
    });
    await ok('publish_form', { publicId: form.publicId });
    const id = Object.fromEntries(form.blocks.map((b: { ref: string; id: string }) => [b.ref, b.id]));
    return { publicId: form.publicId as string, id, formId: (await formRow(form.publicId)).id };
  }
  const formRow = (publicId: string) => app.get(FormsService).get(ws.id, publicId);
  const count = async (sql: string, params: unknown[]) => Number((await db.query(sql, params))[0].n);
  const recount = async (formId: string) => ({
    completed: await count('SELECT count(*) AS n FROM responses WHERE form_id = $1', [formId]),
    partial: await count('SELECT count(*) AS n FROM partial_responses WHERE form_id = $1', [formId]),
  });

  it('create_form and get_form carry partialResponses; a form without it refuses partials (409 with a hint)', async () => {
    const on = await threePages(true);
    expect((await ok('get_form', { publicId: on.publicId })).partialResponses).toBe(true);
    const off = await threePages(false);
    // Off is shown as false (issue 45: it was left out).
    expect((await ok('get_form', { publicId: off.publicId })).partialResponses).toBe(false);
    const res = await callTool(app, admin, 'create_response', {
      publicId: off.publicId,
      answers: { name: 'Ann' },
      partial: true,
    });
    expect(expectError(res, 409, 'partial_responses_off').hint).toMatch(/partialResponses/);
    await ok('update_form', { publicId: off.publicId, partialResponses: true });
    expect((await ok('get_form', { publicId: off.publicId })).partialResponses).toBe(true);
  });

  it('stores a partial, updates it, completes it with the same id; then 409 response_completed', async () => {
    const f = await threePages();
    // Required answers may be missing; the answers given are checked and stored.
    const p = await ok('create_response', { publicId: f.publicId, answers: { colour: 'Green' }, partial: true });
    expect(p).toMatchObject({
      status: 'partial',
      submittedAt: null,
      lastPage: '',
      answers: { colour: 'Green' }, // keyed as sent (issue 49)
    });
    const got = await ok('get_response', { publicId: f.publicId, responseId: p.id });
    expect(got).toMatchObject({ id: p.id, status: 'partial', startedAt: p.startedAt });

    const moved = await ok('update_response', {
      publicId: f.publicId,
      responseId: p.id,
      answers: { name: 'Ann', colour: 'Green', age: 30 },
    });
    expect(moved).toMatchObject({ status: 'partial', lastPage: f.id.p2, answers: { age: 30 } });
    // Completing checks required answers along the path: "why" (page 3) is missing.
    const missing = await callTool(app, admin, 'update_response', {
      publicId: f.publicId,
      responseId: p.id,
      answers: { name: 'Ann', colour: 'Green', age: 30 },
      complete: true,
    });
    expect(expectError(missing, 400, 'invalid_arguments').details?.map((d) => d.path)).toEqual(['/answers/why']);
    const done = await ok('update_response', {
      publicId: f.publicId,
      responseId: p.id,
      answers: { name: 'Ann', colour: 'Green', age: 30, why: 'Because' },
      complete: true,
    });
    expect(done.id).toBe(p.id);
    expect(done.status).toBe('completed');
    expect(typeof done.submittedAt).toBe('string');
    const after = await ok('get_response', { publicId: f.publicId, responseId: p.id });
    // Its last page is the last of its path (Green shows page 3), where it was completed.
    expect(after).toMatchObject({ id: p.id, status: 'completed', startedAt: p.startedAt, lastPage: f.id.p3 });
    expect(await recount(f.formId)).toEqual({ completed: 1, partial: 0 });

    const again = await callTool(app, admin, 'update_response', {
      publicId: f.publicId,
      responseId: p.id,
      answers: { name: 'Bob' },
    });
    expect(expectError(again, 409, 'response_completed').hint).toMatch(/delete_response/);
    expect((await ok('get_response', { publicId: f.publicId, responseId: p.id })).answers[f.id.name]).toBe('Ann');
  });

  it('a partial cannot hold what a completed response could not: types, sizes, hidden names, off-path answers', async () => {
    const f = await threePages();
    const cases: Array<[string, Record<string, unknown>, Record<string, string>?]> = [
      ['/answers/age', { age: 'old' }],
      ['/answers/age', { age: 200 }],
      ['/answers/colour', { colour: 'Purple' }],
      ['/answers/name', { name: 'x'.repeat(100_000) }],
      ['/answers/nope', { nope: 1 }],
      // Red jumps past page 3: an answer there is not on the path.
      ['/answers/why', { colour: 'Red', why: 'no' }],
      ['/hidden/other', {}, { other: 'x' }],
    ];
    for (const [path, answers, hidden] of cases) {
      const res = await callTool(app, admin, 'create_response', {
        publicId: f.publicId,
        answers,
        hidden,
        partial: true,
      });
      expect(expectError(res, 400, 'invalid_arguments').details?.map((d) => d.path)).toContain(path);
    }
    expect(await recount(f.formId)).toEqual({ completed: 0, partial: 0 });
    // The same on update_response: nothing changes.
    const p = await ok('create_response', { publicId: f.publicId, answers: { name: 'Ann' }, partial: true });
    expectError(
      await callTool(app, admin, 'update_response', { publicId: f.publicId, responseId: p.id, answers: { age: -1 } }),
      400,
      'invalid_arguments',
    );
    expect((await ok('get_response', { publicId: f.publicId, responseId: p.id })).answers).toEqual({
      [f.id.name]: 'Ann',
    });
  });

  it('list, summarize and export take status; totals and filters hold per status and match a recount', async () => {
    const f = await threePages();
    for (let i = 0; i < 5; i++)
      await ok('create_response', {
        publicId: f.publicId,
        answers: { name: `C${i}`, colour: i % 2 ? 'Red' : 'Green', ...(i % 2 ? {} : { why: 'w' }) },
      });
    for (let i = 0; i < 4; i++)
      await ok('create_response', {
        publicId: f.publicId,
        answers: { name: `P${i}`, colour: i % 2 ? 'Red' : 'Green' },
        partial: true,
      });
    const n = await recount(f.formId);
    expect(n).toEqual({ completed: 5, partial: 4 });
    const list = (args: object) => ok('list_responses', { publicId: f.publicId, limit: 200, ...args });
    expect((await list({})).total).toBe(n.completed);
    expect((await list({ status: 'partial' })).total).toBe(n.partial);
    const all = await list({ status: 'all' });
    expect(all.total).toBe(n.completed + n.partial);
    // Completed first (seq order), then partials (start order); newest first is the reverse.
    expect(all.responses.map((r: { answers: Record<string, string> }) => r.answers[f.id.name])).toEqual([
      'C0',
      'C1',
      'C2',
      'C3',
      'C4',
      'P0',
      'P1',
      'P2',
      'P3',
    ]);
    const newest = await list({ status: 'all', order: 'newest' });
    expect(newest.responses.map((r: { id: string }) => r.id)).toEqual(
      all.responses.map((r: { id: string }) => r.id).reverse(),
    );
    // Paging across the boundary: every response once.
    const seen: string[] = [];
    for (let offset = 0; offset < all.total; offset += 2) {
      const page = await ok('list_responses', { publicId: f.publicId, status: 'all', offset, limit: 2 });
      seen.push(...page.responses.map((r: { id: string }) => r.id));
    }
    expect(seen).toEqual(all.responses.map((r: { id: string }) => r.id));
    // Filters per status.
    const red = { where: { block: 'colour', op: 'equals', value: 'Red' } };
    expect((await list(red)).total).toBe(2);
    expect((await list({ ...red, status: 'partial' })).total).toBe(2);
    expect((await list({ ...red, status: 'all' })).total).toBe(4);
    // Summaries.
    const sum = (args: object) => ok('summarize_responses', { publicId: f.publicId, ...args });
    expect((await sum({})).total).toBe(5);
    expect((await sum({ status: 'partial' })).total).toBe(4);
    expect((await sum({ status: 'all' })).total).toBe(9);
    expect((await sum({ ...red, status: 'all' })).total).toBe(4);
    // The results pages' counts.
    expect(await app.get(ResponsesService).countsByStatus(f.formId)).toEqual(n);
    // Export: NDJSON of partials.
    const link = await ok('export_responses', { publicId: f.publicId, format: 'ndjson', status: 'partial' });
    const path = new URL(link.url);
    const res = await app.inject({ method: 'GET', url: `${path.pathname}${path.search}` });
    expect(res.statusCode).toBe(200);
    const lines = res.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.answers[f.id.name])).toEqual(['P0', 'P1', 'P2', 'P3']);
    expect(lines.every((l) => l.status === 'partial' && l.submittedAt === null)).toBe(true);
  });

  it('a walk of completed responses under concurrent completions of partials sees each once, none missing', async () => {
    const f = await threePages();
    for (let i = 0; i < 12; i++)
      await ok('create_response', { publicId: f.publicId, answers: { name: `C${i}`, colour: 'Red' } });
    const partials: string[] = [];
    for (let i = 0; i < 12; i++)
      partials.push(
        (await ok('create_response', { publicId: f.publicId, answers: { name: `P${i}` }, partial: true })).id,
      );
    const complete = (id: string) =>
      ok('update_response', {
        publicId: f.publicId,
        responseId: id,
        answers: { name: 'Done', colour: 'Red' },
        complete: true,
      });
    const seen: string[] = [];
    let offset = 0;
    for (;;) {
      // Two partials complete while the walk is under way (and one more during the read).
      const during = partials.length ? complete(partials.shift()!) : undefined;
      if (partials.length) await complete(partials.shift()!);
      const page = await ok('list_responses', { publicId: f.publicId, offset, limit: 5 });
      await during;
      seen.push(...page.responses.map((r: { id: string }) => r.id));
      offset += page.count;
      if (offset >= page.total && partials.length === 0) {
        const last = await ok('list_responses', { publicId: f.publicId, offset, limit: 5 });
        seen.push(...last.responses.map((r: { id: string }) => r.id));
        if (last.count === 0) break;
        offset += last.count;
      }
    }
    const stored = (await db.query('SELECT id FROM responses WHERE form_id = $1', [f.formId])).map(
      (r: { id: string }) => r.id,
    );
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.sort()).toEqual(stored.sort());
    expect(stored).toHaveLength(24);
  });

  it('summarize_responses gives the funnel: per page, reached and completed, from maintained counts', async () => {
    const f = await threePages();
    // Completed: 2 Green (pages 1, 2, 3), 1 Red (pages 1, 2).
    for (const colour of ['Green', 'Green', 'Red'])
      await ok('create_response', {
        publicId: f.publicId,
        answers: { name: 'C', colour, ...(colour === 'Green' ? { why: 'w' } : {}) },
      });
    // Partials: 2 on page 1 only, 1 that reached page 2, 1 that reached page 3.
    await ok('create_response', { publicId: f.publicId, answers: { name: 'a' }, partial: true });
    await ok('create_response', { publicId: f.publicId, answers: {}, partial: true });
    await ok('create_response', { publicId: f.publicId, answers: { colour: 'Red', age: 3 }, partial: true });
    const deep = await ok('create_response', {
      publicId: f.publicId,
      answers: { colour: 'Green', why: 'x' },
      partial: true,
    });
    const funnel = (await ok('summarize_responses', { publicId: f.publicId })).funnel;
    expect(funnel).toEqual([
      { page: '', reached: 7, completed: 3 },
      { page: f.id.p2, title: 'About you', reached: 5, completed: 3 },
      { page: f.id.p3, title: 'Why', reached: 3, completed: 2 },
    ]);
    // Completing the deep partial moves it to completed on every page it reached.
    await ok('update_response', {
      publicId: f.publicId,
      responseId: deep.id,
      answers: { name: 'n', colour: 'Green', why: 'x' },
      complete: true,
    });
    // Deleting a partial takes it off its pages.
    const partialsNow = await ok('list_responses', { publicId: f.publicId, status: 'partial' });
    await ok('delete_response', { publicId: f.publicId, responseId: partialsNow.responses[0].id });
    expect((await ok('summarize_responses', { publicId: f.publicId })).funnel).toEqual([
      { page: '', reached: 6, completed: 4 },
      { page: f.id.p2, title: 'About you', reached: 5, completed: 4 },
      { page: f.id.p3, title: 'Why', reached: 3, completed: 3 },
    ]);
    expect(await app.get(PartialResponsesService).funnel(await formRow(f.publicId))).toEqual(
      (await ok('summarize_responses', { publicId: f.publicId })).funnel,
    );
  });

  it('webhooks: response.created once per completed response whatever its path; partial_saved only when subscribed, once per page reached', async () => {
    const w = await createWorkspace(app, 'pro');
    const token = (await createToken(app, w, { role: 'admin' })).token;
    const created = await ok(
      'create_webhook',
      { url: 'http://127.0.0.1:9/a', events: ['response.created', 'response.deleted'] },
      token,
    );
    const saved = await ok(
      'create_webhook',
      { url: 'http://127.0.0.1:9/b', events: ['response.partial_saved'] },
      token,
    );
    const form = await ok(
      'create_form',
      {
        title: 'Two pages',
        partialResponses: true,
        blocks: [
          { ref: 'a', type: 'short_text', title: 'A' },
          { ref: 'p2', type: 'page_break' },
          { ref: 'b', type: 'short_text', title: 'B' },
        ],
      },
      token,
    );
    await ok('publish_form', { publicId: form.publicId }, token);
    const deliveries = async (endpoint: string, type: string) =>
      count('SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND event_type = $2', [
        endpoint,
        type,
      ]);

    const p = await ok('create_response', { publicId: form.publicId, answers: { a: '1' }, partial: true }, token);
    expect(await deliveries(saved.id, 'response.partial_saved')).toBe(1);
    // The same page again: no new event. A new page: one more.
    await ok('update_response', { publicId: form.publicId, responseId: p.id, answers: { a: '2' } }, token);
    expect(await deliveries(saved.id, 'response.partial_saved')).toBe(1);
    await ok('update_response', { publicId: form.publicId, responseId: p.id, answers: { a: '2', b: '3' } }, token);
    expect(await deliveries(saved.id, 'response.partial_saved')).toBe(2);
    expect(await deliveries(created.id, 'response.partial_saved')).toBe(0);
    expect(await deliveries(created.id, 'response.created')).toBe(0);
    await ok(
      'update_response',
      { publicId: form.publicId, responseId: p.id, answers: { a: '2', b: '3' }, complete: true },
      token,
    );
    await ok('create_response', { publicId: form.publicId, answers: { a: 'direct' } }, token);
    expect(await deliveries(created.id, 'response.created')).toBe(2);
    expect(await deliveries(saved.id, 'response.created')).toBe(0);
    const [body] = await db.query(
      `SELECT payload FROM webhook_deliveries WHERE endpoint_id = $1 AND event_type = 'response.created' ORDER BY created_at LIMIT 1`,
      [created.id],
    );
    expect(JSON.parse(body.payload).data.response.id).toBe(p.id);
    // A deleted partial's answers leave the delivery log: its partial_saved payload keeps only its id.
    const q = await ok(
      'create_response',
      { publicId: form.publicId, answers: { a: 'secret answer' }, partial: true },
      token,
    );
    await ok('delete_response', { publicId: form.publicId, responseId: q.id }, token);
    const [kept] = await db.query(
      `SELECT payload, redacted FROM webhook_deliveries WHERE endpoint_id = $1 AND payload LIKE '%' || $2 || '%'`,
      [saved.id, q.id],
    );
    expect(kept.redacted).toBe('response_deleted');
    expect(kept.payload).not.toContain('secret answer');
  });

  it('another workspace can neither read, update nor delete a partial', async () => {
    const f = await threePages();
    const p = await ok('create_response', { publicId: f.publicId, answers: { name: 'Ann' }, partial: true });
    const ref = { publicId: f.publicId, responseId: p.id };
    expectError(await callTool(app, other, 'get_response', ref), 404, 'not_found');
    expectError(await callTool(app, other, 'update_response', { ...ref, answers: { name: 'X' } }), 404, 'not_found');
    expectError(await callTool(app, other, 'delete_response', ref), 404, 'not_found');
    expectError(
      await callTool(app, other, 'list_responses', { publicId: f.publicId, status: 'partial' }),
      404,
      'not_found',
    );
    expect((await ok('get_response', ref)).answers[f.id.name]).toBe('Ann');
  });

  it('deletes a partial with its uploads, and the retention sweep deletes only partials idle past the retention (moved clock)', async () => {
    const f = await threePages();
    const keep = await ok('create_response', { publicId: f.publicId, answers: { name: 'keep' }, partial: true });
    const old = await ok('create_response', { publicId: f.publicId, answers: { name: 'old' }, partial: true });
    const gone = await ok('create_response', { publicId: f.publicId, answers: { name: 'gone' }, partial: true });
    const completed = await ok('create_response', { publicId: f.publicId, answers: { name: 'c', colour: 'Red' } });
    const upload = async (responseId: string) => {
      const id = `upl_test${Math.random().toString(36).slice(2, 14)}`;
      await db.query(
        `INSERT INTO uploads (id, workspace_id, form_id, block_id, name, content_type, size, response_id)
         VALUES ($1, $2, $3, 'x', 'f.txt', 'text/plain', 1, $4)`,
        [id, ws.id, f.formId, responseId],
      );
      return id;
    };
    const uploads = { keep: await upload(keep.id), old: await upload(old.id), gone: await upload(gone.id) };
    const has = async (id: string) => (await count('SELECT count(*) AS n FROM uploads WHERE id = $1', [id])) === 1;

    await ok('delete_response', { publicId: f.publicId, responseId: gone.id });
    expectError(
      await callTool(app, admin, 'get_response', { publicId: f.publicId, responseId: gone.id }),
      404,
      'not_found',
    );
    expect(await has(uploads.gone)).toBe(false);

    // 31 days idle (the default retention is 30): swept; 29 days: kept.
    await db.query(`UPDATE partial_responses SET updated_at = now() - interval '31 days' WHERE id = $1`, [old.id]);
    await db.query(`UPDATE partial_responses SET updated_at = now() - interval '29 days' WHERE id = $1`, [keep.id]);
    await db.query(`UPDATE responses SET submitted_at = now() - interval '90 days' WHERE id = $1`, [completed.id]);
    expect(await app.get(PartialResponsesService).sweep()).toBeGreaterThanOrEqual(1);
    expect(await has(uploads.old)).toBe(false);
    expect(await has(uploads.keep)).toBe(true);
    const left = await ok('list_responses', { publicId: f.publicId, status: 'all' });
    expect(left.responses.map((r: { id: string }) => r.id)).toEqual([completed.id, keep.id]);
    expect(await app.get(ResponsesService).countsByStatus(f.formId)).toEqual({ completed: 1, partial: 1 });
  });

  describe('issue 45: merged edits, times and pages on every response, time to complete, the funnel', () => {
    it('update_response changes only the answers sent (null clears one); completing says which answers are stored and which are missing', async () => {
      const f = await threePages();
      const p = await ok('create_response', {
        publicId: f.publicId,
        answers: { name: 'Ann', colour: 'Green', age: 41 },
        partial: true,
      });
      // Only age changes: name and colour stay (they were erased before); sent by ref, all keyed by ref.
      const moved = await ok('update_response', { publicId: f.publicId, responseId: p.id, answers: { age: 42 } });
      expect(moved.answers).toEqual({ name: 'Ann', colour: 'Green', age: 42 });
      // null clears one; by id or by ref alike.
      const cleared = await ok('update_response', {
        publicId: f.publicId,
        responseId: p.id,
        answers: { [f.id.age]: null },
      });
      expect(cleared.answers).toEqual({ [f.id.name]: 'Ann', [f.id.colour]: 'Green' });
      expect((await ok('get_response', { publicId: f.publicId, responseId: p.id })).answers).toEqual(cleared.answers);
      // Completing with nothing sent: why (page 3, required) is missing; the hint says what is stored.
      const missing = await callTool(app, admin, 'update_response', {
        publicId: f.publicId,
        responseId: p.id,
        answers: {},
        complete: true,
      });
      const err = expectError(missing, 400, 'invalid_arguments');
      expect(err.details?.map((d) => d.path)).toEqual(['/answers/why']);
      expect(err.hint).toContain('Stored: name, colour.');
      expect(err.hint).toContain('Missing: why.');
      // Sending only the missing answer completes it with the stored ones.
      const done = await ok('update_response', {
        publicId: f.publicId,
        responseId: p.id,
        answers: { why: 'Because' },
        complete: true,
      });
      expect(done.answers).toEqual({ name: 'Ann', colour: 'Green', why: 'Because' });
    });

    it('every response carries status, startedAt, updatedAt and the last page it reached, on every read and in the keyed answer', async () => {
      const f = await threePages();
      const direct = await ok('create_response', { publicId: f.publicId, answers: { name: 'D', colour: 'Red' } });
      // Never a partial: it started when submitted; Red jumps past page 3, so its last page is page 2.
      expect(direct).toMatchObject({
        status: 'completed',
        startedAt: direct.submittedAt,
        updatedAt: direct.submittedAt,
        lastPage: f.id.p2,
      });
      // Sent by ref, answered by ref: get_response with answersBy "ref" shows the same.
      const ref = { publicId: f.publicId, answersBy: 'ref' };
      expect(await ok('get_response', { ...ref, responseId: direct.id })).toEqual(direct);
      // A keyed create_response (its answer written by the insert statement): the same, and its replay byte for byte.
      const key = { 'Idempotency-Key': `k45-${Date.now()}` };
      const body = { publicId: f.publicId, answers: { name: 'K', colour: 'Green', why: 'w' } };
      const keyed = await callTool(app, admin, 'create_response', body, key);
      expect(keyed.status).toBe(200);
      expect(keyed.body).toMatchObject({
        status: 'completed',
        startedAt: keyed.body.submittedAt,
        updatedAt: keyed.body.submittedAt,
        lastPage: f.id.p3,
      });
      const replay = await callTool(app, admin, 'create_response', body, key);
      expect(replay.headers['idempotency-replayed']).toBe('true');
      expect(replay.text).toBe(keyed.text);
      expect(await ok('get_response', { ...ref, responseId: keyed.body.id })).toEqual(keyed.body);

      // A partial of the tools that completes with answers past the page it was saved on.
      const p = await ok('create_response', { publicId: f.publicId, answers: { name: 'P' }, partial: true });
      expect(p).toMatchObject({ status: 'partial', lastPage: '' });
      const done = await ok('update_response', {
        publicId: f.publicId,
        responseId: p.id,
        answers: { colour: 'Green', why: 'w' },
        complete: true,
      });
      expect(done).toMatchObject({ status: 'completed', startedAt: p.startedAt, lastPage: f.id.p3 });
      expect(done.updatedAt).toBe(done.submittedAt);

      // A partial of the page: Back saves the page before, but lastPage stays the furthest reached.
      const service = app.get(PartialResponsesService);
      const form = await formRow(f.publicId);
      const saved = await service.save(form, {
        answers: { [f.id.name]: 'W', [f.id.colour]: 'Green' },
        hidden: {},
        pagesReached: ['', f.id.p2, f.id.p3],
        lastPage: f.id.p3,
      });
      await service.save(form, {
        resumeSecret: saved.resumeSecret,
        answers: { [f.id.name]: 'W', [f.id.colour]: 'Green' },
        hidden: {},
        pagesReached: ['', f.id.p2],
        lastPage: f.id.p2,
      });
      const web = await ok('get_response', { publicId: f.publicId, responseId: saved.responseId });
      expect(web).toMatchObject({ status: 'partial', submittedAt: null, lastPage: f.id.p3 });
      expect(typeof web.startedAt).toBe('string');
      expect(typeof web.updatedAt).toBe('string');

      // list_responses status all: a status on each; the export's lines too.
      const all = await ok('list_responses', { ...ref, status: 'all', limit: 200 });
      const byId = new Map(all.responses.map((r: { id: string }) => [r.id, r]));
      expect(byId.get(direct.id)).toEqual(direct);
      expect(byId.get(done.id)).toMatchObject({ status: 'completed', startedAt: p.startedAt, lastPage: f.id.p3 });
      expect(byId.get(saved.responseId)).toMatchObject({ status: 'partial', lastPage: f.id.p3 });
      expect(
        all.responses.every(
          (r: Record<string, unknown>) => r.status && r.startedAt && r.updatedAt && typeof r.lastPage === 'string',
        ),
      ).toBe(true);
      const link = await ok('export_responses', { ...ref, format: 'ndjson', status: 'all' });
      const url = new URL(link.url);
      const res = await app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
      const lines = res.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.find((l) => l.id === direct.id)).toEqual(direct);
      expect(lines.find((l) => l.id === saved.responseId)).toMatchObject({ status: 'partial', lastPage: f.id.p3 });
    });

    it('summarize_responses gives the median time to complete, from kept counts unfiltered and per segment, from the rows filtered; deletes and recounts keep it', async () => {
      const f = await threePages();
      const sum = async (args: object = {}) =>
        (await ok('summarize_responses', { publicId: f.publicId, ...args })).medianSecondsToComplete;
      await ok('create_response', { publicId: f.publicId, answers: { name: 'never partial', colour: 'Red' } });
      expect(await sum()).toBeNull();
      const green = { where: { block: 'colour', op: 'equals', value: 'Green' } };
      expect(await sum(green)).toBeNull(); // the segment is made now (with no times)
      /** A partial started `seconds` ago, completed now. */
      const completed = async (seconds: number, colour: string) => {
        const p = await ok('create_response', { publicId: f.publicId, answers: { name: 'p' }, partial: true });
        await db.query(`UPDATE partial_responses SET started_at = now() - make_interval(secs => $2) WHERE id = $1`, [
          p.id,
          seconds,
        ]);
        return ok('update_response', {
          publicId: f.publicId,
          responseId: p.id,
          answers: { colour, ...(colour === 'Green' ? { why: 'w' } : {}) },
          complete: true,
        });
      };
      const near = (x: number | null, seconds: number) => {
        expect(x).not.toBeNull();
        expect(x!).toBeGreaterThanOrEqual(seconds);
        expect(x!).toBeLessThan(seconds + 5);
      };
      await completed(100, 'Green');
      const mid = await completed(200, 'Red');
      await completed(4000, 'Green'); // bucketed to the minute: 3960
      near(await sum(), 200); // the lower median of 100, 200, 3960
      near(await sum(green), 100); // the segment, kept by the sequencer since it was made: 100, 3960
      near(await sum({ since: '2000-01-01T00:00:00Z' }), 200); // any other filter: from the rows
      near(await sum({ status: 'all' }), 200);
      expect(await sum({ status: 'partial' })).toBeNull();
      await ok('delete_response', { publicId: f.publicId, responseId: mid.id });
      near(await sum(), 100);
      // A recount from the rows gives what was kept.
      await db.transaction((tx) => app.get(ResponseStatsRepository).recomputeResponseStats(tx, f.formId));
      near(await sum(), 100);
      near(await sum(green), 100); // made again, by a scan
    });

    it('the funnel counts a page reached after a save whose answers were refused', async () => {
      const f = await threePages();
      const service = app.get(PartialResponsesService);
      const form = await formRow(f.publicId);
      const first = await service.save(form, {
        answers: { [f.id.name]: 'Ann', [f.id.colour]: 'Green' },
        hidden: {},
        pagesReached: ['', f.id.p2],
        lastPage: f.id.p2,
      });
      // On to page 3 with an answer the save refuses: the person is on page 3 all the same.
      await expect(
        service.save(form, {
          resumeSecret: first.resumeSecret,
          answers: { [f.id.name]: 'Ann', [f.id.colour]: 'Green', [f.id.age]: 'old' },
          hidden: {},
          pagesReached: ['', f.id.p2, f.id.p3],
          lastPage: f.id.p3,
        }),
      ).rejects.toMatchObject({ code: 'invalid_arguments' });
      const funnel = (await ok('summarize_responses', { publicId: f.publicId })).funnel;
      expect(funnel).toEqual([
        { page: '', reached: 1, completed: 0 },
        { page: f.id.p2, title: 'About you', reached: 1, completed: 0 },
        { page: f.id.p3, title: 'Why', reached: 1, completed: 0 },
      ]);
      const got = await ok('get_response', { publicId: f.publicId, responseId: first.responseId });
      // Its answers are the last ones saved; its last page the one reached.
      expect(got).toMatchObject({ lastPage: f.id.p3, answers: { [f.id.name]: 'Ann', [f.id.colour]: 'Green' } });
      expect(got.answers[f.id.age]).toBeUndefined();
    });
  });

  describe("the respondent page's contract (save, resume, complete)", () => {
    it('saves with a new secret, resumes, updates with the same secret, completes once; then the secret says completed', async () => {
      const f = await threePages();
      const service = app.get(PartialResponsesService);
      const form = await formRow(f.publicId);
      const first = await service.save(form, {
        answers: { [f.id.name]: 'Ann', [f.id.colour]: 'Green' },
        hidden: { src: 'mail' },
        pagesReached: [''],
        lastPage: '',
      });
      expect(first.resumeSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      // Only its hash is stored.
      expect(
        await count('SELECT count(*) AS n FROM partial_responses WHERE resume_hash IS NOT NULL AND id = $1', [
          first.responseId,
        ]),
      ).toBe(1);
      expect(
        await count(
          `SELECT count(*) AS n FROM partial_responses WHERE encode(resume_hash, 'escape') LIKE '%' || $1 || '%'`,
          [first.resumeSecret],
        ),
      ).toBe(0);
      const next = await service.save(form, {
        resumeSecret: first.resumeSecret,
        answers: { [f.id.name]: 'Ann', [f.id.colour]: 'Green', [f.id.age]: 40 },
        hidden: { src: 'mail' },
        pagesReached: ['', f.id.p2],
        lastPage: f.id.p2,
      });
      expect(next).toEqual(first);
      const resumed = await service.resume(form.id, first.resumeSecret);
      expect(resumed).toMatchObject({
        kind: 'partial',
        partial: {
          responseId: first.responseId,
          pagesReached: ['', f.id.p2],
          lastPage: f.id.p2,
          hidden: { src: 'mail' },
        },
      });
      const colourChoice = form.blocks.find((b) => b.id === f.id.colour)!.choices!.find((c) => c.label === 'Green')!.id;
      expect(resumed.kind === 'partial' && resumed.partial.answers).toEqual({
        [f.id.name]: 'Ann',
        [f.id.colour]: colourChoice,
        [f.id.age]: 40,
      });
      // Another form's, a tampered or a malformed secret: unknown.
      const g = await threePages();
      expect(await service.resume((await formRow(g.publicId)).id, first.resumeSecret)).toEqual({ kind: 'unknown' });
      const tampered = first.resumeSecret.slice(0, -1) + (first.resumeSecret.endsWith('A') ? 'B' : 'A');
      expect(await service.resume(form.id, tampered)).toEqual({ kind: 'unknown' });
      expect(await service.resume(form.id, 'short')).toEqual({ kind: 'unknown' });

      const done = await service.complete(form, {
        resumeSecret: first.resumeSecret,
        answers: { [f.id.name]: 'Ann', [f.id.colour]: 'Green', [f.id.age]: 40, [f.id.why]: 'Because' },
        hidden: { src: 'mail' },
      });
      expect(done.id).toBe(first.responseId);
      expect(await service.resume(form.id, first.resumeSecret)).toEqual({ kind: 'completed', responseId: done.id });
      await expect(
        service.save(form, {
          resumeSecret: first.resumeSecret,
          answers: {},
          hidden: {},
          pagesReached: [''],
          lastPage: '',
        }),
      ).rejects.toMatchObject({ code: 'response_completed' });
      await expect(
        service.complete(form, { resumeSecret: first.resumeSecret, answers: {}, hidden: {} }),
      ).rejects.toMatchObject({ code: 'response_completed' });
      expect(await recount(form.id)).toEqual({ completed: 1, partial: 0 });
    });

    it('an expired secret (partial idle past the retention, not swept yet) neither saves over nor completes that partial', async () => {
      const f = await threePages();
      const service = app.get(PartialResponsesService);
      const form = await formRow(f.publicId);
      const save = (resumeSecret: string, name: string) =>
        service.save(form, {
          resumeSecret,
          answers: { [f.id.name]: name },
          hidden: {},
          pagesReached: [''],
          lastPage: '',
        });
      const first = await service.save(form, {
        answers: { [f.id.name]: 'Ann' },
        hidden: {},
        pagesReached: [''],
        lastPage: '',
      });
      await db.query(`UPDATE partial_responses SET updated_at = now() - interval '31 days' WHERE id = $1`, [
        first.responseId,
      ]);
      expect(await service.resume(form.id, first.resumeSecret)).toEqual({ kind: 'unknown' });
      await expect(
        service.complete(form, {
          resumeSecret: first.resumeSecret,
          answers: { [f.id.name]: 'Eve', [f.id.colour]: 'Red', [f.id.age]: 1, [f.id.why]: 'x' },
          hidden: {},
        }),
      ).rejects.toMatchObject({ code: 'not_found' });
      // A save starts a new partial with a new secret; the expired one is left as it was, for the sweep.
      const again = await save(first.resumeSecret, 'Eve');
      expect(again.responseId).not.toBe(first.responseId);
      expect(again.resumeSecret).not.toBe(first.resumeSecret);
      const [old] = await db.query(
        `SELECT answers, updated_at < now() - interval '30 days' AS idle FROM partial_responses WHERE id = $1`,
        [first.responseId],
      );
      expect(old).toEqual({ answers: { [f.id.name]: 'Ann' }, idle: true });
      expect(await recount(form.id)).toEqual({ completed: 0, partial: 2 });
    });

    it('refuses bad answers (worded for people), a form with the setting off, and a closed form', async () => {
      const f = await threePages();
      const service = app.get(PartialResponsesService);
      const form = await formRow(f.publicId);
      await expect(
        service.save(form, {
          answers: { [f.id.age]: 'old' },
          hidden: {},
          pagesReached: ['', f.id.p2],
          lastPage: f.id.p2,
        }),
      ).rejects.toMatchObject({ code: 'invalid_arguments', status: 400 });
      const off = await threePages(false);
      await expect(
        service.save(await formRow(off.publicId), { answers: {}, hidden: {}, pagesReached: [''], lastPage: '' }),
      ).rejects.toMatchObject({ code: 'partial_responses_off' });
      await ok('close_form', { publicId: f.publicId });
      await expect(
        service.save(await formRow(f.publicId), { answers: {}, hidden: {}, pagesReached: [''], lastPage: '' }),
      ).rejects.toMatchObject({ code: 'form_not_accepting_responses' });
      expect(await recount(form.id)).toEqual({ completed: 0, partial: 0 });
    });
  });
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { parse } from 'csv-parse/sync';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { FormRecord, FormsService } from '../../src/forms/forms.service';
import { StoredResponse, summarize } from '../../src/summaries/summarize';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/**
 * The blocks surveys are made of (issue 50): nps so far. Each is answered through the API and the
 * page without JavaScript, refused at its path when bad, summarized (equal to a recount of the
 * stored rows), filtered with exact totals and exported (CSV parsing back to list_responses).
 */
describe('survey blocks: nps and ranking', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let token: string;
  let publicId: string;
  let form: FormRecord;
  let id: Record<string, string>;

  /** The i-th response's answers by ref: every value of the scale, some skipped. */
  const ORDERS = [
    ['Price', 'Speed', 'Support', 'Design'],
    ['Speed', 'Price', 'Design', 'Support'],
    ['Support', 'Design', 'Price', 'Speed'],
    ['Design', 'Speed', 'Price', 'Support'],
    ['Price', 'Support', 'Speed', 'Design'],
  ];
  const answersOf = (i: number): Record<string, unknown> => ({
    name: `P${i}`,
    ...(i % 7 === 6 ? {} : { nps: (i * 3) % 11 }),
    ...(i % 5 === 4 ? {} : { rank: ORDERS[i % ORDERS.length] }),
    ...(i % 3 === 2 ? {} : { top: ORDERS[(i + 1) % ORDERS.length].slice(0, 2) }),
  });
  const N = 40;

  const storedRows = async (): Promise<StoredResponse[]> =>
    (
      await db.query('SELECT answers, submitted_at, shown, started_at FROM responses WHERE form_id = $1 ORDER BY seq', [
        form.id,
      ])
    ).map((r: { answers: Record<string, unknown>; submitted_at: Date; shown: string[] | null; started_at: Date }) => ({
      answers: r.answers,
      submittedAt: new Date(r.submitted_at),
      shown: r.shown,
      startedAt: r.started_at ? new Date(r.started_at) : null,
    }));

  const download = (url: string) => {
    const u = new URL(url);
    return request(app.getHttpServer()).get(u.pathname + u.search);
  };

  beforeAll(async () => {
    app = await createTestApp();
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    const created = await callTool(app, token, 'create_form', {
      title: 'Customer feedback',
      blocks: [
        { type: 'short_text', title: 'Name', ref: 'name' },
        {
          type: 'nps',
          title: 'How likely are you to recommend us?',
          ref: 'nps',
          minLabel: 'Not at all likely',
          maxLabel: 'Extremely likely',
        },
        {
          type: 'long_text',
          title: 'What would you change?',
          ref: 'change',
          showIf: { block: 'nps', op: 'lte', value: 6 },
        },
        { type: 'ranking', title: 'Rank what matters', ref: 'rank', choices: ['Price', 'Speed', 'Support', 'Design'] },
        {
          type: 'ranking',
          title: 'Your top two',
          ref: 'top',
          choices: ['Price', 'Speed', 'Support', 'Design'],
          rankTop: 2,
        },
        {
          type: 'short_text',
          title: 'Why price?',
          ref: 'why',
          showIf: { block: 'rank', choice: 'Price', op: 'lte', value: 1 },
        },
      ],
    });
    expect(created.status).toBe(200);
    publicId = created.body.publicId;
    const nps = created.body.blocks[1];
    expect(nps).toMatchObject({ type: 'nps', ref: 'nps', minLabel: 'Not at all likely', maxLabel: 'Extremely likely' });
    expect(nps.min).toBeUndefined();
    id = Object.fromEntries((created.body.blocks as Array<{ ref: string; id: string }>).map((b) => [b.ref, b.id]));
    expect((await callTool(app, token, 'publish_form', { publicId })).status).toBe(200);
    form = await app.get(FormsService).get(ws.id, publicId);
  });
  afterAll(() => app.close());

  it('refuses settings an nps does not take, at their path', async () => {
    const error = expectError(
      await callTool(app, token, 'create_form', { title: 'x', blocks: [{ type: 'nps', title: 'NPS', max: 5 }] }),
      400,
      'invalid_arguments',
    );
    expect(error.details).toEqual([{ path: '/blocks/0/max', message: expect.stringMatching(/0 to 10/) }]);
  });

  it.each([11, 7.5, -1, '9'])(
    'refuses %p at /answers/nps, in create_response and check_response alike',
    async (value) => {
      const before = (await storedRows()).length;
      const sent = { publicId, answers: { nps: value } };
      const error = expectError(await callTool(app, token, 'create_response', sent), 400, 'invalid_arguments');
      expect(error.details).toEqual([
        { path: '/answers/nps', message: expect.stringMatching(/^must be an integer from 0 to 10/) },
      ]);
      const dry = await callTool(app, token, 'check_response', sent);
      expect(dry.status).toBe(200);
      expect(dry.body.ok).toBe(false);
      expect(dry.body.errors.map((e: { path: string }) => e.path)).toEqual(['/answers/nps']);
      expect((await storedRows()).length).toBe(before);
    },
  );

  it.each([
    ['a duplicate', ['Price', 'Price', 'Speed', 'Support'], /ranked twice/],
    ['a missing choice', ['Price', 'Speed', 'Support'], /must rank all of/],
    ['an unknown choice', ['Price', 'Speed', 'Support', 'Colour'], /"Colour" is not one of/],
    ['one label', 'Price', /must be a list/],
  ])('refuses a ranking with %s at /answers/rank', async (_, value, message) => {
    const error = expectError(
      await callTool(app, token, 'create_response', { publicId, answers: { rank: value } }),
      400,
      'invalid_arguments',
    );
    expect(error.details).toEqual([{ path: '/answers/rank', message: expect.stringMatching(message) }]);
  });

  it('refuses ranking settings out of range, and a choice condition on another type', async () => {
    const error = expectError(
      await callTool(app, token, 'create_form', {
        title: 'x',
        blocks: [
          { type: 'ranking', title: 'One', choices: ['Only'] },
          { type: 'ranking', title: 'Two', choices: ['A', 'B'], rankTop: 3 },
          { type: 'nps', title: 'N', ref: 'n' },
          { type: 'short_text', title: 'T', showIf: { block: 'n', choice: 'A', op: 'lte', value: 1 } },
        ],
      }),
      400,
      'invalid_arguments',
    );
    expect(error.details!.map((d) => d.path)).toEqual([
      '/blocks/0/choices',
      '/blocks/1/rankTop',
      '/blocks/3/showIf/choice',
    ]);
  });

  it('takes answers from the API and from the page without JavaScript, and shows 0-10 with the end labels', async () => {
    for (let i = 0; i < N; i++) {
      const res = await callTool(app, token, 'create_response', { publicId, answers: answersOf(i) });
      expect(res.status).toBe(200);
    }
    const page = await request(app.getHttpServer()).get(`/f/${publicId}`);
    expect(page.status).toBe(200);
    for (let v = 0; v <= 10; v++) expect(page.text).toContain(`name="${id.nps}" value="${v}"`);
    expect(page.text).toContain('Not at all likely');
    expect(page.text).toContain('Extremely likely');

    const refused = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .type('form')
      .send(`${id.name}=Page&${id.nps}=11`);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Choose a number from 0 to 10.');
    const posted = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .type('form')
      .send(`${id.name}=Page&${id.nps}=10`);
    expect(posted.status).toBe(200);
    const rows = await storedRows();
    expect(rows).toHaveLength(N + 1);
    expect(rows.find((r) => r.answers[id.name] === 'Page')!.answers).toEqual({ [id.name]: 'Page', [id.nps]: 10 });
  });
  it("ranks without JavaScript: a place per option, duplicates refused in the page's words", async () => {
    const rank = form.blocks.find((b) => b.ref === 'rank')!;
    const c = Object.fromEntries(rank.choices!.map((x) => [x.label, x.id]));
    const page = await request(app.getHttpServer()).get(`/f/${publicId}`);
    expect(page.text).toContain(`<option value="${c.Speed}:4">4</option>`);
    const post = (places: Record<string, number>) =>
      request(app.getHttpServer())
        .post(`/f/${publicId}`)
        .type('form')
        .send(
          [`${id.name}=Ranker`, ...Object.entries(places).map(([label, p]) => `${id.rank}=${c[label]}%3A${p}`)].join(
            '&',
          ),
        );
    const before = (await storedRows()).length;
    const dup = await post({ Price: 1, Speed: 1, Support: 2, Design: 3 });
    expect(dup.status).toBe(400);
    expect(dup.text).toContain('Give each option its own place.');
    expect((await storedRows()).length).toBe(before);
    const ok = await post({ Price: 2, Speed: 1, Support: 4, Design: 3 });
    expect(ok.status).toBe(200);
    const rows = await storedRows();
    expect(rows.find((r) => r.answers[id.name] === 'Ranker')!.answers[id.rank]).toEqual([
      c.Speed,
      c.Price,
      c.Design,
      c.Support,
    ]);
  });

  it('summarizes a ranking: mean place and how often first, equal to a recount', async () => {
    const rows = await storedRows();
    const res = await callTool(app, token, 'summarize_responses', { publicId });
    expect(res.body).toEqual({ publicId, ...summarize(form.blocks, rows) });
    const rank = res.body.blocks.find((b: { blockId: string }) => b.blockId === id.rank);
    const lists = rows.map((r) => r.answers[id.rank]).filter((v): v is string[] => Array.isArray(v));
    const price = form.blocks.find((b) => b.ref === 'rank')!.choices!.find((x) => x.label === 'Price')!;
    const places = lists.map((l) => l.indexOf(price.id) + 1);
    expect(rank.choices.find((x: { id: string }) => x.id === price.id)).toMatchObject({
      count: lists.length,
      first: places.filter((p) => p === 1).length,
      meanRank: Math.round((places.reduce((a, b) => a + b, 0) / places.length) * 10_000) / 10_000,
    });
    const top = res.body.blocks.find((b: { blockId: string }) => b.blockId === id.top);
    expect(top.choices.reduce((n: number, x: { first: number }) => n + x.first, 0)).toBe(top.answered);
  });

  it('filters on a ranking position with exact totals, and asks the follow-up of those who put Price first', async () => {
    const rows = await storedRows();
    const price = form.blocks.find((b) => b.ref === 'rank')!.choices!.find((x) => x.label === 'Price')!.id;
    for (const [op, value, keep] of [
      ['lte', 2, (p: number) => p <= 2],
      ['equals', 1, (p: number) => p === 1],
      ['gte', 3, (p: number) => p >= 3],
    ] as const) {
      const where = { block: 'rank', choice: 'Price', op, value };
      const matching = rows.filter((r) => {
        const list = r.answers[id.rank];
        return Array.isArray(list) && list.includes(price) && keep(list.indexOf(price) + 1);
      });
      expect(matching.length).toBeGreaterThan(0);
      const listed = await callTool(app, token, 'list_responses', { publicId, where, limit: 200 });
      expect(listed.body.total).toBe(matching.length);
      const summary = await callTool(app, token, 'summarize_responses', { publicId, where });
      expect(summary.body).toEqual({ publicId, ...summarize(form.blocks, matching) });
    }
    const asked = await callTool(app, token, 'check_response', {
      publicId,
      answers: { rank: ['Price', 'Speed', 'Support', 'Design'], why: 'Budget' },
    });
    expect(asked.body.ok).toBe(true);
    const notAsked = await callTool(app, token, 'check_response', {
      publicId,
      answers: { rank: ['Speed', 'Price', 'Support', 'Design'], why: 'Budget' },
    });
    expect(notAsked.body.ok).toBe(false);
  });

  it('summarizes the NPS, its groups and distribution, equal to a recount of the stored rows', async () => {
    const rows = await storedRows();
    const res = await callTool(app, token, 'summarize_responses', { publicId });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ publicId, ...summarize(form.blocks, rows) });
    const values = rows.map((r) => r.answers[id.nps]).filter((v): v is number => typeof v === 'number');
    const promoters = values.filter((v) => v >= 9).length;
    const detractors = values.filter((v) => v <= 6).length;
    const nps = res.body.blocks.find((b: { blockId: string }) => b.blockId === id.nps);
    expect(nps).toMatchObject({
      type: 'nps',
      answered: values.length,
      promoters,
      passives: values.length - promoters - detractors,
      detractors,
      nps: Math.round(((promoters - detractors) / values.length) * 1000) / 10,
    });
    expect(nps.distribution).toHaveLength(11);
    expect(nps.distribution[10]).toEqual({ value: 10, count: values.filter((v) => v === 10).length });
  });

  it('filters with the number operators: exact totals in list, summary and export', async () => {
    const rows = await storedRows();
    for (const [op, value, keep] of [
      ['gte', 9, (v: number) => v >= 9],
      ['lte', 6, (v: number) => v <= 6],
      ['in', [7, 8], (v: number) => v === 7 || v === 8],
    ] as const) {
      const where = { block: 'nps', op, value };
      const matching = rows.filter((r) => typeof r.answers[id.nps] === 'number' && keep(r.answers[id.nps] as number));
      expect(matching.length).toBeGreaterThan(0);
      const listed = await callTool(app, token, 'list_responses', { publicId, where, limit: 200 });
      expect(listed.status).toBe(200);
      expect(listed.body.total).toBe(matching.length);
      const summary = await callTool(app, token, 'summarize_responses', { publicId, where });
      expect(summary.body).toEqual({ publicId, ...summarize(form.blocks, matching) });
      const link = await callTool(app, token, 'export_responses', { publicId, where, format: 'ndjson' });
      const lines = (await download(link.body.url)).text.trim().split('\n');
      expect(lines.map((l) => JSON.parse(l).answers[id.nps])).toEqual(matching.map((r) => r.answers[id.nps]));
    }
  });

  it('exports a CSV that parses back to what list_responses shows', async () => {
    const listed = await callTool(app, token, 'list_responses', { publicId, limit: 200, order: 'oldest' });
    expect(listed.status).toBe(200);
    const link = await callTool(app, token, 'export_responses', { publicId, format: 'csv' });
    const res = await download(link.body.url);
    expect(res.status).toBe(200);
    const records: Record<string, string>[] = parse(res.text, { columns: true, bom: true });
    const byId = new Map(records.map((r) => [r.id, r]));
    expect(records).toHaveLength(listed.body.total);
    for (const r of listed.body.responses as Array<{ id: string; answers: Record<string, unknown> }>) {
      const cell = byId.get(r.id)!['How likely are you to recommend us?'];
      expect(cell).toBe(r.answers[id.nps] === undefined ? '' : String(r.answers[id.nps]));
      const ranked = byId.get(r.id)!['Rank what matters'];
      expect(ranked).toBe(r.answers[id.rank] === undefined ? '' : (r.answers[id.rank] as string[]).join('; '));
    }
  });

  it('removing a ranked choice drops it from each ranking, and the summary equals a recount', async () => {
    const got = await callTool(app, token, 'get_form', { publicId });
    type Shown = { ref?: string; choices?: Array<{ label: string }> };
    const blocks = (got.body.blocks as Shown[]).map((b) =>
      b.ref === 'top' ? { ...b, choices: b.choices!.filter((c) => c.label !== 'Speed') } : b,
    );
    const refused = await callTool(app, token, 'update_form', { publicId, blocks });
    expectError(refused, 400, 'tool_error');
    const updated = await callTool(app, token, 'update_form', { publicId, blocks, acceptAnswerLoss: true });
    expect(updated.status).toBe(200);
    form = await app.get(FormsService).get(ws.id, publicId);
    const rows = await storedRows();
    const speed = refused.body.error.details.length; // the loss was named
    expect(speed).toBeGreaterThan(0);
    const top = form.blocks.find((b) => b.ref === 'top')!;
    for (const r of rows) {
      const list = r.answers[top.id];
      if (Array.isArray(list)) for (const c of list) expect(top.choices!.map((x) => x.id)).toContain(c);
    }
    const res = await callTool(app, token, 'summarize_responses', { publicId });
    expect(res.body).toEqual({ publicId, ...summarize(form.blocks, rows) });
  });
});

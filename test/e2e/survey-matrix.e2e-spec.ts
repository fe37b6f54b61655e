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
 * The matrix block (issue 50) in a customer-feedback form built with one create_form call beside
 * an NPS and a ranking: answered through the API and the page without JavaScript, refused at
 * /answers/<ref>/<row> when bad, summarized per row (equal to a recount of the stored rows),
 * filtered on a row and on a ranking position with exact totals, exported (CSV: one column per
 * row, parsing back to list_responses), and its answers dropped as rules say when a row or a
 * column is removed.
 */
describe('survey blocks: matrix', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let token: string;
  let publicId: string;
  let form: FormRecord;
  let id: Record<string, string>;

  const ROWS = ['Price', 'Speed', 'Support', 'Design', 'Docs'];
  const COLUMNS = ['Poor', 'Fair', 'Good', 'Very good', 'Excellent'];
  const ORDERS = [
    ['Price', 'Speed', 'Support'],
    ['Speed', 'Support', 'Price'],
    ['Support', 'Price', 'Speed'],
  ];
  /** The i-th response by ref and labels: every row some of the time, a few matrices left out. */
  const answersOf = (i: number): Record<string, unknown> => ({
    nps: (i * 7) % 11,
    ...(i % 6 === 5
      ? {}
      : {
          grid: Object.fromEntries(
            ROWS.filter((_, r) => (i + r) % 4 !== 3).map((row, r) => [row, COLUMNS[(i * (r + 2)) % 5]]),
          ),
        }),
    ...(i % 4 === 3 ? {} : { tags: { Price: COLUMNS.slice(0, 1 + (i % 3)), Speed: [COLUMNS[i % 5]] } }),
    rank: ORDERS[i % ORDERS.length],
  });
  const N = 36;

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
  const blockOf = (ref: string) => form.blocks.find((b) => b.ref === ref)!;
  const rowId = (ref: string, label: string) => blockOf(ref).rows!.find((r) => r.label === label)!.id;
  const colId = (ref: string, label: string) => blockOf(ref).columns!.find((c) => c.label === label)!.id;

  beforeAll(async () => {
    app = await createTestApp();
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    const created = await callTool(app, token, 'create_form', {
      title: 'Customer feedback',
      blocks: [
        { type: 'nps', title: 'How likely are you to recommend us?', ref: 'nps' },
        { type: 'matrix', title: 'Rate us on', ref: 'grid', rows: ROWS, columns: COLUMNS },
        {
          type: 'matrix',
          title: 'What fits',
          ref: 'tags',
          rows: ['Price', 'Speed'],
          columns: COLUMNS,
          multiple: true,
        },
        { type: 'ranking', title: 'Rank these', ref: 'rank', choices: ['Price', 'Speed', 'Support'] },
        {
          type: 'short_text',
          title: 'What made support poor?',
          ref: 'why',
          showIf: { block: 'grid', row: 'Support', op: 'in', value: ['Poor', 'Fair'] },
        },
      ],
    });
    expect(created.status).toBe(200);
    publicId = created.body.publicId;
    expect(created.body.blocks[1]).toMatchObject({
      type: 'matrix',
      ref: 'grid',
      rows: ROWS,
      columns: COLUMNS,
      multiple: false,
      required: false,
    });
    form = await app.get(FormsService).get(ws.id, publicId);
    id = Object.fromEntries(form.blocks.map((b) => [b.ref!, b.id]));
  });
  afterAll(() => app.close());

  it('refuses matrix settings out of range and a row condition on another type, at their paths', async () => {
    const res = await callTool(app, token, 'create_form', {
      title: 'x',
      blocks: [
        { type: 'matrix', title: 'No rows', rows: [], columns: ['A'] },
        { type: 'nps', title: 'N', ref: 'n', rows: ['A'] },
        { type: 'short_text', title: 'T', showIf: { block: 'n', row: 'A', op: 'answered' } },
      ],
    });
    const error = expectError(res, 400, 'invalid_arguments');
    const paths = error.details!.map((d) => d.path);
    expect(paths).toEqual(['/blocks/0/rows', '/blocks/1/rows', '/blocks/2/showIf/row']);
    const many = await callTool(app, token, 'create_form', {
      title: 'x',
      blocks: [{ type: 'matrix', title: 'Many', rows: ['A'], columns: Array.from({ length: 21 }, (_, i) => `C${i}`) }],
    });
    expect(expectError(many, 400, 'invalid_arguments').details![0].path).toBe('/blocks/0/columns');
  });

  it.each([
    ['a row it does not have', { Colour: 'Good' }, '/answers/grid/Colour', /^is not a row of this matrix/],
    ['a column it does not have', { Price: 'Superb' }, '/answers/grid/Price', /^must be one of the columns/],
    ['a list in a single-column matrix', { Price: ['Good'] }, '/answers/grid/Price', /^takes one column/],
    ['a list instead of an object', ['Good'], '/answers/grid', /^must be an object from row to column/],
  ])('refuses %s at its path, in create_response and check_response alike', async (_, grid, path, message) => {
    const sent = { publicId, answers: { grid } };
    const res = await callTool(app, token, 'create_response', sent);
    const error = expectError(res, 400, 'invalid_arguments');
    expect(error.details).toEqual([{ path, message: expect.stringMatching(message) }]);
    const dry = await callTool(app, token, 'check_response', sent);
    expect(dry.status).toBe(200);
    expect(dry.body.errors.map((e: { path: string }) => e.path)).toEqual([path]);
  });

  it('takes answers from the API, shown by labels row -> column, and the follow-up only for a poor Support row', async () => {
    for (let i = 0; i < N; i++) {
      const res = await callTool(app, token, 'create_response', { publicId, answers: answersOf(i) });
      expect(res.status).toBe(200);
      const grid = answersOf(i).grid;
      if (grid) expect(res.body.answers.grid).toEqual(grid);
    }
    const rows = await storedRows();
    expect(rows).toHaveLength(N);
    // Stored by ids: row id -> column id.
    const first = answersOf(0).grid as Record<string, string>;
    expect(rows[0].answers[id.grid]).toEqual(
      Object.fromEntries(Object.entries(first).map(([r, c]) => [rowId('grid', r), colId('grid', c)])),
    );
    const asked = await callTool(app, token, 'check_response', {
      publicId,
      answers: { grid: { Support: 'Fair' }, why: 'Slow' },
    });
    expect(asked.body.ok).toBe(true);
    const notAsked = await callTool(app, token, 'check_response', {
      publicId,
      answers: { grid: { Support: 'Good' }, why: 'Slow' },
    });
    expect(notAsked.body.ok).toBe(false);
  });

  it('takes a matrix from the page without JavaScript: one radio group per row, refused in the page words when required rows are missing', async () => {
    const required = await callTool(app, token, 'create_form', {
      title: 'Grid page',
      blocks: [{ type: 'matrix', title: 'Rate', ref: 'g', rows: ['A', 'B'], columns: ['Yes', 'No'], required: true }],
    });
    const pid = required.body.publicId;
    await callTool(app, token, 'publish_form', { publicId: pid });
    const f = await app.get(FormsService).get(ws.id, pid);
    const g = f.blocks[0];
    const [a, b] = g.rows!;
    const [yes, no] = g.columns!;
    const page = await request(app.getHttpServer()).get(`/f/${pid}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`name="${g.id}:${a.id}" value="${yes.id}"`);
    expect(page.text).toContain('role="radiogroup"');
    const post = (body: string) => request(app.getHttpServer()).post(`/f/${pid}`).type('form').send(body);
    // The block's own field, posted by hand with rows named like Object's properties: rows that do not exist.
    for (const row of ['constructor', '__proto__']) {
      const forged = await post(`${g.id}=${row}%3Ax`);
      expect(forged.status).toBe(400);
      expect(forged.text).toContain('<html');
    }
    const half = await post(`${g.id}%3A${a.id}=${yes.id}`);
    expect(half.status).toBe(400);
    expect(half.text).toContain('Answer every row.');
    const ok = await post(`${g.id}%3A${a.id}=${yes.id}&${g.id}%3A${b.id}=${no.id}`);
    expect(ok.status).toBe(200);
    const [row] = await db.query('SELECT answers FROM responses WHERE form_id = $1', [f.id]);
    expect(row.answers).toEqual({ [g.id]: { [a.id]: yes.id, [b.id]: no.id } });
  });

  it('summarizes each row by column, equal to a recount of the stored rows', async () => {
    const rows = await storedRows();
    const res = await callTool(app, token, 'summarize_responses', { publicId });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ publicId, ...summarize(form.blocks, rows) });
    const grid = res.body.blocks.find((b: { blockId: string }) => b.blockId === id.grid);
    const price = grid.rows.find((r: { label: string }) => r.label === 'Price');
    const good = colId('grid', 'Good');
    expect(price.columns.find((c: { id: string }) => c.id === good).count).toBe(
      rows.filter((r) => (r.answers[id.grid] as Record<string, string> | undefined)?.[rowId('grid', 'Price')] === good)
        .length,
    );
    const tags = res.body.blocks.find((b: { blockId: string }) => b.blockId === id.tags);
    const poor = tags.rows[0].columns[0];
    expect(poor.count).toBe(
      rows.filter((r) =>
        ((r.answers[id.tags] as Record<string, string[]> | undefined)?.[rowId('tags', 'Price')] ?? []).includes(
          colId('tags', 'Poor'),
        ),
      ).length,
    );
  });

  it('filters on a matrix row and on a ranking position with exact totals in list, summary and NDJSON', async () => {
    const rows = await storedRows();
    const cell = (r: StoredResponse, ref: string, row: string) =>
      (r.answers[id[ref]] as Record<string, string | string[]> | undefined)?.[rowId(ref, row)];
    const cases: Array<[object, (r: StoredResponse) => boolean]> = [
      [
        { block: 'grid', row: 'Price', op: 'equals', value: 'Good' },
        (r) => cell(r, 'grid', 'Price') === colId('grid', 'Good'),
      ],
      [
        { block: 'grid', row: 'Support', op: 'in', value: ['Poor', 'Excellent'] },
        (r) => [colId('grid', 'Poor'), colId('grid', 'Excellent')].includes(cell(r, 'grid', 'Support') as string),
      ],
      [{ block: 'grid', row: 'Docs', op: 'answered' }, (r) => cell(r, 'grid', 'Docs') !== undefined],
      [
        { block: 'tags', row: 'Price', op: 'contains', value: 'Fair' },
        (r) => ((cell(r, 'tags', 'Price') as string[] | undefined) ?? []).includes(colId('tags', 'Fair')),
      ],
      [
        { block: 'rank', choice: 'Speed', op: 'lte', value: 1 },
        (r) =>
          (r.answers[id.rank] as string[]).indexOf(blockOf('rank').choices!.find((c) => c.label === 'Speed')!.id) === 0,
      ],
    ];
    for (const [where, keep] of cases) {
      const matching = rows.filter(keep);
      expect(matching.length).toBeGreaterThan(0);
      expect(matching.length).toBeLessThan(rows.length);
      const listed = await callTool(app, token, 'list_responses', { publicId, where, limit: 200 });
      expect(listed.status).toBe(200);
      expect(listed.body.total).toBe(matching.length);
      const summary = await callTool(app, token, 'summarize_responses', { publicId, where });
      expect(summary.body).toEqual({ publicId, ...summarize(form.blocks, matching) });
      const link = await callTool(app, token, 'export_responses', { publicId, where, format: 'ndjson' });
      const lines = (await download(link.body.url)).text.trim().split('\n');
      expect(lines).toHaveLength(matching.length);
    }
  });

  it('exports a CSV with one column per row that parses back to what list_responses shows', async () => {
    const listed = await callTool(app, token, 'list_responses', { publicId, limit: 200, order: 'oldest' });
    const link = await callTool(app, token, 'export_responses', { publicId, format: 'csv' });
    const res = await download(link.body.url);
    expect(res.status).toBe(200);
    const records: Record<string, string>[] = parse(res.text, { columns: true, bom: true });
    expect(records).toHaveLength(listed.body.total);
    expect(Object.keys(records[0])).toEqual(expect.arrayContaining(ROWS.map((r) => `Rate us on: ${r}`)));
    const byId = new Map(records.map((r) => [r.id, r]));
    for (const r of listed.body.responses as Array<{ id: string; answers: Record<string, unknown> }>) {
      const grid = (r.answers[id.grid] ?? {}) as Record<string, string>;
      const tags = (r.answers[id.tags] ?? {}) as Record<string, string[]>;
      for (const row of ROWS) expect(byId.get(r.id)![`Rate us on: ${row}`]).toBe(grid[row] ?? '');
      for (const row of ['Price', 'Speed'])
        expect(byId.get(r.id)![`What fits: ${row}`]).toBe((tags[row] ?? []).join('; '));
      expect(byId.get(r.id)!['How likely are you to recommend us?']).toBe(String(r.answers[id.nps]));
    }
  });

  it('removing a row or a column drops those answers once the loss is accepted, and the summary equals a recount', async () => {
    const got = await callTool(app, token, 'get_form', { publicId });
    type Shown = { ref?: string; rows?: string[]; columns?: string[] };
    const blocks = (got.body.blocks as Shown[]).map((b) =>
      b.ref === 'grid'
        ? { ...b, rows: ROWS.filter((r) => r !== 'Docs') }
        : b.ref === 'tags'
          ? { ...b, columns: COLUMNS.slice(1) }
          : b,
    );
    const refused = await callTool(app, token, 'update_form', { publicId, blocks });
    const error = expectError(refused, 400, 'tool_error');
    expect(error.details!.map((d) => d.path)).toEqual(['/blocks/1/rows', '/blocks/2/columns']);
    expect(error.message).toContain('removing the row "Docs" of the matrix "Rate us on"');
    const docs = rowId('grid', 'Docs');
    const poor = colId('tags', 'Poor');
    const updated = await callTool(app, token, 'update_form', { publicId, blocks, acceptAnswerLoss: true });
    expect(updated.status).toBe(200);
    form = await app.get(FormsService).get(ws.id, publicId);
    const rows = await storedRows();
    for (const r of rows) {
      expect(Object.keys((r.answers[id.grid] as object | undefined) ?? {})).not.toContain(docs);
      for (const cols of Object.values((r.answers[id.tags] as Record<string, string[]> | undefined) ?? {})) {
        expect(cols).not.toContain(poor);
        expect(cols.length).toBeGreaterThan(0);
      }
    }
    const res = await callTool(app, token, 'summarize_responses', { publicId });
    expect(res.body).toEqual({ publicId, ...summarize(form.blocks, rows) });
  });
});

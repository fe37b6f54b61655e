import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { BlockInput } from '../../src/forms/blocks';
import { Condition, evaluate, Facts } from '../../src/forms/conditions';
import { conditionSql } from '../../src/forms/conditions/sql';
import { FormRecord, FormsService } from '../../src/forms/forms.service';
import {
  checkResponseFilter,
  MAX_FILTER_BYTES,
  MAX_FILTER_LEAVES,
  ResponseFilter,
} from '../../src/responses/response-filter';
import { ResponsesService } from '../../src/responses/responses.service';
import { StoredResponse, summarize } from '../../src/summaries/summarize';
import { createForm, createResponses, createToken, createWorkspace, TestWorkspace } from '../factories';
import { BLOCKS, rowCases } from '../utils/condition-cases';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/** Facts from answers as stored (by block id) and hidden values. */
const facts = (answers: Record<string, unknown>, hidden: Record<string, unknown> = {}): Facts => ({
  answer: (id) => answers[id],
  hidden: (name) => hidden[name] as string | undefined,
});

/** A form with a block of every kind a filter can test, each with a ref, and a hidden field. */
const FILTER_BLOCKS: BlockInput[] = [
  { ref: 'short', type: 'short_text', title: 'Short' },
  { ref: 'long', type: 'long_text', title: 'Long' },
  { ref: 'number', type: 'number', title: 'Number' },
  { ref: 'rating', type: 'rating', title: 'Rating', max: 5 },
  { ref: 'scale', type: 'linear_scale', title: 'Scale', min: 1, max: 5 },
  { ref: 'date', type: 'date', title: 'Date' },
  { ref: 'colour', type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Blue'] },
  { ref: 'size', type: 'dropdown', title: 'Size', choices: ['Small', 'Large'] },
  { ref: 'pets', type: 'checkboxes', title: 'Pets', choices: ['Cat', 'Dog', 'Fish'] },
  { ref: 'agree', type: 'yes_no', title: 'Agree' },
  { ref: 'nps', type: 'nps', title: 'NPS' },
  { ref: 'rank', type: 'ranking', title: 'Rank', choices: ['Price', 'Speed', 'Care'] },
  { ref: 'grid', type: 'matrix', title: 'Grid', rows: ['Price', 'Speed'], columns: ['Good', 'Bad'] },
  { ref: 'tags', type: 'matrix', title: 'Tags', rows: ['Price', 'Speed'], columns: ['Good', 'Bad'], multiple: true },
];

/** Answers by ref, choices by label: the samples of the condition cases, and others around them. */
const ANSWER_SETS: Array<{ answers: Record<string, unknown>; source?: string }> = [
  {
    answers: {
      short: 'Hello World',
      long: 'Une école',
      number: 4,
      rating: 4,
      scale: 4,
      date: '2026-03-31',
      nps: 4,
      rank: ['Speed', 'Price', 'Care'],
      grid: { Price: 'Good' },
      tags: { Price: ['Good', 'Bad'] },
      colour: 'Red',
      size: 'Small',
      pets: ['Cat', 'Dog'],
      agree: false,
    },
    source: 'Hello World',
  },
  {
    answers: {
      short: 'bye',
      number: 5,
      rating: 2,
      scale: 5,
      nps: 10,
      rank: ['Price', 'Care', 'Speed'],
      date: '2026-04-01',
      colour: 'Blue',
      pets: ['Fish'],
      agree: true,
    },
    source: 'ad',
  },
  { answers: {} },
  {
    answers: {
      short: 'HELLO world',
      number: 3,
      rating: 1,
      date: '2025-01-01',
      colour: 'Red',
      pets: ['Cat'],
      agree: true,
    },
    source: 'mail',
  },
  {
    answers: {
      long: 'ECOLE',
      number: -1.5,
      rating: 5,
      scale: 1,
      date: '2026-03-30',
      size: 'Large',
      pets: ['Dog', 'Cat'],
    },
  },
  { answers: { short: 'Hello World', rating: 2, agree: false, pets: ['Fish', 'Dog', 'Cat'] }, source: '' },
];

describe('response filters: where, since and until on list_responses and summarize_responses', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let token: string;
  let db: DataSource;

  beforeAll(async () => {
    app = await createTestApp();
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'free'); // reads work on every plan
    token = (await createToken(app, ws, { role: 'viewer' })).token;
  });
  afterAll(() => app.close());

  /** The responses of a form as stored, in seq order (the sequencer settled first). */
  const stored = async (form: FormRecord) => {
    await callTool(app, token, 'summarize_responses', { publicId: form.publicId }); // settles
    const rows: Array<StoredResponse & { id: string; hidden: Record<string, string> }> = await db.query(
      `SELECT id, submitted_at AS "submittedAt", answers, hidden, shown FROM responses WHERE form_id = $1 ORDER BY seq`,
      [form.id],
    );
    return rows;
  };
  const checked = (form: FormRecord, filter: ResponseFilter) => checkResponseFilter(form, filter).where as Condition;
  const idsOf = (res: { body: { responses: Array<{ id: string }> } }) => res.body.responses.map((r) => r.id);

  it('translates every case of the condition language to SQL that agrees with the evaluator', async () => {
    const form = { blocks: BLOCKS, hiddenFields: ['source'] };
    const cases = rowCases();
    expect(cases.length).toBeGreaterThan(300);
    const disagreements: unknown[] = [];
    for (const c of cases) {
      const where = checkResponseFilter(form, { where: c.where as Condition }).where!;
      const params: unknown[] = [];
      const sql = conditionSql(where, params, 'r');
      // Values are bound, never written into the SQL.
      expect(sql).not.toMatch(/'Hello|'c_|école|2026-/);
      const n = params.push(JSON.stringify(c.answers), JSON.stringify(c.hidden ?? {}));
      // A row as the table holds it (answers and hidden are NOT NULL: {} when there are none).
      const [{ ok }] = await db.query(
        `SELECT ${sql} AS ok FROM (SELECT $${n - 1}::jsonb AS answers, $${n}::jsonb AS hidden) r`,
        params,
      );
      const evaluated = evaluate(where, facts(c.answers, c.hidden));
      if (ok !== c.expected || evaluated !== c.expected)
        disagreements.push({
          where: c.where,
          answers: c.answers,
          hidden: c.hidden,
          expected: c.expected,
          sql: ok,
          evaluated,
        });
    }
    expect(disagreements).toEqual([]);
  });

  it('takes the largest filter it accepts on a form of twelve text questions (list, summary equal to a recount, export); one condition more is 400', async () => {
    const forms = app.get(FormsService);
    const created = await forms.create(ws.id, {
      title: 'Twelve texts',
      blocks: [
        ...Array.from({ length: 12 }, (_, k) => ({ ref: `t${k}`, type: 'short_text' as const, title: `Text ${k}` })),
        { ref: 'r', type: 'rating', title: 'Rating', max: 5 },
      ],
    });
    const form = await forms.get(ws.id, created.publicId);
    for (let i = 0; i < 30; i++) {
      const answers = Object.fromEntries(
        form.blocks.map((b, k) => [b.id, b.type === 'rating' ? 1 + (i % 5) : `Answer ${i} to ${k}, ΣΑΣ`]),
      );
      await app.get(ResponsesService).create(form, answers, {
        source: 'import',
        submittedAt: new Date(Date.UTC(2026, 0, 1) + i * 1000),
      });
    }
    const rows = await stored(form);
    // Every condition a text contains (the costliest kind), its value as long as the bytes allow;
    // the last one matches answers 1 and 10..19.
    const leaves = Array.from({ length: MAX_FILTER_LEAVES }, (_, i) => ({
      block: `t${i % 12}`,
      op: 'contains',
      value: `no such text ${i} `.padEnd(340, 'x'),
    }));
    leaves[MAX_FILTER_LEAVES - 1] = { block: 't0', op: 'contains', value: 'ANSWER 1' };
    const where = { any: leaves };
    const condition = checked(form, { where: where as Condition });
    const bytes = Math.max(JSON.stringify(where).length, JSON.stringify(condition).length);
    expect(bytes).toBeLessThanOrEqual(MAX_FILTER_BYTES);
    expect(bytes).toBeGreaterThan(MAX_FILTER_BYTES * 0.8);
    const matching = rows.filter((r) => evaluate(condition, facts(r.answers, r.hidden)));
    expect(matching).toHaveLength(11);

    const started = Date.now();
    const page = await callTool(app, token, 'list_responses', { publicId: form.publicId, where, limit: 200 });
    const summary = await callTool(app, token, 'summarize_responses', { publicId: form.publicId, where });
    process.stdout.write(`[response-filters] the largest filter, list and summary: ${Date.now() - started} ms\n`);
    expect(page.status).toBe(200);
    expect(idsOf(page)).toEqual(matching.map((r) => r.id));
    expect(summary.status).toBe(200);
    expect(summary.body).toEqual({ publicId: form.publicId, ...summarize(form.blocks, matching) });
    const link = await callTool(app, token, 'export_responses', { publicId: form.publicId, where, format: 'ndjson' });
    expect(link.status).toBe(200);
    const url = new URL(link.body.url);
    const download = await request(app.getHttpServer()).get(url.pathname + url.search);
    expect(download.status).toBe(200);
    expect(download.text.trim().split('\n')).toHaveLength(matching.length);

    for (const tool of ['list_responses', 'summarize_responses', 'export_responses']) {
      const more = { any: [...leaves, { block: 't1', op: 'answered' }] };
      const error = expectError(
        await callTool(app, token, tool, { publicId: form.publicId, where: more }),
        400,
        'invalid_arguments',
      );
      expect(error.hint).toContain(`at most ${MAX_FILTER_LEAVES} conditions`);
      expect(error.details).toEqual([{ path: '/where', message: expect.any(String) }]);
    }
  });

  describe('on a form with a block of every kind, refs and a hidden field', () => {
    let form: FormRecord;
    let rows: Awaited<ReturnType<typeof stored>>;

    beforeAll(async () => {
      const forms = app.get(FormsService);
      const created = await forms.create(ws.id, {
        title: 'Every kind',
        blocks: FILTER_BLOCKS,
        hiddenFields: ['source'],
      });
      form = await forms.get(ws.id, created.publicId);
      const byRef = new Map(form.blocks.map((b) => [b.ref!, b.id]));
      const responses = app.get(ResponsesService);
      for (const [i, set] of ANSWER_SETS.entries()) {
        const answers = Object.fromEntries(Object.entries(set.answers).map(([ref, v]) => [byRef.get(ref)!, v]));
        await responses.create(form, answers, {
          source: 'import',
          submittedAt: new Date(Date.UTC(2026, 0, 1) + i * 1000),
          ...(set.source === undefined ? {} : { hidden: { source: set.source } }),
        });
      }
      rows = await stored(form);
      expect(rows).toHaveLength(ANSWER_SETS.length);
    });

    /**
     * Every distinct condition of the cases that names blocks this form has (not email, url, phone,
     * nor cv: a file_upload's answers name stored uploads, which imports do not make; its cases run
     * through the SQL translation above).
     */
    const wheres = () => {
      const seen = new Map<string, Record<string, unknown>>();
      // Choices by label: the ids of the cases are those of their own blocks.
      const labels = new Map(BLOCKS.flatMap((b) => b.choices ?? []).map((c) => [c.id, c.label]));
      for (const c of rowCases()) {
        const key = JSON.stringify(c.where).replace(/"(c_\w+)"/g, (_, id: string) => JSON.stringify(labels.get(id)));
        if (!/"block":"(email|url|phone|cv)"/.test(key)) seen.set(key, JSON.parse(key));
      }
      return [...seen.values()];
    };

    it('every operator as a filter: list_responses returns exactly the responses the evaluator takes, by ref or by id', async () => {
      const sizes = new Set<number>();
      for (const where of wheres()) {
        const condition = checked(form, { where: where as Condition });
        const expected = rows.filter((r) => evaluate(condition, facts(r.answers, r.hidden))).map((r) => r.id);
        sizes.add(expected.length);
        const res = await callTool(app, token, 'list_responses', { publicId: form.publicId, where, limit: 200 });
        expect(res.status).toBe(200);
        expect({ where, ids: idsOf(res), total: res.body.total }).toEqual({
          where,
          ids: expected,
          total: expected.length,
        });
        // The condition as stored (blocks by id, choices by id) filters the same.
        const byId = await callTool(app, token, 'list_responses', {
          publicId: form.publicId,
          where: condition,
          limit: 200,
        });
        expect(idsOf(byId)).toEqual(expected);
      }
      // The cases select different subsets, none and all of them included: the test can fail.
      expect(sizes).toContain(0);
      expect(sizes).toContain(rows.length);
      expect(sizes.size).toBeGreaterThan(4);
    }, 180_000); // some 260 calls, on the embedded database too

    it('an equals of one value, on a block or a hidden field, read through the filter indexes (GIN) takes exactly the rows the evaluator takes', async () => {
      const equals = [
        ...wheres().filter((w) => w.op === 'equals' && !Array.isArray(w.value)),
        { hidden: 'source', op: 'equals', value: 'ad' },
        { hidden: 'source', op: 'equals', value: 'Hello World' },
        { hidden: 'source', op: 'equals', value: '' },
        { hidden: 'source', op: 'equals', value: 'nobody' },
      ];
      expect(equals.length).toBeGreaterThan(10);
      const sizes = new Set<number>();
      for (const where of equals) {
        const condition = checked(form, { where: where as Condition });
        const expected = rows.filter((r) => evaluate(condition, facts(r.answers, r.hidden))).map((r) => r.id);
        sizes.add(expected.length);
        const params: unknown[] = [form.id];
        const sql = conditionSql(condition, params, 'r');
        // No scan allowed, and no form_id condition for a btree to serve: only the GIN index can answer.
        const read = `SELECT r.id, r.form_id FROM responses r WHERE ${sql} AND $1::uuid IS NOT NULL`;
        const { plan, ids } = await db.transaction(async (tx) => {
          await tx.query('SET LOCAL enable_seqscan = off');
          await tx.query('SET LOCAL enable_indexscan = off');
          const explained: Array<{ 'QUERY PLAN': string }> = await tx.query(`EXPLAIN ${read}`, params);
          const found: Array<{ id: string; form_id: string }> = await tx.query(read, params);
          return {
            plan: explained.map((l) => l['QUERY PLAN']).join('\n'),
            ids: found.filter((r) => r.form_id === form.id).map((r) => r.id),
          };
        });
        if (sql !== 'false')
          expect({ where, index: /IDX_responses_(answers|hidden)/.exec(plan)?.[0] }).toEqual({
            where,
            index: 'block' in where ? 'IDX_responses_answers' : 'IDX_responses_hidden',
          });
        const order = new Map(rows.map((r, i) => [r.id, i]));
        expect({ where, ids: ids.sort((a, b) => order.get(a)! - order.get(b)!) }).toEqual({ where, ids: expected });
      }
      expect(sizes).toContain(0);
      expect(sizes.size).toBeGreaterThan(2);
    });

    it('filters on hidden fields, and text contains ignores case', async () => {
      const list = (where: unknown) =>
        callTool(app, token, 'list_responses', { publicId: form.publicId, where }).then(idsOf);
      expect(await list({ hidden: 'source', op: 'equals', value: 'ad' })).toEqual([rows[1].id]);
      expect(await list({ hidden: 'source', op: 'in', value: ['ad', 'mail'] })).toEqual([rows[1].id, rows[3].id]);
      expect(await list({ hidden: 'source', op: 'not_answered' })).toEqual([rows[2].id, rows[4].id, rows[5].id]);
      expect(await list({ block: 'short', op: 'contains', value: 'hello' })).toEqual([
        rows[0].id,
        rows[3].id,
        rows[5].id,
      ]);
      expect(await list({ block: 'long', op: 'contains', value: 'ÉCOLE' })).toEqual([rows[0].id]);
      expect(await list({ block: 'long', op: 'contains', value: 'ecole' })).toEqual([rows[4].id]);
      expect(
        await list({
          all: [{ block: 'short', op: 'contains', value: 'WORLD' }, { not: { hidden: 'source', op: 'answered' } }],
        }),
      ).toEqual([rows[5].id]);
    });

    it('filtered summaries equal a recount of the matching responses, in the shape of an unfiltered one', async () => {
      const all = await callTool(app, token, 'summarize_responses', { publicId: form.publicId });
      expect(all.body).toEqual({ publicId: form.publicId, ...summarize(form.blocks, rows) });
      for (const where of wheres()) {
        const condition = checked(form, { where: where as Condition });
        const matching = rows.filter((r) => evaluate(condition, facts(r.answers, r.hidden)));
        const res = await callTool(app, token, 'summarize_responses', { publicId: form.publicId, where });
        expect(res.status).toBe(200);
        expect({ where, summary: res.body }).toEqual({
          where,
          summary: { publicId: form.publicId, ...summarize(form.blocks, matching) },
        });
      }
      // A segment: how did the people who answered Yes rate us?
      const yes = await callTool(app, token, 'summarize_responses', {
        publicId: form.publicId,
        where: { block: 'agree', op: 'equals', value: true },
      });
      const rating = yes.body.blocks.find((b: { type: string }) => b.type === 'rating');
      expect(yes.body.total).toBe(2);
      expect(rating).toMatchObject({ answered: 2, min: 1, max: 2, mean: 1.5 });
    }, 180_000);

    it('refuses a filter that does not fit the form with 400 invalid_arguments at the condition path, and changes nothing', async () => {
      const before = await callTool(app, token, 'summarize_responses', { publicId: form.publicId });
      const bad: Array<[unknown, string[]]> = [
        [
          {
            all: [
              { block: 'short', op: 'answered' },
              { block: 'nope', op: 'equals', value: 1 },
            ],
          },
          ['/where/all/1/block'],
        ],
        [{ block: 'rating', op: 'contains', value: 'x' }, ['/where/op']],
        [{ block: 'colour', op: 'equals', value: 'Purple' }, ['/where/value']],
        [{ block: 'pets', op: 'in', value: ['Cat', 'Hamster'] }, ['/where/value/1']],
        [{ block: 'date', op: 'gt', value: '2026-02-30' }, ['/where/value']],
        [{ hidden: 'medium', op: 'answered' }, ['/where/hidden']],
        [{ any: [{ not: { hidden: 'source', op: 'gt', value: 'a' } }] }, ['/where/any/0/not/op']],
        [{ all: [{ any: [{ not: { block: 'short', op: 'answered' } }] }] }, ['/where/all/0/any/0']],
      ];
      for (const tool of ['list_responses', 'summarize_responses']) {
        for (const [where, paths] of bad) {
          const error = expectError(
            await callTool(app, token, tool, { publicId: form.publicId, where }),
            400,
            'invalid_arguments',
          );
          expect({ tool, where, paths: error.details!.map((d) => d.path) }).toEqual({ tool, where, paths });
        }
        const times = expectError(
          await callTool(app, token, tool, {
            publicId: form.publicId,
            since: '2026-01-01T00:00:00+23:59',
            until: '0000-01-01T00:00:00Z',
          }),
          400,
          'invalid_arguments',
        );
        expect(times.details!.map((d) => d.path).sort()).toEqual(['/since', '/until']);
        const schema = expectError(
          await callTool(app, token, tool, { publicId: form.publicId, where: { block: 'short', op: 'like' } }),
          400,
          'invalid_arguments',
        );
        expect(schema.details!.map((d) => d.path)).toEqual(['/where/op']);
      }
      expect((await callTool(app, token, 'summarize_responses', { publicId: form.publicId })).body).toEqual(
        before.body,
      );
      expect(await stored(form)).toEqual(rows);
    });

    it('since is inclusive and until exclusive, alone, together and with where, in both orders', async () => {
      const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
      const list = async (args: Record<string, unknown>) => {
        const res = await callTool(app, token, 'list_responses', { publicId: form.publicId, ...args });
        expect(res.status).toBe(200);
        return { total: res.body.total, ids: idsOf(res) };
      };
      const ids = rows.map((r) => r.id);
      expect(await list({ since: at(1), until: at(3) })).toEqual({ total: 2, ids: ids.slice(1, 3) });
      expect(await list({ until: at(3) })).toEqual({ total: 3, ids: ids.slice(0, 3) });
      expect(await list({ until: at(0) })).toEqual({ total: 0, ids: [] });
      expect(await list({ since: at(2), until: at(2) })).toEqual({ total: 0, ids: [] });
      expect(await list({ since: at(4) })).toEqual({ total: 2, ids: ids.slice(4) });
      expect(await list({ until: at(99) })).toEqual({ total: 6, ids });
      expect(await list({ since: at(1), until: at(5), order: 'newest', limit: 2, offset: 1 })).toEqual({
        total: 4,
        ids: [ids[3], ids[2]],
      });
      const where = { block: 'colour', op: 'equals', value: 'Red' }; // rows 0 and 3
      expect(await list({ where, since: at(1) })).toEqual({ total: 1, ids: [ids[3]] });
      expect(await list({ where, until: at(3) })).toEqual({ total: 1, ids: [ids[0]] });
      expect(await list({ where, order: 'newest' })).toEqual({ total: 2, ids: [ids[3], ids[0]] });
      const summary = await callTool(app, token, 'summarize_responses', {
        publicId: form.publicId,
        since: at(1),
        until: at(3),
      });
      expect(summary.body).toEqual({ publicId: form.publicId, ...summarize(form.blocks, rows.slice(1, 3)) });
    });
  });

  /**
   * Walks a form under `where` (limit 4) while 25 responses arrive, and checks that each match
   * committed before the walk was seen exactly once, that only matches were seen, in order, and
   * that the segment's summary is a recount of the matches.
   */
  const walkWhileWriting = async (
    where: Record<string, unknown>,
    matches: (answers: Record<string, unknown>, form: FormRecord) => boolean,
  ) => {
    const busy = await createForm(app, ws);
    const resolved = { ...where, block: busy.blocks[where.block as number].id };
    await createResponses(app, busy, 60);
    const matchingBefore = (await stored(busy)).filter((r) => matches(r.answers, busy)).map((r) => r.id);
    expect(matchingBefore.length).toBeGreaterThan(15);
    const seen: string[] = [];
    let offset = 0;
    let total = Infinity;
    let pages = 0;
    const arriving = createResponses(app, busy, 25, { start: new Date() }); // new responses arrive now, after the others
    while (offset < total) {
      const res = await callTool(app, token, 'list_responses', {
        publicId: busy.publicId,
        where: resolved,
        limit: 4,
        offset,
      });
      expect(res.status).toBe(200);
      total = res.body.total;
      seen.push(...idsOf(res));
      offset += res.body.count;
      pages++;
      if (res.body.count === 0) break;
    }
    await arriving;
    expect(pages).toBeGreaterThan(4);
    for (const id of matchingBefore) expect(seen.filter((s) => s === id)).toHaveLength(1);
    expect(new Set(seen).size).toBe(seen.length);
    // Everything seen matches, in seq order.
    const all = await stored(busy);
    const order = new Map(all.map((r, i) => [r.id, i]));
    const matching = new Set(all.filter((r) => matches(r.answers, busy)).map((r) => r.id));
    expect(seen.every((id) => matching.has(id))).toBe(true);
    expect(seen.map((id) => order.get(id))).toEqual([...seen.map((id) => order.get(id)!)].sort((a, b) => a - b));
    // The total now is every match; the segment's summary is a recount of the matches, and the
    // unfiltered one is still the maintained one.
    const now = await callTool(app, token, 'list_responses', { publicId: busy.publicId, where: resolved, limit: 1 });
    expect(now.body.total).toBe(matching.size);
    const segment = await callTool(app, token, 'summarize_responses', { publicId: busy.publicId, where: resolved });
    expect(segment.body).toEqual({
      publicId: busy.publicId,
      ...summarize(
        busy.blocks,
        all.filter((r) => matching.has(r.id)),
      ),
    });
    const whole = await callTool(app, token, 'summarize_responses', { publicId: busy.publicId });
    expect(whole.body).toEqual({ publicId: busy.publicId, ...summarize(busy.blocks, all) });
  };

  // createResponses answers block 2 (a choice) Red, Green, Blue in turn and rates block 4 1 + i % 5.
  it('keeps a filtered walk exact while responses arrive concurrently: each match committed before it, exactly once', () =>
    walkWhileWriting({ block: 4, op: 'lte', value: 2 }, (a, f) => (a[f.blocks[4].id] as number) <= 2));

  it('keeps it exact when the total comes from the maintained answer counts (one choice block, equals or in)', async () => {
    const notGreen = (a: Record<string, unknown>, f: FormRecord) =>
      a[f.blocks[2].id] !== f.blocks[2].choices!.find((c) => c.label === 'Green')!.id;
    await walkWhileWriting({ block: 2, op: 'in', value: ['Red', 'Blue'] }, notGreen);
  });
});

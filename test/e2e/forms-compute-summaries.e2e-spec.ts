import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { ResponseStatsRepository } from '../../src/summaries/response-stats.repository';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { SessionsService } from '../../src/settings/sessions.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

/**
 * What responses computed, summarised and filtered (issue 46): summarize_responses gives number
 * variables' count, mean, min, max and distribution, text variables' count and latest values, and
 * the responses per ending, equal to a recount written here, unfiltered (the maintained counts),
 * filtered and for a segment; list_responses filters on variables and on "ending" with exact
 * totals and pages; deletes, a full recount and an accepted answer loss keep them exact.
 */
describe('forms that compute: summaries and filters (issue 46)', () => {
  let app: NestFastifyApplication;
  let token: string;
  let publicId: string;
  let ws: TestWorkspace;

  /** What each response sends: n (a number or none), a word, the hidden src. */
  const SENT: Array<{ n?: number; word?: string; src: string }> = [
    { n: 3, word: '<script>alert(1)</script>', src: 'a' },
    { n: 12, word: 'b', src: 'b' },
    { n: 5, src: 'a' },
    { n: 20, word: 'd', src: 'a' },
    { word: 'e', src: 'b' },
    { n: 3, word: 'f', src: 'a' },
    { n: 12.5, word: 'g', src: 'a' },
  ];
  const ids: string[] = [];
  let kept: number[] = []; // indexes of SENT still stored

  /** The independent evaluation: total adds n, label is the word, the ending "big" from 10 on. */
  const computed = (s: (typeof SENT)[number]) => {
    const total = s.n ?? 0;
    return { total, label: s.word ?? '', ending: total >= 10 ? 'big' : 'small' };
  };

  /** The expected summary of the responses `at` (indexes of SENT, oldest first). */
  const expected = (at: number[], endings = ['small', 'big']) => {
    const c = at.map((i) => computed(SENT[i]));
    const totals = c.map((x) => x.total);
    const values = [...new Set(totals)].sort((a, b) => a - b);
    const labelled = at.filter((i) => computed(SENT[i]).label !== '');
    const titles: Record<string, string> = { small: 'Small', big: 'Big' };
    return {
      variables: [
        {
          name: 'total',
          type: 'number',
          answered: c.length,
          min: c.length ? Math.min(...totals) : null,
          max: c.length ? Math.max(...totals) : null,
          mean: c.length ? Math.round((totals.reduce((a, b) => a + b, 0) / c.length) * 10_000) / 10_000 : null,
          ...(c.length
            ? { distribution: values.map((value) => ({ value, count: totals.filter((t) => t === value).length })) }
            : {}),
        },
        {
          name: 'label',
          type: 'text',
          answered: labelled.length,
          latest: labelled
            .slice(-5)
            .reverse()
            .map((i) => computed(SENT[i]).label),
        },
      ],
      endings: endings.map((ref) => ({ ref, title: titles[ref], count: c.filter((x) => x.ending === ref).length })),
    };
  };

  const summary = async (args: Record<string, unknown> = {}) => {
    const res = await callTool(app, token, 'summarize_responses', { publicId, ...args });
    expect(res.status).toBe(200);
    const { variables, endings } = res.body;
    return {
      variables: variables.map((v: { latest?: Array<{ value: string }> }) =>
        v.latest ? { ...v, latest: v.latest.map((l) => l.value) } : v,
      ),
      endings,
    };
  };

  /** list_responses with `where`: its total, and the ids of every page of 2 read one after another. */
  const listed = async (where: unknown) => {
    const first = await callTool(app, token, 'list_responses', { publicId, where, limit: 2 });
    expect(first.status).toBe(200);
    const all: string[] = [];
    for (let offset = 0; offset < first.body.total + 2; offset += 2) {
      const page = await callTool(app, token, 'list_responses', { publicId, where, limit: 2, offset });
      expect(page.body.total).toBe(first.body.total);
      all.push(...page.body.responses.map((r: { id: string }) => r.id));
    }
    return { total: first.body.total as number, ids: all.sort() };
  };
  const idsWhere = (test: (c: ReturnType<typeof computed>) => boolean) =>
    kept
      .filter((i) => test(computed(SENT[i])))
      .map((i) => ids[i])
      .sort();

  beforeAll(async () => {
    app = await createTestApp();
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    const made = await callTool(app, token, 'create_form', {
      title: 'Sums',
      hiddenFields: ['src'],
      variables: [
        { name: 'total', type: 'number', initial: 0 },
        { name: 'label', type: 'text', initial: '' },
      ],
      blocks: [
        { ref: 'n', type: 'number', title: 'n', calculate: [{ variable: 'total', op: 'add', value: { block: 'n' } }] },
        {
          ref: 'word',
          type: 'short_text',
          title: 'word',
          calculate: [{ variable: 'label', op: 'set', value: { block: 'word' } }],
        },
        {
          type: 'page_break',
          title: 'More',
          jumps: [{ if: { variable: 'total', op: 'gte', value: 10 }, to: 'ending:big' }],
        },
        { ref: 'more', type: 'short_text', title: 'more' },
      ],
      endings: [
        { ref: 'small', title: 'Small' },
        { ref: 'big', title: 'Big' },
      ],
    });
    expect(made.status).toBe(200);
    publicId = made.body.publicId;
    for (const s of SENT) {
      const answers = { ...(s.n === undefined ? {} : { n: s.n }), ...(s.word === undefined ? {} : { word: s.word }) };
      const res = await callTool(app, token, 'create_response', { publicId, answers, hidden: { src: s.src } });
      expect(res.status).toBe(200);
      expect([res.body.variables, res.body.ending]).toEqual([
        { total: computed(s).total, label: computed(s).label },
        computed(s).ending,
      ]);
      ids.push(res.body.id);
    }
    kept = SENT.map((_, i) => i);
  });
  afterAll(() => app.close());

  it('summarize_responses: variables and endings equal a recount, unfiltered, filtered and for a segment', async () => {
    expect(await summary()).toEqual(expected(kept));
    expect(await summary({ where: { block: 'n', op: 'gte', value: 5 } })).toEqual(
      expected(kept.filter((i) => (SENT[i].n ?? 0) >= 5)),
    );
    // A hidden value is a segment (its block aggregates kept apart); what it computed is counted from its rows.
    expect(await summary({ where: { hidden: 'src', op: 'equals', value: 'a' } })).toEqual(
      expected(kept.filter((i) => SENT[i].src === 'a')),
    );
    expect(await summary({ where: { variable: 'ending', op: 'equals', value: 'nobody' } })).toEqual(expected([]));
  });

  it("the results page's Summary shows the endings reached and the variables", async () => {
    const email = `viewer-${randomBytes(4).toString('hex')}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(ws.slug, email, 'viewer');
    const cookie = `fw_session=${await app.get(SessionsService).start(user.id)}`;
    const res = await request(app.getHttpServer())
      .get(`/settings/w/${ws.slug}/forms/${publicId}`)
      .set('Cookie', cookie);
    expect(res.status).toBe(200);
    const want = expected(kept);
    expect(res.text).toContain('Endings reached');
    expect(res.text).toContain('<th scope="row">Big</th><td>3</td><td>42.9%</td>');
    expect(res.text).toContain('Variable total');
    expect(res.text).toContain(
      `Lowest 0 · mean ${(want.variables[0] as { mean: number }).mean.toLocaleString('en-US')} · highest 20`,
    );
    expect(res.text).toContain('Variable label');
    expect(res.text).toContain('<caption>Answers to Variable total per value</caption>');
    expect(res.text).toContain('<th scope="row">3</th><td>2</td><td>28.6%</td>');
  });

  it('list_responses filters on variables and on ending: exact totals and pages', async () => {
    const cases: Array<[unknown, (c: ReturnType<typeof computed>) => boolean]> = [
      [{ variable: 'ending', op: 'equals', value: 'big' }, (c) => c.ending === 'big'],
      [{ variable: 'ending', op: 'in', value: ['small', 'nobody'] }, (c) => c.ending === 'small'],
      [{ variable: 'ending', op: 'equals', value: '' }, () => false],
      [{ variable: 'ending', op: 'not_equals', value: 'big' }, (c) => c.ending !== 'big'],
      [{ variable: 'total', op: 'equals', value: 3 }, (c) => c.total === 3],
      [{ variable: 'total', op: 'in', value: [12, 12.5, 0] }, (c) => [12, 12.5, 0].includes(c.total)],
      [{ variable: 'total', op: 'gte', value: 5 }, (c) => c.total >= 5],
      [{ variable: 'total', op: 'gt', value: 12 }, (c) => c.total > 12],
      [{ variable: 'total', op: 'lt', value: 12.5 }, (c) => c.total < 12.5],
      [{ variable: 'total', op: 'lte', value: -1 }, (c) => c.total <= -1],
      [{ variable: 'label', op: 'contains', value: 'SCRIPT' }, (c) => c.label.includes('script')],
      [{ variable: 'label', op: 'answered' }, (c) => c.label !== ''],
    ];
    for (const [where, test] of cases) {
      const got = await listed(where);
      expect([where, got.total, got.ids]).toEqual([where, idsWhere(test).length, idsWhere(test)]);
    }
  });

  it('a range that few responses match is read through the values the counts hold: exact totals and pages', async () => {
    const made = await callTool(app, token, 'create_form', {
      title: 'Few in range',
      variables: [{ name: 'score', type: 'number', initial: 0 }],
      blocks: [
        { ref: 'n', type: 'number', title: 'n', calculate: [{ variable: 'score', op: 'add', value: { block: 'n' } }] },
      ],
    });
    expect(made.status).toBe(200);
    const pid = made.body.publicId;
    // 30 responses; decimals and negatives among them, 7 three times.
    const values = [...Array.from({ length: 25 }, (_, i) => i), 12.5, -2.75, 1e-7, 7, 7];
    const sent: Array<[string, number]> = [];
    for (const n of values) {
      const res = await callTool(app, token, 'create_response', { publicId: pid, answers: { n } });
      expect(res.status).toBe(200);
      sent.push([res.body.id, n]);
    }
    // Few matches of many responses: the page reads the values in range from the counts (spied on
    // to show that path runs) and the rows holding one of them through the variables' index.
    const spy = jest.spyOn(app.get(ResponseStatsRepository), 'valuesCompared');
    const cases: Array<[string, number, (n: number) => boolean]> = [
      ['gte', 24, (n) => n >= 24],
      ['lt', -2.5, (n) => n < -2.5],
      ['gt', 12.25, (n) => n > 12.25],
      ['lt', -1, (n) => n < -1],
      ['lte', 0, (n) => n <= 0],
      ['lt', 1e-6, (n) => n < 1e-6],
      ['gte', 20, (n) => n >= 20], // its later pages only: walked first, then through the index
      ['lte', 7, (n) => n <= 7],
    ];
    for (const [op, value, test] of cases) {
      const where = { variable: 'score', op, value };
      const want = sent.filter(([, n]) => test(n)).map(([id]) => id);
      const first = await callTool(app, token, 'list_responses', { publicId: pid, where, limit: 2 });
      const all: string[] = [];
      for (let offset = 0; offset < first.body.total + 2; offset += 2) {
        const page = await callTool(app, token, 'list_responses', { publicId: pid, where, limit: 2, offset });
        expect(page.status).toBe(200);
        all.push(...page.body.responses.map((r: { id: string }) => r.id));
      }
      expect([where, first.body.total, all]).toEqual([where, want.length, want]);
    }
    expect(spy).toHaveBeenCalled();
    spy.mockRestore();
  });

  it('refuses a variable the form lacks at its path, naming its variables and ending', async () => {
    const res = await callTool(app, token, 'list_responses', {
      publicId,
      where: { variable: 'totl', op: 'gte', value: 1 },
    });
    expect([res.status, res.body.error.code, res.body.error.details[0].path]).toEqual([
      400,
      'invalid_arguments',
      '/where/variable',
    ]);
    expect(res.body.error.details[0].message).toContain('total, label, ending');
  });

  it('a delete and a full recount keep them exact', async () => {
    for (const i of [1, 5]) {
      const res = await callTool(app, token, 'delete_response', { publicId, responseId: ids[i] });
      expect(res.status).toBe(200);
    }
    kept = kept.filter((i) => i !== 1 && i !== 5);
    expect(await summary()).toEqual(expected(kept));
    const big = await listed({ variable: 'ending', op: 'equals', value: 'big' });
    expect(big.total).toBe(idsWhere((c) => c.ending === 'big').length);
    const db = app.get(DataSource);
    const counts = () =>
      db.query(
        `SELECT block_id, value, num, count FROM answer_counts a JOIN forms f ON f.id = a.form_id
          WHERE f.public_id = $1 ORDER BY 1, 2`,
        [publicId],
      );
    const before = await counts();
    const [{ id }] = await db.query('SELECT id FROM forms WHERE public_id = $1', [publicId]);
    await db.transaction((tx) => app.get(ResponseStatsRepository).recomputeResponseStats(tx, id));
    expect(await counts()).toEqual(before);
  });

  it('an accepted answer loss takes a removed variable and ending out of the counts', async () => {
    const res = await callTool(app, token, 'update_form', {
      publicId,
      variables: [{ name: 'total', type: 'number', initial: 0 }],
      endings: [{ ref: 'small', title: 'Small' }],
      blocks: [
        { ref: 'n', type: 'number', title: 'n', calculate: [{ variable: 'total', op: 'add', value: { block: 'n' } }] },
        { ref: 'word', type: 'short_text', title: 'word' },
      ],
      acceptAnswerLoss: true,
    });
    expect(res.status).toBe(200);
    const after = await summary();
    const want = expected(kept, ['small']);
    expect(after).toEqual({ variables: [want.variables[0]], endings: want.endings });
    const gone = await app.get(DataSource).query(
      `SELECT a.block_id, a.value FROM answer_counts a JOIN forms f ON f.id = a.form_id
          WHERE f.public_id = $1 AND (a.block_id = ':variable:label' OR (a.block_id = ':ending' AND a.value = 'big'))`,
      [publicId],
    );
    expect(gone).toEqual([]);
  });

  it('a partial stores what each save computes; partials are summarised and filtered by it', async () => {
    const made = await callTool(app, token, 'create_form', {
      title: 'Partial sums',
      partialResponses: true,
      variables: [{ name: 'total', type: 'number', initial: 0 }],
      blocks: [
        { ref: 'n', type: 'number', title: 'n', calculate: [{ variable: 'total', op: 'add', value: { block: 'n' } }] },
        { type: 'page_break', title: 'Two' },
        {
          ref: 'm',
          type: 'number',
          title: 'm',
          calculate: [{ variable: 'total', op: 'multiply', value: { block: 'm' } }],
        },
      ],
    });
    expect(made.status).toBe(200);
    const pid = made.body.publicId;
    const stored = async (id: string) =>
      (await app.get(DataSource).query('SELECT variables, ending FROM partial_responses WHERE id = $1', [id]))[0];
    const p = await callTool(app, token, 'create_response', { publicId: pid, answers: { n: 4 }, partial: true });
    expect(p.status).toBe(200);
    expect(await stored(p.body.id)).toEqual({ variables: { total: 4 }, ending: null });
    const q = await callTool(app, token, 'create_response', { publicId: pid, answers: { n: 2 }, partial: true });
    const changed = await callTool(app, token, 'update_response', {
      publicId: pid,
      responseId: q.body.id,
      answers: { m: 5 },
    });
    expect(changed.status).toBe(200);
    expect(await stored(q.body.id)).toEqual({ variables: { total: 10 }, ending: null });
    const sum = await callTool(app, token, 'summarize_responses', { publicId: pid, status: 'partial' });
    expect(sum.body.error).toBeUndefined();
    expect(sum.body.variables).toEqual([
      {
        name: 'total',
        type: 'number',
        answered: 2,
        min: 4,
        max: 10,
        mean: 7,
        distribution: [
          { value: 4, count: 1 },
          { value: 10, count: 1 },
        ],
      },
    ]);
    const list = await callTool(app, token, 'list_responses', {
      publicId: pid,
      status: 'partial',
      where: { variable: 'total', op: 'gt', value: 5 },
    });
    expect([list.body.total, list.body.responses.map((r: { id: string }) => r.id)]).toEqual([1, [q.body.id]]);
  });
});

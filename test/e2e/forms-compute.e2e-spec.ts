import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';
import { handScore, QUIZ, quizAnswers } from '../utils/quiz-form';

/**
 * Forms that compute (issue 46): a quiz made by one create_form call, whose score, correct count
 * and ending check_response and create_response give as a hand calculation does; variables and
 * the ending stored, shown by get_response and list_responses, never taken from the caller; the
 * save-time checks, each 400 invalid_arguments at its path.
 */

describe('forms that compute (issue 46)', () => {
  let app: NestFastifyApplication;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp();
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(() => app.close());

  const create = (input: Record<string, unknown>) => callTool(app, token, 'create_form', input);
  const refusedAt = async (input: Record<string, unknown>) => {
    const res = await create({ title: 'T', ...input });
    expect([res.status, res.body.error?.code]).toEqual([400, 'invalid_arguments']);
    return (res.body.error.details as Array<{ path: string; message: string }>).map((d) => d.path);
  };

  it('a 10-question quiz with points, a pass mark and two endings: one create_form call; results equal a hand calculation', async () => {
    const made = await create(QUIZ);
    expect(made.status).toBe(200);
    expect(made.body.maxScore).toBe(20);
    expect(made.body.endings.map((e: { ref: string }) => e.ref)).toEqual(['fail', 'pass']);
    const { publicId } = made.body;
    const cases: Array<Array<0 | 1 | 2 | undefined>> = [
      [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
      [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      [1, 1, 1, 1, 1, 1, 1, 2, 0, undefined], // 14 + 1: pass
      [1, 1, 1, 1, 1, 1, 0, 2, 0, undefined], // 12 + 1: fail
      [2, 2, 2, 2, 2, 2, 2, 2, 2, 2],
    ];
    for (const picks of cases) {
      const expected = handScore(picks);
      const args = { publicId, answers: quizAnswers(picks), hidden: { name: 'Ada' } };
      const dry = await callTool(app, token, 'check_response', args);
      expect(dry.status).toBe(200);
      expect([dry.body.ok, dry.body.variables, dry.body.ending]).toEqual([
        true,
        { score: expected.score, correctCount: expected.correctCount },
        expected.ending,
      ]);
      // The jump to the "pass" ending ends the form at the page_break (endedBy).
      expect(dry.body.endedBy).toBe(expected.ending === 'pass' ? made.body.blocks[10].id : undefined);
      const stored = await callTool(app, token, 'create_response', args);
      expect(stored.status).toBe(200);
      expect([stored.body.variables, stored.body.ending]).toEqual([dry.body.variables, expected.ending]);
      const read = await callTool(app, token, 'get_response', { publicId, responseId: stored.body.id });
      expect([read.body.variables, read.body.ending]).toEqual([dry.body.variables, expected.ending]);
    }
    const list = await callTool(app, token, 'list_responses', { publicId, limit: 10 });
    expect(list.body.responses.map((r: { ending: string }) => r.ending)).toEqual(cases.map((c) => handScore(c).ending));
    const filtered = await callTool(app, token, 'list_responses', {
      publicId,
      where: { variable: 'score', op: 'gte', value: 14 },
    });
    expect(filtered.body.total).toBe(cases.filter((c) => handScore(c).score >= 14).length);
  });

  it('a caller cannot send variables or ending: refused as unknown fields', async () => {
    const { publicId } = (await create(QUIZ)).body;
    for (const extra of [{ variables: { score: 20 } }, { ending: 'pass' }]) {
      const res = await callTool(app, token, 'create_response', { publicId, answers: {}, ...extra });
      expect([res.status, res.body.error.code]).toEqual([400, 'invalid_arguments']);
    }
  });

  it('calculations in path order: set, add a block, multiply, divide by zero reported and left as it was', async () => {
    const made = await create({
      title: 'Price',
      variables: [
        { name: 'price', type: 'number', initial: 10 },
        { name: 'label', type: 'text' },
      ],
      blocks: [
        {
          ref: 'seats',
          type: 'number',
          title: 'Seats',
          calculate: [
            { variable: 'price', op: 'multiply', value: { block: 'seats' } },
            { if: { block: 'seats', op: 'gt', value: 10 }, variable: 'label', op: 'set', value: 'big' },
            { variable: 'label', op: 'add', value: '!' },
          ],
        },
        {
          ref: 'discount',
          type: 'number',
          title: 'Discount',
          calculate: [{ variable: 'price', op: 'divide', value: { block: 'discount' } }],
        },
        { ref: 'cheap', type: 'yes_no', title: 'Cheap?', showIf: { variable: 'price', op: 'lt', value: 50 } },
      ],
    });
    expect(made.status).toBe(200);
    const { publicId } = made.body;
    const dry = await callTool(app, token, 'check_response', { publicId, answers: { seats: 12, discount: 0 } });
    expect(dry.body.variables).toEqual({ price: 120, label: 'big!' });
    expect(dry.body.problems.map((p: { path: string }) => p.path)).toEqual(['/blocks/1/calculate/0']);
    expect(dry.body.shown).not.toContain(made.body.blocks[2].id);
    const small = await callTool(app, token, 'check_response', {
      publicId,
      answers: { seats: 2, discount: 4, cheap: true },
    });
    expect([small.body.ok, small.body.variables]).toEqual([true, { price: 5, label: '!' }]);
  });

  it('refuses at its path: a name clash, an unknown name (did you mean), a calculation on a statement, text on a number, a bad redirect, a condition on a variable before it changes, a recall of a later block', async () => {
    const n = { name: 'total', type: 'number' };
    expect(await refusedAt({ hiddenFields: ['total'], variables: [n] })).toEqual(['/variables/0/name']);
    expect(await refusedAt({ variables: [n], blocks: [{ ref: 'total', type: 'number', title: 'x' }] })).toEqual([
      '/variables/0/name',
    ]);
    const misspelt = await create({
      title: 'T',
      variables: [n],
      blocks: [{ type: 'number', title: 'x', calculate: [{ variable: 'totl', op: 'add', value: 1 }] }],
    });
    expect(misspelt.body.error.details).toEqual([
      { path: '/blocks/0/calculate/0/variable', message: expect.stringContaining('did you mean "total"') },
    ]);
    expect(
      await refusedAt({
        variables: [n],
        blocks: [{ type: 'statement', title: 'x', calculate: [{ variable: 'total', op: 'add', value: 1 }] }],
      }),
    ).toEqual(['/blocks/0/calculate']);
    expect(
      await refusedAt({
        variables: [n],
        blocks: [{ type: 'number', title: 'x', calculate: [{ variable: 'total', op: 'set', value: 'ten' }] }],
      }),
    ).toEqual(['/blocks/0/calculate/0/value']);
    expect(await refusedAt({ endings: [{ ref: 'a', title: 'A', redirectUrl: 'javascript:alert(1)' }] })).toEqual([
      '/endings/0/redirectUrl',
    ]);
    expect(
      await refusedAt({
        variables: [n],
        blocks: [
          { type: 'number', title: 'x', showIf: { variable: 'total', op: 'gt', value: 1 } },
          { type: 'number', title: 'y', calculate: [{ variable: 'total', op: 'add', value: 1 }] },
        ],
      }),
    ).toEqual(['/blocks/0/showIf/variable']);
    expect(
      await refusedAt({
        blocks: [
          { type: 'short_text', title: 'Hello {{name}}' },
          { ref: 'name', type: 'short_text', title: 'Name?' },
        ],
      }),
    ).toEqual(['/blocks/0/title']);
    expect(
      await refusedAt({
        blocks: [{ type: 'page_break', jumps: [{ if: { variable: 'x', op: 'answered' }, to: 'ending:nope' }] }],
      }),
    ).toEqual(['/blocks/0/jumps/0/if/variable', '/blocks/0/jumps/0/to']);
  });

  it('refuses a redirect that recalls in its scheme, host or port (an open redirect), with a hint; keeps recall after the host', async () => {
    for (const redirectUrl of [
      'https://{{hidden:next}}/',
      'https://a.com{{hidden:next}}',
      'https://a.com:{{hidden:next}}/',
    ]) {
      const res = await create({
        title: 'T',
        hiddenFields: ['next'],
        endings: [{ ref: 'a', title: 'A', redirectUrl }],
      });
      expect([res.status, res.body.error?.code, res.body.error?.details]).toEqual([
        400,
        'invalid_arguments',
        [{ path: '/endings/0/redirectUrl', message: expect.stringContaining('path, query or fragment') }],
      ]);
      expect(res.body.error.hint).toContain('only after its host');
    }
    const ok = await create({
      title: 'T',
      hiddenFields: ['next'],
      endings: [{ ref: 'a', title: 'A', redirectUrl: 'https://a.com/{{hidden:next}}?n={{hidden:next}}' }],
    });
    expect(ok.status).toBe(200);
  });

  it('update_form keeps variables and endings when omitted, and checks blocks against them', async () => {
    const made = await create(QUIZ);
    const { publicId } = made.body;
    const renamed = await callTool(app, token, 'update_form', { publicId, title: 'Renamed' });
    expect([renamed.status, renamed.body.endings?.length]).toEqual([200, 2]);
    // get_form's blocks, variables and endings sent back as they are: the same form.
    const read = await callTool(app, token, 'get_form', { publicId });
    const { blocks, endings } = read.body;
    const same = await callTool(app, token, 'update_form', { publicId, blocks, endings });
    expect(same.status).toBe(200);
    expect([same.body.blocks, same.body.endings, same.body.maxScore]).toEqual([blocks, endings, 20]);
    const bad = await callTool(app, token, 'update_form', { publicId, endings: [{ ref: 'other', title: 'Other' }] });
    expect([bad.status, bad.body.error.details.map((d: { path: string }) => d.path)]).toEqual([
      400,
      ['/blocks/10/jumps/0/to'],
    ]);
  });

  it("docs/tools.md's lead-scoring example computes what the docs say", async () => {
    const doc = readFileSync(join(__dirname, '../../docs/tools.md'), 'utf8');
    const json = /Lead scoring:[\s\S]*?```json\n([\s\S]*?)```/.exec(doc)![1];
    const made = await create(JSON.parse(json));
    expect(made.status).toBe(200);
    const check = (answers: Record<string, unknown>) =>
      callTool(app, token, 'check_response', { publicId: made.body.publicId, answers }).then((r) => r.body);
    expect(await check({ email: 'ada@acme.com', seats: 120, budget: '10k or more' })).toMatchObject({
      ok: true,
      variables: { lead: 260, segment: 'smb' },
      ending: 'hot',
    });
    expect(await check({ email: 'ada@gmail.com', seats: 600, budget: 'None yet' })).toMatchObject({
      ok: true,
      variables: { lead: 600, segment: 'enterprise' },
      ending: 'hot',
    });
    expect(await check({ email: 'ada@gmail.com', seats: 5, notes: 'x' })).toMatchObject({
      variables: { lead: 5 },
      ending: 'nurture',
    });
  });

  it('exports: a CSV column per variable and "ending", written by PostgreSQL as the reference writes it; NDJSON lines carry them', async () => {
    const { publicId } = (await create(QUIZ)).body;
    const picks: Array<Array<0 | 1 | 2 | undefined>> = [
      [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
      [2, 0, undefined, 1, 1, 1, 1, 1, 1, 1],
    ];
    for (const p of picks)
      expect(
        (await callTool(app, token, 'create_response', { publicId, answers: quizAnswers(p), hidden: { name: '=cmd' } }))
          .status,
      ).toBe(200);
    const get = async (format: string) => {
      const link = await callTool(app, token, 'export_responses', { publicId, format });
      expect(link.status).toBe(200);
      const url = new URL(link.body.url);
      return (await request(app.getHttpServer()).get(url.pathname + url.search)).text;
    };
    const csv = (await get('csv'))
      .replace(/^\uFEFF/, '')
      .trim()
      .split('\r\n');
    expect(csv[0].split(',').slice(-4)).toEqual(['name', 'score', 'correctCount', 'ending']);
    expect(csv.slice(1).map((r) => r.split(',').slice(-4))).toEqual(
      picks.map((p) => ["'=cmd", String(handScore(p).score), String(handScore(p).correctCount), handScore(p).ending]),
    );
    const lines = (await get('ndjson'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.variables, l.ending])).toEqual(
      picks.map((p) => [{ score: handScore(p).score, correctCount: handScore(p).correctCount }, handScore(p).ending]),
    );
  });

  it('removing a variable or an ending that responses hold follows the answer-loss rule (acceptAnswerLoss)', async () => {
    const made = await create({
      title: 'Loss',
      variables: [{ name: 'total', type: 'number' }],
      blocks: [
        { ref: 'n', type: 'number', title: 'n', calculate: [{ variable: 'total', op: 'add', value: { block: 'n' } }] },
      ],
      endings: [{ ref: 'done', title: 'Done' }],
    });
    const { publicId } = made.body;
    const stored = await callTool(app, token, 'create_response', { publicId, answers: { n: 4 } });
    expect([stored.body.variables, stored.body.ending]).toEqual([{ total: 4 }, 'done']);
    const edit = { publicId, variables: [], endings: [], blocks: [{ ref: 'n', type: 'number', title: 'n' }] };
    const refused = await callTool(app, token, 'update_form', edit);
    expect([refused.status, refused.body.error.code]).toEqual([400, 'tool_error']);
    expect(refused.body.error.details.map((d: { path: string }) => d.path)).toEqual(['/variables', '/endings']);
    const accepted = await callTool(app, token, 'update_form', { ...edit, acceptAnswerLoss: true });
    expect(accepted.status).toBe(200);
    const [row] = await app
      .get(DataSource)
      .query('SELECT variables, ending FROM responses WHERE id = $1', [stored.body.id]);
    expect(row).toEqual({ variables: {}, ending: null });
  });
});

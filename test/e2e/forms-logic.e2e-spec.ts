import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { FormsService } from '../../src/forms/forms.service';
import { ResponseStatsRepository } from '../../src/summaries/response-stats.repository';
import { summarize } from '../../src/summaries/summarize';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/**
 * Forms that branch (issue 25): block refs, page breaks, showIf, jumps and hidden fields, checked
 * when a form is saved, and answers that follow the path they produce.
 */
describe('forms that branch', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let token: string;
  let db: DataSource;

  beforeAll(async () => {
    // Webhook events are written but not sent, so their stored bodies can be read.
    app = await createTestApp({ WEBHOOKS_DELIVERY: 'false', WEBHOOKS_ALLOW_PRIVATE_URLS: 'true' });
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    db = app.get(DataSource);
  });
  afterAll(() => app.close());

  const call = (name: string, body: unknown) => callTool(app, token, name, body);

  /** A three-page survey: a jump to the end on No, a block shown on a low score, a page shown by a hidden field. */
  const SURVEY = {
    title: 'Feedback',
    hiddenFields: ['source'],
    blocks: [
      { ref: 'happy', type: 'yes_no', title: 'Did you enjoy it?', required: true },
      { ref: 'name', type: 'short_text', title: 'Your name' },
      {
        ref: 'details',
        type: 'page_break',
        title: 'Details',
        jumps: [{ if: { block: 'happy', op: 'equals', value: false }, to: 'end' }],
      },
      { ref: 'score', type: 'rating', title: 'How much?', required: true, minLabel: 'A bit', maxLabel: 'A lot' },
      {
        ref: 'why',
        type: 'long_text',
        title: 'What could be better?',
        required: true,
        showIf: { block: 'score', op: 'lte', value: 2 },
      },
      { ref: 'colour', type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Blue'] },
      {
        ref: 'support',
        type: 'page_break',
        title: 'Support',
        showIf: { hidden: 'source', op: 'equals', value: 'support' },
      },
      { ref: 'ticket', type: 'short_text', title: 'Ticket number', required: true },
    ],
  };

  async function survey() {
    const res = await call('create_form', SURVEY);
    expect(res.status).toBe(200);
    return res.body as { publicId: string; version: number; blocks: Array<Record<string, unknown>> };
  }
  const idOf = (form: { blocks: Array<Record<string, unknown>> }, ref: string) =>
    form.blocks.find((b) => b.ref === ref)!.id as string;

  describe('saving a form', () => {
    it('takes refs, pages, rules, end labels and hidden fields in one create_form call, and reads them back by ref', async () => {
      const form = await survey();
      expect(form.blocks.map((b) => [b.ref, b.type])).toEqual(SURVEY.blocks.map((b) => [b.ref, b.type]));
      const read = (await call('get_form', { publicId: form.publicId })).body;
      expect(read.hiddenFields).toEqual(['source']);
      const colour = read.blocks[5];
      expect(read.blocks[2]).toEqual({
        id: idOf(form, 'details'),
        ref: 'details',
        type: 'page_break',
        title: 'Details',
        required: false,
        jumps: [{ if: { block: 'happy', op: 'equals', value: false }, to: 'end' }],
      });
      expect(read.blocks[3]).toMatchObject({ minLabel: 'A bit', maxLabel: 'A lot' });
      expect(read.blocks[4].showIf).toEqual({ block: 'score', op: 'lte', value: 2 });
      expect(read.blocks[6].showIf).toEqual({ hidden: 'source', op: 'equals', value: 'support' });
      expect(colour.choices.map((c: { label: string }) => c.label)).toEqual(['Red', 'Blue']);
      // Stored by id: the block ids and choice ids are in the settings, the refs only name them.
      const [row] = await db.query(
        `SELECT b.settings FROM blocks b JOIN forms f ON f.id = b.form_id WHERE f.public_id = $1 AND b.id = $2`,
        [form.publicId, idOf(form, 'why')],
      );
      expect(row.settings.showIf).toEqual({ block: idOf(form, 'score'), op: 'lte', value: 2 });
    });

    it("create_form's description carries an example that creates a form with a jump and a condition as described", async () => {
      const tools = await request(app.getHttpServer()).get('/api/v1/tools');
      const tool = tools.body.tools.find((t: { name: string }) => t.name === 'create_form');
      const example = JSON.parse(/\n(\{"title".*\})$/s.exec(tool.description)![1]);
      const created = await call('create_form', example);
      expect(created.status).toBe(200);
      const publicId = created.body.publicId;
      // No: the jump ends the form, so nothing after it may be answered.
      expect((await call('create_response', { publicId, answers: { happy: false } })).status).toBe(200);
      expectError(
        await call('create_response', { publicId, answers: { happy: false, score: 5 } }),
        400,
        'invalid_arguments',
      );
      // Yes with a low score: "why" is asked; with a high one it is not.
      expect((await call('create_response', { publicId, answers: { happy: true, score: 1, why: 'x' } })).status).toBe(
        200,
      );
      expectError(
        await call('create_response', { publicId, answers: { happy: true, score: 5, why: 'x' } }),
        400,
        'invalid_arguments',
      );
    });

    it('a form read back can be sent to update_form unchanged, which changes nothing (the version stays)', async () => {
      const form = await survey();
      const read = (await call('get_form', { publicId: form.publicId })).body;
      const res = await call('update_form', {
        publicId: read.publicId,
        version: read.version,
        title: read.title,
        hiddenFields: read.hiddenFields,
        blocks: read.blocks,
      });
      expect(res.status).toBe(200);
      expect(res.body.blocks).toEqual(read.blocks);
      expect(res.body.version).toBe(read.version);
      expect((await call('get_form', { publicId: form.publicId })).body).toEqual(read);
    });

    it('a form without pages, rules or hidden fields reads as before (no new fields)', async () => {
      const res = await call('create_form', { title: 'Plain', blocks: [{ type: 'short_text', title: 'Name' }] });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).not.toContain('hiddenFields');
      expect(Object.keys(res.body.blocks[0]).sort()).toEqual(['id', 'required', 'title', 'type']);
      const r = await call('create_response', {
        publicId: res.body.publicId,
        answers: { [res.body.blocks[0].id]: 'Ada' },
      });
      expect(r.status).toBe(200);
      // Every response carries its status, times and last page (issue 45); nothing else is new.
      expect(Object.keys(r.body).sort()).toEqual([
        'answers',
        'id',
        'lastPage',
        'startedAt',
        'status',
        'submittedAt',
        'updatedAt',
      ]);
    });

    const refused: Array<[string, Array<Record<string, unknown>>, string, RegExp, string[]?]> = [
      ['a ref that is not a ref', [{ ref: 'Bad-Ref', type: 'short_text', title: 'A' }], '/blocks/0/ref', /pattern/],
      ['a ref that looks like a block id', [{ ref: 'b_name', type: 'short_text', title: 'A' }], '/blocks/0/ref', /b_/],
      [
        'a ref used twice',
        [
          { ref: 'name', type: 'short_text', title: 'A' },
          { ref: 'name', type: 'short_text', title: 'B' },
        ],
        '/blocks/1/ref',
        /another block/,
      ],
      [
        'an operator that does not fit the block',
        [
          { ref: 'name', type: 'short_text', title: 'A' },
          { type: 'short_text', title: 'B', showIf: { block: 'name', op: 'gt', value: 3 } },
        ],
        '/blocks/1/showIf/op',
        /does not fit/,
      ],
      [
        'a choice the block does not have',
        [
          { ref: 'colour', type: 'dropdown', title: 'A', choices: ['Red'] },
          { type: 'short_text', title: 'B', showIf: { block: 'colour', op: 'equals', value: 'Green' } },
        ],
        '/blocks/1/showIf/value',
        /not a choice/,
      ],
      [
        'a ref that does not exist',
        [{ type: 'short_text', title: 'B', showIf: { block: 'nobody', op: 'answered' } }],
        '/blocks/0/showIf/block',
        /not the id or ref/,
      ],
      [
        'a condition on a later block',
        [
          { type: 'short_text', title: 'B', showIf: { block: 'later', op: 'answered' } },
          { ref: 'later', type: 'short_text', title: 'Later' },
        ],
        '/blocks/0/showIf/block',
        /after this rule/,
      ],
      [
        'a hidden field the form does not declare',
        [{ type: 'short_text', title: 'B', showIf: { hidden: 'campaign', op: 'answered' } }],
        '/blocks/0/showIf/hidden',
        /hiddenFields/,
      ],
      [
        'a jump backwards',
        [
          { ref: 'p1', type: 'page_break' },
          { ref: 'a', type: 'yes_no', title: 'A' },
          { ref: 'p2', type: 'page_break', jumps: [{ if: { block: 'a', op: 'equals', value: true }, to: 'p1' }] },
          { type: 'short_text', title: 'B' },
        ],
        '/blocks/2/jumps/0/to',
        /forward/,
      ],
      [
        'a jump to a block that is not a page_break',
        [
          { ref: 'a', type: 'yes_no', title: 'A' },
          { type: 'page_break', jumps: [{ if: { block: 'a', op: 'answered' }, to: 'b' }] },
          { ref: 'b', type: 'short_text', title: 'B' },
        ],
        '/blocks/1/jumps/0/to',
        /page_break/,
      ],
      [
        'jumps on a block that is not a page_break',
        [{ type: 'short_text', title: 'A', jumps: [{ if: { hidden: 'x', op: 'answered' }, to: 'end' }] }],
        '/blocks/0/jumps',
        /only a page_break/,
      ],
      [
        'a condition nested four levels',
        [
          { ref: 'a', type: 'yes_no', title: 'A' },
          { type: 'short_text', title: 'B', showIf: { all: [{ any: [{ not: { block: 'a', op: 'answered' } }] }] } },
        ],
        '/blocks/1/showIf/all/0/any/0',
        /at most 3 levels/,
      ],
      [
        'end labels on a block other than rating or scale',
        [{ type: 'number', title: 'N', minLabel: 'low' }],
        '/blocks/0/minLabel',
        /setting/,
      ],
      ['a required page_break', [{ type: 'page_break', required: true }], '/blocks/0/required', /no answer/],
      ['a block other than page_break without title', [{ type: 'short_text' }], '/blocks/0/title', /required/],
    ];
    it.each(refused)('refuses %s: 400 invalid_arguments at the rule', async (_what, blocks, path, message) => {
      const error = expectError(await call('create_form', { title: 'Bad', blocks }), 400, 'invalid_arguments');
      const detail = error.details!.find((d) => d.path === path);
      expect([path, detail?.message]).toEqual([path, expect.stringMatching(message)]);
    });

    it('refuses hidden field names that are not like refs, repeated, or more than 20', async () => {
      for (const [hiddenFields, path] of [
        [['Source'], '/hiddenFields/0'],
        [['source', 'source'], '/hiddenFields/1'],
        [Array.from({ length: 21 }, (_, i) => `h${i}`), '/hiddenFields'],
      ] as const) {
        const error = expectError(await call('create_form', { title: 'Bad', hiddenFields }), 400, 'invalid_arguments');
        expect(error.details!.map((d) => d.path)).toContain(path);
      }
    });
  });

  describe('refs', () => {
    it('answers are taken by ref, and read by ref with answersBy "ref" (a block without a ref stays under its id)', async () => {
      const created = await call('create_form', {
        title: 'Refs',
        blocks: [
          { ref: 'name', type: 'short_text', title: 'Name', required: true },
          { type: 'checkboxes', title: 'Pets', choices: ['Cat', 'Dog'] },
        ],
      });
      const { publicId, blocks } = created.body;
      const pets = blocks[1].id;
      const r = await call('create_response', { publicId, answers: { name: 'Ada', [pets]: ['Dog'] } });
      expect(r.status).toBe(200);
      // Answered as sent (issue 49): the one sent by ref under its ref.
      expect(r.body.answers).toEqual({ name: 'Ada', [pets]: ['Dog'] });
      const byRef = await call('get_response', { publicId, responseId: r.body.id, answersBy: 'ref' });
      expect(byRef.body.answers).toEqual({ name: 'Ada', [pets]: ['Dog'] });
      const byId = await call('get_response', { publicId, responseId: r.body.id });
      expect(byId.body.answers).toEqual({ [blocks[0].id]: 'Ada', [pets]: ['Dog'] });
      const listed = await call('list_responses', { publicId, answersBy: 'ref' });
      expect(listed.body.responses[0].answers).toEqual({ name: 'Ada', [pets]: ['Dog'] });
      // A wrong answer given by ref is refused at the ref; a block answered twice (id and ref) too.
      const bad = expectError(
        await call('create_response', { publicId, answers: { name: 5 } }),
        400,
        'invalid_arguments',
      );
      expect(bad.details).toEqual([{ path: '/answers/name', message: 'must be a string (send "5")' }]);
      const twice = expectError(
        await call('create_response', { publicId, answers: { name: 'A', [blocks[0].id]: 'B' } }),
        400,
        'invalid_arguments',
      );
      expect(twice.details!.map((d) => d.path)).toEqual(['/answers/name']);
      expectError(
        await call('get_response', { publicId, responseId: r.body.id, answersBy: 'title' }),
        400,
        'invalid_arguments',
      );
    });

    it('update_form: a block sent with a known ref and no id is that block (its answers kept); a ref is kept when omitted', async () => {
      const created = await call('create_form', {
        title: 'Keep',
        blocks: [{ ref: 'name', type: 'short_text', title: 'Name' }],
      });
      const { publicId } = created.body;
      const id = created.body.blocks[0].id;
      await call('create_response', { publicId, answers: { name: 'Ada' } });
      const byRef = await call('update_form', {
        publicId,
        blocks: [
          { type: 'short_text', title: 'Intro' },
          { ref: 'name', type: 'short_text', title: 'Full name' },
        ],
      });
      expect(byRef.status).toBe(200); // no answer loss: the block kept its id
      expect(byRef.body.blocks[1]).toMatchObject({ id, ref: 'name', title: 'Full name' });
      const byId = await call('update_form', { publicId, blocks: [{ id, type: 'short_text', title: 'Name' }] });
      expect(byId.body.blocks[0]).toMatchObject({ id, ref: 'name' });
      const removed = await call('update_form', {
        publicId,
        blocks: [{ id, ref: null, type: 'short_text', title: 'Name' }],
      });
      expect(removed.body.blocks[0].ref).toBeUndefined();
    });
  });

  describe('answers follow the path', () => {
    it('a jump to end: later blocks are not required, and an answer to one is refused with a hint naming the jump', async () => {
      const form = await survey();
      const ok = await call('create_response', { publicId: form.publicId, answers: { happy: false, name: 'Ada' } });
      expect(ok.status).toBe(200);
      const [row] = await db.query('SELECT shown, hidden FROM responses WHERE id = $1', [ok.body.id]);
      expect(row.shown).toEqual([idOf(form, 'happy'), idOf(form, 'name')]);
      const error = expectError(
        await call('create_response', { publicId: form.publicId, answers: { happy: false, score: 4 } }),
        400,
        'invalid_arguments',
      );
      expect(error.details).toEqual([{ path: '/answers/score', message: expect.stringContaining('jump') }]);
      expect(error.hint).toContain('"happy"');
      expect(error.hint).toContain('end');
    });

    it('required only when shown: showIf on a block, and on a page (by a hidden field)', async () => {
      const form = await survey();
      const publicId = form.publicId;
      // A high score: "why" is not shown, so not required; the support page is not shown either.
      const high = await call('create_response', { publicId, answers: { happy: true, score: 5 } });
      expect(high.status).toBe(200);
      const [row] = await db.query('SELECT shown FROM responses WHERE id = $1', [high.body.id]);
      expect(row.shown).toEqual(['happy', 'name', 'details', 'score', 'colour'].map((r) => idOf(form, r)));
      // A low score: "why" is shown and required.
      const low = expectError(
        await call('create_response', { publicId, answers: { happy: true, score: 1 } }),
        400,
        'invalid_arguments',
      );
      // Left out, it is named by its ref (the caller's convention for blocks that have one).
      expect(low.details).toEqual([{ path: '/answers/why', message: 'is required' }]);
      // "why" answered on a high score: refused, naming its condition.
      const stale = expectError(
        await call('create_response', { publicId, answers: { happy: true, score: 5, why: 'x' } }),
        400,
        'invalid_arguments',
      );
      expect(stale.details).toEqual([{ path: '/answers/why', message: expect.stringContaining('"score"') }]);
      // The support page is shown by the hidden field, and its required block then needs an answer.
      const support = expectError(
        await call('create_response', { publicId, answers: { happy: true, score: 5 }, hidden: { source: 'support' } }),
        400,
        'invalid_arguments',
      );
      expect(support.details).toEqual([{ path: '/answers/ticket', message: 'is required' }]);
      const ticket = await call('create_response', {
        publicId,
        answers: { happy: true, score: 5, ticket: 'T-1' },
        hidden: { source: 'support' },
      });
      expect(ticket.status).toBe(200);
      expect(ticket.body.hidden).toEqual({ source: 'support' });
      expect(
        expectError(
          await call('create_response', { publicId, answers: { happy: true, score: 5, ticket: 'T-1' } }),
          400,
          'invalid_arguments',
        ).details,
      ).toEqual([{ path: '/answers/ticket', message: expect.stringContaining('source') }]);
    });

    it('a jump over a page', async () => {
      const created = await call('create_form', {
        title: 'Skip',
        blocks: [
          { ref: 'kind', type: 'multiple_choice', title: 'Kind', choices: ['Person', 'Company'], required: true },
          {
            type: 'page_break',
            jumps: [{ if: { block: 'kind', op: 'equals', value: 'Person' }, to: 'contact' }],
          },
          { ref: 'company', type: 'short_text', title: 'Company name', required: true },
          { ref: 'contact', type: 'page_break', title: 'Contact' },
          { ref: 'email', type: 'email', title: 'Email', required: true },
        ],
      });
      const { publicId } = created.body;
      const person = await call('create_response', { publicId, answers: { kind: 'Person', email: 'a@b.co' } });
      expect(person.status).toBe(200);
      const company = expectError(
        await call('create_response', { publicId, answers: { kind: 'Company', email: 'a@b.co' } }),
        400,
        'invalid_arguments',
      );
      expect(company.details!.map((d) => d.path)).toEqual(['/answers/company']);
      const skipped = expectError(
        await call('create_response', { publicId, answers: { kind: 'Person', company: 'X', email: 'a@b.co' } }),
        400,
        'invalid_arguments',
      );
      expect(skipped.details).toEqual([{ path: '/answers/company', message: expect.stringContaining('"Contact"') }]);
    });
  });

  describe('errors an agent can act on (issue 34)', () => {
    const refused = async (body: unknown) => expectError(await call('create_response', body), 400, 'invalid_arguments');
    const stored = async (publicId: string) =>
      Number(
        (
          await db.query(
            'SELECT count(*) AS n FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1',
            [publicId],
          )
        )[0].n,
      );

    it('names answers by the key the caller used, and a required block left out by its ref', async () => {
      const form = await survey();
      const publicId = form.publicId;
      // The agent's case: answers by ref, the required rating left out.
      const missing = await refused({ publicId, answers: { happy: true, name: 'Ada' } });
      expect(missing.details).toEqual([{ path: '/answers/score', message: 'is required' }]);
      // Out of range by ref, and by id: each at the key sent.
      expect((await refused({ publicId, answers: { happy: true, score: 0 } })).details).toEqual([
        { path: '/answers/score', message: 'must be an integer from 1 to 5 (this rating runs from 1 to its max, 5)' },
      ]);
      const scoreId = idOf(form, 'score');
      expect((await refused({ publicId, answers: { happy: true, [scoreId]: '4' } })).details).toEqual([
        { path: `/answers/${scoreId}`, message: 'must be an integer from 1 to 5 (send 4, not "4")' },
      ]);
      expect(await stored(publicId)).toBe(0);
    });

    it('points at the fix: a hidden field sent in answers, a misspelt ref', async () => {
      const { publicId } = await survey();
      const hidden = await refused({ publicId, answers: { happy: false, source: 'newsletter' } });
      expect(hidden.details).toEqual([
        {
          path: '/answers/source',
          message: 'is a hidden field of this form, not a block: send it in hidden, beside answers',
        },
      ]);
      expect(hidden.hint).toBe(
        'Send hidden field values in hidden, beside answers: "hidden": { "source": "newsletter" }.',
      );
      const typo = await refused({ publicId, answers: { hapy: false } });
      expect(typo.details).toEqual([
        { path: '/answers/hapy', message: 'this form has no block with this id or ref; did you mean `happy`?' },
        { path: '/answers/happy', message: 'is required' },
        // (Not answered, so no jump to end: the next page's required rating too.)
        { path: '/answers/score', message: 'is required' },
      ]);
      expect(typo.hint).toBe('Did you mean `happy`? Answers are keyed by block id or ref, as get_form shows them.');
      expect(await stored(publicId)).toBe(0);
    });

    it('min on a rating: ratings run from 1 to their max', async () => {
      const error = expectError(
        await call('create_form', {
          title: 'Stars',
          blocks: [{ ref: 'sat', type: 'rating', title: 'Rate us', min: 0 }],
        }),
        400,
        'invalid_arguments',
      );
      expect(error.details).toEqual([
        {
          path: '/blocks/0/min',
          message:
            'is not a setting of rating blocks: a rating runs from 1 to its max (3 to 10, default 5); for a scale from 0, use linear_scale',
        },
      ]);
      expect(error.hint).toBe(
        'A rating runs from 1 to its max (3 to 10, default 5); for a scale from 0, use linear_scale.',
      );
    });
  });

  describe('hidden fields', () => {
    it('are stored, returned by get_response and list_responses, and unknown names are refused', async () => {
      const form = await survey();
      const publicId = form.publicId;
      const r = await call('create_response', {
        publicId,
        answers: { happy: false },
        hidden: { source: 'newsletter' },
      });
      expect(r.status).toBe(200);
      expect(r.body.hidden).toEqual({ source: 'newsletter' });
      expect((await call('get_response', { publicId, responseId: r.body.id })).body.hidden).toEqual({
        source: 'newsletter',
      });
      const listed = await call('list_responses', { publicId });
      expect(listed.body.responses.map((x: { hidden: unknown }) => x.hidden)).toEqual([{ source: 'newsletter' }]);
      const error = expectError(
        await call('create_response', { publicId, answers: { happy: false }, hidden: { utm_source: 'x' } }),
        400,
        'invalid_arguments',
      );
      expect(error.details).toEqual([{ path: '/hidden/utm_source', message: expect.stringContaining('source') }]);
      const none = await call('create_response', { publicId, answers: { happy: false } });
      expect(none.body.hidden).toEqual({});
    });

    it("are carried in response.created webhooks, with each answer's block ref", async () => {
      const hook = await call('create_webhook', { url: 'http://127.0.0.1:9/hook', events: ['response.created'] });
      expect(hook.status).toBe(200);
      try {
        const form = await survey();
        const r = await call('create_response', {
          publicId: form.publicId,
          answers: { happy: true, score: 5, [idOf(form, 'name')]: 'Ada' },
          hidden: { source: 'ad' },
        });
        expect(r.status).toBe(200);
        const [row] = await db.query(
          `SELECT payload FROM webhook_deliveries WHERE event_type = 'response.created' AND payload LIKE '%' || $1 || '%'`,
          [r.body.id],
        );
        const body = JSON.parse(row.payload);
        expect(body.data.response).toEqual({
          id: r.body.id,
          submittedAt: r.body.submittedAt,
          // By block id, whatever the caller sent (its answer is keyed as sent: issue 49).
          answers: { [idOf(form, 'happy')]: true, [idOf(form, 'score')]: 5, [idOf(form, 'name')]: 'Ada' },
          refs: { [idOf(form, 'happy')]: 'happy', [idOf(form, 'name')]: 'name', [idOf(form, 'score')]: 'score' },
          hidden: { source: 'ad' },
          status: 'completed',
          startedAt: r.body.submittedAt,
          updatedAt: r.body.submittedAt,
          lastPage: r.body.lastPage,
        });
      } finally {
        await call('delete_webhook', { webhookId: hook.body.id });
      }
    });
  });

  describe('edits stay safe', () => {
    /** The survey's blocks as read back, changed by `change`, sent back (with acceptAnswerLoss: true). */
    async function edit(
      change: (blocks: Array<Record<string, unknown>>) => Array<Record<string, unknown>>,
      extra = {},
    ) {
      const form = await survey();
      await call('create_response', {
        publicId: form.publicId,
        answers: { happy: true, score: 1, why: 'slow', colour: 'Red' },
      });
      const read = (await call('get_form', { publicId: form.publicId })).body;
      const res = await call('update_form', {
        publicId: form.publicId,
        blocks: change(read.blocks),
        acceptAnswerLoss: true,
        ...extra,
      });
      return { res, form };
    }

    it('refuses removing a block a rule names (at the rule, naming the block), acceptAnswerLoss notwithstanding', async () => {
      const { res } = await edit((blocks) => blocks.filter((b) => b.ref !== 'score'));
      const error = expectError(res, 400, 'invalid_arguments');
      expect(error.details).toEqual([
        { path: '/blocks/3/showIf/block', message: expect.stringContaining('"How much?"') },
      ]);
      expect(error.details![0].message).toContain('removes');
    });

    it('refuses retyping a block a rule names', async () => {
      const { res } = await edit((blocks) =>
        blocks.map((b) => (b.ref === 'score' ? { id: b.id, ref: 'score', type: 'short_text', title: 'How much?' } : b)),
      );
      const error = expectError(res, 400, 'invalid_arguments');
      expect(error.details).toEqual([
        { path: '/blocks/4/showIf/op', message: expect.stringContaining('from rating to short_text') },
      ]);
    });

    it('refuses removing a choice a rule names', async () => {
      const { res } = await edit((blocks) => [
        ...blocks,
        { type: 'short_text', title: 'Why red?', showIf: { block: 'colour', op: 'equals', value: 'Red' } },
      ]).then(async ({ res: first, form }) => {
        expect(first.status).toBe(200);
        const read = (await call('get_form', { publicId: form.publicId })).body;
        const blocks = read.blocks.map((b: Record<string, unknown>) =>
          b.ref === 'colour'
            ? { ...b, choices: (b.choices as Array<{ label: string }>).filter((c) => c.label !== 'Red') }
            : b,
        );
        return { res: await call('update_form', { publicId: form.publicId, blocks, acceptAnswerLoss: true }) };
      });
      const error = expectError(res, 400, 'invalid_arguments');
      expect(error.details).toEqual([
        { path: '/blocks/8/showIf/value', message: expect.stringContaining('removes the choice "Red"') },
      ]);
    });

    it('refuses removing a hidden field a rule names, with or without blocks in the update', async () => {
      const form = await survey();
      const alone = expectError(
        await call('update_form', { publicId: form.publicId, hiddenFields: [] }),
        400,
        'invalid_arguments',
      );
      expect(alone.details).toEqual([{ path: '/hiddenFields', message: expect.stringContaining('/blocks/6/showIf') }]);
      const read = (await call('get_form', { publicId: form.publicId })).body;
      const withBlocks = expectError(
        await call('update_form', { publicId: form.publicId, hiddenFields: [], blocks: read.blocks }),
        400,
        'invalid_arguments',
      );
      expect(withBlocks.details).toEqual([
        { path: '/blocks/6/showIf/hidden', message: expect.stringContaining('removed') },
      ]);
    });

    it('allows it when the same update changes the rule', async () => {
      const { res } = await edit((blocks) =>
        blocks.filter((b) => b.ref !== 'score').map((b) => (b.ref === 'why' ? { ...b, showIf: undefined } : b)),
      );
      expect(res.status).toBe(200);
      const form = await survey();
      const read = (await call('get_form', { publicId: form.publicId })).body;
      const blocks = read.blocks.map((b: Record<string, unknown>) =>
        b.ref === 'support' ? { ...b, showIf: undefined } : b,
      );
      const hidden = await call('update_form', { publicId: form.publicId, hiddenFields: [], blocks });
      expect(hidden.status).toBe(200);
      expect(hidden.body.hiddenFields).toBeUndefined();
    });
  });

  describe('summaries', () => {
    /** summarize_responses equals a recount from the stored responses and their recorded paths. */
    async function expectSummaryEqualsRecount(publicId: string) {
      const served = await call('summarize_responses', { publicId });
      expect(served.status).toBe(200);
      const form = await app.get(FormsService).get(ws.id, publicId);
      const rows = await db.query(
        'SELECT submitted_at, answers, shown FROM responses WHERE form_id = $1 ORDER BY seq',
        [form.id],
      );
      const recount = summarize(
        form.blocks,
        rows.map((r: { submitted_at: Date; answers: Record<string, unknown>; shown: string[] | null }) => ({
          submittedAt: r.submitted_at,
          answers: r.answers,
          shown: r.shown,
        })),
      );
      expect(served.body).toEqual({ publicId, ...recount });
      return served.body as { blocks: Array<{ blockId: string; shown?: number; answered: number; skipped: number }> };
    }

    it('count per block how many responses were shown it, equal to a recount, with concurrent writers, deletes and edits', async () => {
      const form = await survey();
      const publicId = form.publicId;
      const answers = [
        { happy: false },
        { happy: true, score: 5 },
        { happy: true, score: 1, why: 'slow' },
        { happy: true, score: 2, why: 'late', colour: 'Red' },
      ];
      const created = await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          call('create_response', {
            publicId,
            answers: { ...answers[i % 4], ...(i % 3 === 0 && answers[i % 4].happy ? { ticket: `T${i}` } : {}) },
            ...(i % 3 === 0 && answers[i % 4].happy ? { hidden: { source: 'support' } } : {}),
          }),
        ),
      );
      expect(created.map((r) => r.status)).toEqual(created.map(() => 200));
      let summary = await expectSummaryEqualsRecount(publicId);
      const of = (ref: string) => summary.blocks.find((b) => b.blockId === idOf(form, ref))!;
      expect(of('happy')).toMatchObject({ shown: 24, answered: 24, skipped: 0 });
      expect(of('score')).toMatchObject({ shown: 18, answered: 18, skipped: 0 });
      expect(of('why')).toMatchObject({ shown: 12, answered: 12 });
      expect(of('colour')).toMatchObject({ shown: 18, answered: 6, skipped: 12 });
      expect(of('name')).toMatchObject({ shown: 24, answered: 0, skipped: 24 });

      for (const r of created.slice(0, 5))
        expect((await call('delete_response', { publicId, responseId: r.body.id })).status).toBe(200);
      await expectSummaryEqualsRecount(publicId);
      // Retype the colour block (its answers discarded): it stays on the paths that showed it.
      const read = (await call('get_form', { publicId })).body;
      const blocks = read.blocks.map((b: Record<string, unknown>) =>
        b.ref === 'colour' ? { id: b.id, ref: 'colour', type: 'short_text', title: 'Colour' } : b,
      );
      expect((await call('update_form', { publicId, blocks, acceptAnswerLoss: true })).status).toBe(200);
      summary = await expectSummaryEqualsRecount(publicId);
      expect(of('colour')).toMatchObject({ shown: 15, answered: 0, skipped: 15 });
      // The maintained counts equal a full recount of the aggregates.
      const before = (await call('summarize_responses', { publicId })).body;
      const stored = await app.get(FormsService).get(ws.id, publicId);
      await db.transaction((tx) => app.get(ResponseStatsRepository).recomputeResponseStats(tx, stored.id));
      expect((await call('summarize_responses', { publicId })).body).toEqual(before);
    });

    it('a form without rules summarizes as before (no shown)', async () => {
      const res = await call('create_form', { title: 'Plain', blocks: [{ type: 'short_text', title: 'Name' }] });
      await call('create_response', { publicId: res.body.publicId, answers: {} });
      const [row] = await db.query(
        'SELECT shown FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1',
        [res.body.publicId],
      );
      expect(row.shown).toBeNull();
      const summary = await expectSummaryEqualsRecount(res.body.publicId);
      expect(summary.blocks[0]).toEqual({
        blockId: res.body.blocks[0].id,
        type: 'short_text',
        title: 'Name',
        answered: 0,
        skipped: 1,
        latest: [],
      });
    });
  });
});

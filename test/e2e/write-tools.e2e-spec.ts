import { NestFastifyApplication } from '@nestjs/platform-fastify';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { DataSource } from 'typeorm';
import request from 'supertest';
import { Role, Scope } from '../../src/common/access/roles';
import { ToolRegistry } from '../../src/tools/tool-registry.service';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

describe('write tools', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let editor: string;
  let admin: string;
  const ajv = addFormats(new Ajv2020({ strict: false }));
  const matchesOutput = (tool: string, body: unknown) => {
    const validate = ajv.compile(app.get(ToolRegistry).get(tool)!.definition.output);
    if (!validate(body))
      throw new Error(`${tool} answered outside its output schema: ${ajv.errorsText(validate.errors)}`);
  };
  const token = (role: Role, scopes?: Scope[], w: TestWorkspace = ws) =>
    createToken(app, w, { role, scopes }).then((t) => t.token);
  const count = async (sql: string, params: unknown[]) => Number((await app.get(DataSource).query(sql, params))[0].n);

  beforeAll(async () => {
    app = await createTestApp();
    ws = await createWorkspace(app, 'pro');
    editor = await token('editor');
    admin = await token('admin');
  });
  afterAll(() => app.close());

  /** A published form with one block of each answerable type; returns it as get_form shows it. */
  async function surveyForm() {
    const res = await callTool(app, editor, 'create_form', {
      title: 'Survey',
      description: 'All types',
      blocks: [
        { type: 'statement', title: 'Welcome' },
        { type: 'short_text', title: 'Name', required: true },
        { type: 'long_text', title: 'Story' },
        { type: 'email', title: 'Email' },
        { type: 'url', title: 'Site' },
        { type: 'phone', title: 'Phone' },
        { type: 'number', title: 'Age', min: 0, max: 130 },
        { type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Green', 'Blue'] },
        { type: 'checkboxes', title: 'Pets', choices: ['Cat', 'Dog', 'Fish'] },
        { type: 'dropdown', title: 'Country', choices: ['FR', 'DE'] },
        { type: 'rating', title: 'Stars', max: 5 },
        { type: 'linear_scale', title: 'NPS', min: 0, max: 10 },
        { type: 'date', title: 'Birthday' },
        { type: 'yes_no', title: 'Newsletter' },
      ],
    });
    expect(res.status).toBe(200);
    const byTitle = Object.fromEntries(
      res.body.blocks.map((b: { title: string; id: string }) => [b.title, b.id]),
    ) as Record<string, string>;
    return { form: res.body, ids: byTitle };
  }

  const fullAnswers = (ids: Record<string, string>) => ({
    [ids.Name]: 'Ada',
    [ids.Story]: 'Once upon a time',
    [ids.Email]: 'ada@example.com',
    [ids.Site]: 'https://example.com',
    [ids.Phone]: '+44 20 7946 0958',
    [ids.Age]: 36,
    [ids.Colour]: 'Green',
    [ids.Pets]: ['Cat', 'Fish'],
    [ids.Country]: 'DE',
    [ids.Stars]: 4,
    [ids.NPS]: 9,
    [ids.Birthday]: '1815-12-10',
    [ids.Newsletter]: true,
  });

  describe('create_form', () => {
    it('creates a draft with every block and choice given a new stable id, and records the actor', async () => {
      const { form } = await surveyForm();
      matchesOutput('create_form', form);
      expect(form).toMatchObject({ title: 'Survey', description: 'All types', status: 'draft', version: 1 });
      expect(form.url).toBe(`http://formwork.test/f/${form.publicId}`);
      expect(form.blocks).toHaveLength(14);
      const ids = form.blocks.map((b: { id: string }) => b.id);
      expect(new Set(ids).size).toBe(14);
      const colour = form.blocks.find((b: { title: string }) => b.title === 'Colour');
      expect(colour.choices.map((c: { label: string }) => c.label)).toEqual(['Red', 'Green', 'Blue']);
      const stars = form.blocks.find((b: { title: string }) => b.title === 'Stars');
      expect(stars).toMatchObject({ type: 'rating', max: 5, required: false });
      const got = await callTool(app, editor, 'get_form', { publicId: form.publicId });
      expect(got.body).toEqual(form);
      const [audit] = await app
        .get(DataSource)
        .query(`SELECT * FROM audit_events WHERE subject_id = $1 AND action = 'form.create'`, [form.publicId]);
      expect(audit).toMatchObject({ workspace_id: ws.id, actor_kind: 'api_token' });
      expect(audit.at).toBeInstanceOf(Date);
    });

    it.each([
      ['a choice block without choices', { type: 'multiple_choice', title: 'X' }, '/blocks/0/choices'],
      [
        'checkboxes with a duplicate label',
        { type: 'checkboxes', title: 'X', choices: ['A', 'A'] },
        '/blocks/0/choices/1',
      ],
      ['dropdown with an empty list', { type: 'dropdown', title: 'X', choices: [] }, '/blocks/0/choices'],
      ['choices on a short_text', { type: 'short_text', title: 'X', choices: ['A'] }, '/blocks/0/choices'],
      ['min on a long_text', { type: 'long_text', title: 'X', min: 1 }, '/blocks/0/min'],
      ['max on an email', { type: 'email', title: 'X', max: 3 }, '/blocks/0/max'],
      ['min on a url', { type: 'url', title: 'X', min: 3 }, '/blocks/0/min'],
      ['choices on a phone', { type: 'phone', title: 'X', choices: ['A'] }, '/blocks/0/choices'],
      ['number min above max', { type: 'number', title: 'X', min: 5, max: 1 }, '/blocks/0/max'],
      ['rating max 11', { type: 'rating', title: 'X', max: 11 }, '/blocks/0/max'],
      ['rating min', { type: 'rating', title: 'X', min: 1 }, '/blocks/0/min'],
      ['linear_scale min 2', { type: 'linear_scale', title: 'X', min: 2 }, '/blocks/0/min'],
      ['linear_scale max 1', { type: 'linear_scale', title: 'X', max: 1 }, '/blocks/0/max'],
      ['choices on a date', { type: 'date', title: 'X', choices: ['A'] }, '/blocks/0/choices'],
      ['max on a yes_no', { type: 'yes_no', title: 'X', max: 2 }, '/blocks/0/max'],
      ['a required statement', { type: 'statement', title: 'X', required: true }, '/blocks/0/required'],
      ['an unknown type', { type: 'signature', title: 'X' }, '/blocks/0/type'],
      ['an empty title', { type: 'short_text', title: '' }, '/blocks/0/title'],
      ['an unknown setting', { type: 'short_text', title: 'X', placeholder: 'y' }, '/blocks/0/placeholder'],
      ['an id the form does not have', { id: 'b_mine', type: 'short_text', title: 'X' }, '/blocks/0/id'],
    ])(
      'refuses %s with 400 invalid_arguments naming the block and field, creating nothing',
      async (_name, block, path) => {
        const before = await count('SELECT count(*) AS n FROM forms WHERE workspace_id = $1', [ws.id]);
        const res = await callTool(app, editor, 'create_form', { title: 'Bad', blocks: [block] });
        const error = expectError(res, 400, 'invalid_arguments');
        expect(error.details!.map((d) => d.path)).toContain(path);
        expect(await count('SELECT count(*) AS n FROM forms WHERE workspace_id = $1', [ws.id])).toBe(before);
      },
    );

    it('refuses a missing title', async () => {
      const error = expectError(await callTool(app, editor, 'create_form', {}), 400, 'invalid_arguments');
      expect(error.details).toEqual([{ path: '/title', message: 'is required' }]);
    });
  });

  describe('plan, role and scope', () => {
    it('answers every write tool on a Free workspace with 403 pro_required, while reads work', async () => {
      const free = await createWorkspace(app, 'free');
      const owner = await token('owner', undefined, free);
      const form = await createForm(app, free);
      for (const [tool, args] of [
        ['create_form', { title: 'X' }],
        ['update_form', { publicId: form.publicId, title: 'Y' }],
        ['publish_form', { publicId: form.publicId }],
        ['close_form', { publicId: form.publicId }],
        ['delete_form', { publicId: form.publicId }],
        ['create_response', { publicId: form.publicId, answers: {} }],
        ['delete_response', { publicId: form.publicId, responseId: '00000000-0000-0000-0000-000000000000' }],
      ] as const) {
        const error = expectError(await callTool(app, owner, tool, args), 403, 'pro_required');
        expect(error.hint).toMatch(/Pro/);
      }
      expect((await callTool(app, owner, 'get_form', { publicId: form.publicId })).status).toBe(200);
      expect((await callTool(app, owner, 'list_forms', {})).status).toBe(200);
    });

    it('lets a viewer only read; an editor all but delete_form; an admin everything', async () => {
      const viewer = await token('viewer');
      const form = await createForm(app, ws, { status: 'published' });
      expectError(await callTool(app, viewer, 'create_form', { title: 'X' }), 403, 'forbidden');
      expectError(
        await callTool(app, viewer, 'update_form', { publicId: form.publicId, title: 'X' }),
        403,
        'forbidden',
      );
      expectError(
        await callTool(app, viewer, 'create_response', { publicId: form.publicId, answers: {} }),
        403,
        'forbidden',
      );
      expect((await callTool(app, viewer, 'get_form', { publicId: form.publicId })).status).toBe(200);

      const del = await callTool(app, editor, 'delete_form', { publicId: form.publicId });
      const error = expectError(del, 403, 'forbidden');
      expect(error.message).toContain('admin');
      expect((await callTool(app, editor, 'close_form', { publicId: form.publicId })).status).toBe(200);
      expect((await callTool(app, admin, 'delete_form', { publicId: form.publicId })).status).toBe(200);
    });

    it('checks scope before plan before role before arguments', async () => {
      const free = await createWorkspace(app, 'free');
      const freeViewerReadOnly = await token('viewer', ['forms:read'], free);
      const freeViewer = await token('viewer', undefined, free);
      expectError(await callTool(app, freeViewerReadOnly, 'create_form', { bogus: 1 }), 403, 'insufficient_scope');
      expectError(await callTool(app, freeViewer, 'create_form', { bogus: 1 }), 403, 'pro_required');
      const proViewer = await token('viewer');
      expectError(await callTool(app, proViewer, 'create_form', { bogus: 1 }), 403, 'forbidden');
      expectError(await callTool(app, editor, 'create_form', { bogus: 1 }), 400, 'invalid_arguments');
    });

    it('answers a write without its scope with 403 insufficient_scope naming it', async () => {
      const readOnly = await token('admin', ['forms:read', 'responses:read']);
      const res = await callTool(app, readOnly, 'create_form', { title: 'X' });
      expectError(res, 403, 'insufficient_scope');
      expect(res.headers['www-authenticate']).toContain('scope="forms:write"');
    });
  });

  describe('not found and other workspaces', () => {
    it("answers every write tool on an unknown form, or another workspace's, with 404 and changes nothing", async () => {
      const other = await createWorkspace(app, 'pro');
      const theirs = await createForm(app, other, { title: 'Theirs', status: 'published' });
      for (const publicId of ['nope', theirs.publicId]) {
        for (const [tool, args] of [
          ['update_form', { publicId, title: 'Hijacked' }],
          ['publish_form', { publicId }],
          ['close_form', { publicId }],
          ['delete_form', { publicId }],
          ['create_response', { publicId, answers: {} }],
          ['delete_response', { publicId, responseId: '00000000-0000-0000-0000-000000000000' }],
        ] as const) {
          expectError(await callTool(app, admin, tool, args), 404, 'not_found');
        }
      }
      const still = await callTool(app, await token('viewer', undefined, other), 'get_form', {
        publicId: theirs.publicId,
      });
      expect(still.body).toMatchObject({ title: 'Theirs', status: 'published' });
    });

    it('answers delete_response for an unknown response with 404', async () => {
      const form = await createForm(app, ws);
      expectError(
        await callTool(app, editor, 'delete_response', { publicId: form.publicId, responseId: 'nope' }),
        404,
        'not_found',
      );
    });
  });

  describe('lifecycle', () => {
    it('goes draft -> published -> closed -> published (reopened), bumping the version each time', async () => {
      const { form } = await surveyForm();
      const published = await callTool(app, editor, 'publish_form', { publicId: form.publicId });
      expect(published.status).toBe(200);
      matchesOutput('publish_form', published.body);
      expect(published.body).toMatchObject({ status: 'published', version: 2, closedAt: null });
      // Its share link (PUBLIC_URL/f/{publicId}), whose path serves the respondent page.
      const url = `http://formwork.test/f/${form.publicId}`;
      expect(published.body.url).toBe(url);
      const shared = await request(app.getHttpServer()).get(new URL(url).pathname);
      expect(shared.status).toBe(200);
      expect(shared.text).toContain('<title>Survey</title>');
      expect(published.body.publishedAt).toEqual(expect.any(String));
      const again = await callTool(app, editor, 'publish_form', { publicId: form.publicId });
      expect(again.body).toMatchObject({ status: 'published', version: 2 }); // no change
      const closed = await callTool(app, editor, 'close_form', { publicId: form.publicId });
      expect(closed.body).toMatchObject({ status: 'closed', version: 3 });
      expect(closed.body.closedAt).toEqual(expect.any(String));
      const reopened = await callTool(app, editor, 'publish_form', { publicId: form.publicId });
      expect(reopened.body).toMatchObject({ status: 'published', version: 4, closedAt: null });
    });

    it('refuses to close a draft and to publish a form with nothing to answer (400 tool_error)', async () => {
      const draft = await callTool(app, editor, 'create_form', {
        title: 'Empty',
        blocks: [{ type: 'statement', title: 'Hello' }],
      });
      const close = expectError(
        await callTool(app, editor, 'close_form', { publicId: draft.body.publicId }),
        400,
        'tool_error',
      );
      expect(close.hint).toMatch(/publish_form|delete_form/);
      expectError(await callTool(app, editor, 'publish_form', { publicId: draft.body.publicId }), 400, 'tool_error');
    });

    it('accepts create_response on drafts and closed forms (imports)', async () => {
      const { form, ids } = await surveyForm();
      expect(
        (await callTool(app, editor, 'create_response', { publicId: form.publicId, answers: { [ids.Name]: 'Draft' } }))
          .status,
      ).toBe(200);
      await callTool(app, editor, 'publish_form', { publicId: form.publicId });
      await callTool(app, editor, 'close_form', { publicId: form.publicId });
      expect(
        (await callTool(app, editor, 'create_response', { publicId: form.publicId, answers: { [ids.Name]: 'Closed' } }))
          .status,
      ).toBe(200);
    });

    it('delete_form removes the form and its responses from every tool', async () => {
      const { form, ids } = await surveyForm();
      const r = await callTool(app, editor, 'create_response', {
        publicId: form.publicId,
        answers: { [ids.Name]: 'Gone soon' },
      });
      const res = await callTool(app, admin, 'delete_form', { publicId: form.publicId });
      expect(res.status).toBe(200);
      matchesOutput('delete_form', res.body);
      expect(res.body).toEqual({ publicId: form.publicId, deleted: true, responsesDeleted: 1 });
      for (const [tool, args] of [
        ['get_form', { publicId: form.publicId }],
        ['list_responses', { publicId: form.publicId }],
        ['get_response', { publicId: form.publicId, responseId: r.body.id }],
        ['summarize_responses', { publicId: form.publicId }],
        ['delete_form', { publicId: form.publicId }],
      ] as const) {
        expectError(await callTool(app, admin, tool, args), 404, 'not_found');
      }
      const listed = await callTool(app, admin, 'list_forms', { limit: 200 });
      expect(listed.body.forms.map((f: { publicId: string }) => f.publicId)).not.toContain(form.publicId);
      expect(await count('SELECT count(*) AS n FROM responses WHERE id = $1', [r.body.id])).toBe(0);
    });
  });

  describe('create_response and delete_response', () => {
    it('stores a valid response of every type, choices by id, shown back by label', async () => {
      const { form, ids } = await surveyForm();
      const res = await callTool(app, editor, 'create_response', {
        publicId: form.publicId,
        answers: fullAnswers(ids),
      });
      expect(res.status).toBe(200);
      matchesOutput('create_response', res.body);
      expect(res.body.answers).toEqual(fullAnswers(ids));
      const [row] = await app.get(DataSource).query('SELECT answers FROM responses WHERE id = $1', [res.body.id]);
      const colour = form.blocks.find((b: { title: string }) => b.title === 'Colour');
      expect(row.answers[ids.Colour]).toBe(colour.choices[1].id);
      const got = await callTool(app, editor, 'get_response', { publicId: form.publicId, responseId: res.body.id });
      expect(got.body).toEqual(res.body);
    });

    it.each([
      ['Name', 42, 'a number for short_text'],
      ['Story', ['x'], 'a list for long_text'],
      ['Email', 'not-an-email', 'a bad email'],
      ['Site', 'ftp://example.com', 'a non-http url'],
      ['Phone', 'call me', 'a bad phone number'],
      ['Age', 131, 'a number above max'],
      ['Age', '36', 'a string for number'],
      ['Colour', 'Purple', 'an unknown choice'],
      ['Pets', ['Cat', 'Cat'], 'a choice twice'],
      ['Pets', 'Cat', 'a single value for checkboxes'],
      ['Country', 'IT', 'an unknown dropdown choice'],
      ['Stars', 6, 'a rating above max'],
      ['Stars', 2.5, 'a fractional rating'],
      ['NPS', 11, 'a scale value above max'],
      ['Birthday', '2026-02-30', 'a date that does not exist'],
      ['Newsletter', 'yes', 'a string for yes_no'],
      ['Welcome', 'hi', 'an answer to a statement'],
    ] as Array<[string, unknown, string]>)('refuses %s = %j (%s) and stores nothing', async (title, value) => {
      const { form, ids } = await surveyForm();
      const answers = { ...fullAnswers(ids), [ids[title]]: value };
      const res = await callTool(app, editor, 'create_response', { publicId: form.publicId, answers });
      const error = expectError(res, 400, 'invalid_arguments');
      expect(error.details!.map((d) => d.path)).toEqual([`/answers/${ids[title]}`]);
      expect(
        await count('SELECT count(*) AS n FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1', [
          form.publicId,
        ]),
      ).toBe(0);
    });

    it('refuses a missing required answer and an answer for a block the form does not have', async () => {
      const { form, ids } = await surveyForm();
      const res = await callTool(app, editor, 'create_response', {
        publicId: form.publicId,
        answers: { [ids.Email]: 'a@b.co', b_nope: 'x' },
      });
      const error = expectError(res, 400, 'invalid_arguments');
      expect(error.details!.map((d) => d.path).sort()).toEqual([`/answers/${ids.Name}`, '/answers/b_nope'].sort());
    });

    it('deletes a response', async () => {
      const { form, ids } = await surveyForm();
      const r = await callTool(app, editor, 'create_response', {
        publicId: form.publicId,
        answers: { [ids.Name]: 'Bye' },
      });
      const res = await callTool(app, editor, 'delete_response', { publicId: form.publicId, responseId: r.body.id });
      expect(res.status).toBe(200);
      matchesOutput('delete_response', res.body);
      expect(res.body).toEqual({ id: r.body.id, deleted: true });
      expectError(
        await callTool(app, editor, 'get_response', { publicId: form.publicId, responseId: r.body.id }),
        404,
        'not_found',
      );
      expectError(
        await callTool(app, editor, 'delete_response', { publicId: form.publicId, responseId: r.body.id }),
        404,
        'not_found',
      );
    });
  });

  describe('update_form: safe edits', () => {
    it('keeps every answer through every edit that keeps ids: renames, reorders, settings, new blocks and choices', async () => {
      const { form, ids } = await surveyForm();
      const created = await callTool(app, editor, 'create_response', {
        publicId: form.publicId,
        answers: fullAnswers(ids),
      });
      const before = created.body.answers;

      // Every allowed change at once: reorder (reverse), rename every block, rename choices under their ids,
      // add choices, add a block, change descriptions, required flags and settings.
      const blocks = [...form.blocks].reverse().map((b: Record<string, unknown>) => {
        const next: Record<string, unknown> = { ...b, title: `${b.title} (renamed)`, description: 'now described' };
        if (Array.isArray(b.choices))
          next.choices = [
            ...(b.choices as Array<{ id: string; label: string }>).map((c) => ({ id: c.id, label: `${c.label}!` })),
            'Added',
          ];
        if (b.type === 'number') next.max = 200;
        if (b.type === 'short_text') next.required = false;
        return next;
      });
      blocks.push({ type: 'long_text', title: 'A new question' });
      const res = await callTool(app, editor, 'update_form', {
        publicId: form.publicId,
        version: 1,
        title: 'Survey v2',
        blocks,
      });
      expect(res.status).toBe(200);
      matchesOutput('update_form', res.body);
      expect(res.body).toMatchObject({ title: 'Survey v2', version: 2 });
      expect(res.body.blocks.slice(0, 14).map((b: { id: string }) => b.id)).toEqual(
        [...form.blocks].reverse().map((b: { id: string }) => b.id),
      );

      const after = (
        await callTool(app, editor, 'get_response', { publicId: form.publicId, responseId: created.body.id })
      ).body.answers;
      expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
      expect(after[ids.Colour]).toBe('Green!'); // renamed choice, same answer
      expect(after[ids.Pets]).toEqual(['Cat!', 'Fish!']);
      expect(after[ids.Country]).toBe('DE!');
      for (const key of [ids.Name, ids.Story, ids.Email, ids.Age, ids.Stars, ids.NPS, ids.Birthday, ids.Newsletter])
        expect(after[key]).toEqual(before[key]);

      // A bare label that matches an existing choice keeps it too.
      const pets = res.body.blocks.find((b: { id: string }) => b.id === ids.Pets);
      const relabeled = res.body.blocks.map((b: { id: string }) =>
        b.id === ids.Pets ? { ...pets, choices: pets.choices.map((c: { label: string }) => c.label) } : b,
      );
      const kept = await callTool(app, editor, 'update_form', { publicId: form.publicId, blocks: relabeled });
      expect(kept.status).toBe(200);
      expect(
        (await callTool(app, editor, 'get_response', { publicId: form.publicId, responseId: created.body.id })).body
          .answers[ids.Pets],
      ).toEqual(['Cat!', 'Fish!']);
    });

    it('refuses to remove an answered block, retype it or remove a chosen choice (400 tool_error naming acceptAnswerLoss), changing nothing', async () => {
      const { form, ids } = await surveyForm();
      await callTool(app, editor, 'create_response', { publicId: form.publicId, answers: fullAnswers(ids) });
      const without = (title: string) => form.blocks.filter((b: { title: string }) => b.title !== title);
      const retyped = form.blocks.map((b: { title: string }) =>
        b.title === 'Story' ? { ...b, type: 'short_text' } : b,
      );
      const fewerChoices = form.blocks.map((b: { title: string; choices?: Array<{ label: string }> }) =>
        b.title === 'Colour' ? { ...b, choices: b.choices!.filter((c) => c.label !== 'Green') } : b,
      );
      for (const [blocks, path] of [
        [without('Email'), '/blocks'],
        [retyped, '/blocks/2/type'],
        [fewerChoices, '/blocks/7/choices'],
      ] as const) {
        const res = await callTool(app, editor, 'update_form', { publicId: form.publicId, blocks });
        const error = expectError(res, 400, 'tool_error');
        expect(error.hint).toContain('acceptAnswerLoss: true');
        expect(error.details!.map((d) => d.path)).toEqual([path]);
        expect(error.details![0].message).toMatch(/would discard 1 answer/);
      }
      const unchanged = await callTool(app, editor, 'get_form', { publicId: form.publicId });
      expect(unchanged.body).toEqual(form);
    });

    it('allows removing an unanswered block or an unchosen choice without acceptAnswerLoss', async () => {
      const { form, ids } = await surveyForm();
      await callTool(app, editor, 'create_response', {
        publicId: form.publicId,
        answers: { [ids.Name]: 'Only a name', [ids.Colour]: 'Red' },
      });
      const blocks = form.blocks
        .filter((b: { title: string }) => b.title !== 'Email')
        .map((b: { title: string; choices?: Array<{ label: string }> }) =>
          b.title === 'Colour' ? { ...b, choices: b.choices!.filter((c) => c.label !== 'Blue') } : b,
        );
      const res = await callTool(app, editor, 'update_form', { publicId: form.publicId, blocks });
      expect(res.status).toBe(200);
    });

    it('with acceptAnswerLoss discards exactly the lost answers and keeps the rest', async () => {
      const { form, ids } = await surveyForm();
      const r = await callTool(app, editor, 'create_response', { publicId: form.publicId, answers: fullAnswers(ids) });
      const blocks = form.blocks
        .filter((b: { title: string }) => b.title !== 'Email')
        .map((b: { title: string; choices?: Array<{ label: string }> }) => {
          if (b.title === 'Pets') return { ...b, choices: b.choices!.filter((c) => c.label !== 'Fish') };
          if (b.title === 'Story') return { ...b, type: 'short_text' };
          return b;
        });
      const res = await callTool(app, editor, 'update_form', {
        publicId: form.publicId,
        blocks,
        acceptAnswerLoss: true,
      });
      expect(res.status).toBe(200);
      const [row] = await app.get(DataSource).query('SELECT answers FROM responses WHERE id = $1', [r.body.id]);
      expect(row.answers).not.toHaveProperty(ids.Email);
      expect(row.answers).not.toHaveProperty(ids.Story);
      expect(row.answers[ids.Pets]).toHaveLength(1);
      const after = (await callTool(app, editor, 'get_response', { publicId: form.publicId, responseId: r.body.id }))
        .body.answers;
      expect(after[ids.Pets]).toEqual(['Cat']);
      expect(after[ids.Name]).toBe('Ada');
      const [audit] = await app
        .get(DataSource)
        .query(`SELECT details FROM audit_events WHERE subject_id = $1 AND action = 'form.update'`, [form.publicId]);
      expect(audit.details.answersDiscarded).toBe(3);
    });

    it('answers a stale version with 409 version_conflict and overwrites nothing', async () => {
      const { form } = await surveyForm();
      expect(
        (await callTool(app, editor, 'update_form', { publicId: form.publicId, version: 1, title: 'First' })).status,
      ).toBe(200);
      const stale = await callTool(app, editor, 'update_form', {
        publicId: form.publicId,
        version: 1,
        title: 'Second',
      });
      const error = expectError(stale, 409, 'version_conflict');
      expect(error.message).toContain('version 2');
      expect(error.hint).toContain('get_form');
      expect((await callTool(app, editor, 'get_form', { publicId: form.publicId })).body.title).toBe('First');
    });

    it('lets exactly one of two concurrent edits from the same version win', async () => {
      const { form } = await surveyForm();
      const results = await Promise.all(
        ['A', 'B', 'C', 'D'].map((t) =>
          callTool(app, editor, 'update_form', { publicId: form.publicId, version: 1, title: t }),
        ),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
      const winner = results.find((r) => r.status === 200)!.body.title;
      const now = await callTool(app, editor, 'get_form', { publicId: form.publicId });
      expect(now.body).toMatchObject({ title: winner, version: 2 });
    });

    it('refuses unknown block and choice ids, and bad settings, with details', async () => {
      const { form } = await surveyForm();
      const blocks = form.blocks.map(
        (b: { title: string; choices?: Array<{ id: string; label: string }> }, i: number) => {
          if (i === 1) return { ...b, id: 'b_unknown' };
          if (b.title === 'Colour') return { ...b, choices: [{ id: 'c_unknown', label: 'Red' }] };
          if (b.title === 'Stars') return { ...b, max: 20 };
          return b;
        },
      );
      const error = expectError(
        await callTool(app, editor, 'update_form', { publicId: form.publicId, blocks }),
        400,
        'invalid_arguments',
      );
      expect(error.details!.map((d) => d.path).sort()).toEqual([
        '/blocks/1/id',
        '/blocks/10/max',
        '/blocks/7/choices/0/id',
      ]);
    });

    it('updates only the title or description when blocks are not sent', async () => {
      const { form } = await surveyForm();
      const res = await callTool(app, editor, 'update_form', { publicId: form.publicId, description: null });
      expect(res.body).toMatchObject({ title: 'Survey', description: null, version: 2 });
      expect(res.body.blocks).toEqual(form.blocks);
    });
  });
});

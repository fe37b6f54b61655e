import { NestFastifyApplication } from '@nestjs/platform-fastify';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import request from 'supertest';
import { FormRecord } from '../../src/forms/forms.service';
import { ToolRegistry } from '../../src/tools/tool-registry.service';
import { createForm, createResponses, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

describe('read tools', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let token: string;
  let form: FormRecord;
  let responseIds: string[];
  const ajv = addFormats(new Ajv2020({ strict: false }));
  /** Every successful answer must match the output schema the tool publishes. */
  const matchesOutput = (tool: string, body: unknown) => {
    const validate = ajv.compile(app.get(ToolRegistry).get(tool)!.definition.output);
    if (!validate(body))
      throw new Error(`${tool} answered outside its output schema: ${ajv.errorsText(validate.errors)}`);
  };

  beforeAll(async () => {
    app = await createTestApp();
    ws = await createWorkspace(app, 'free'); // reads work on every plan
    token = (await createToken(app, ws, { role: 'viewer' })).token;
    form = await createForm(app, ws, { title: 'Survey', status: 'published' });
    responseIds = await createResponses(app, form, 23);
  });
  afterAll(() => app.close());

  describe('list_forms', () => {
    it('works with an empty body, {} and paging arguments', async () => {
      const extra = await createForm(app, ws, { title: 'Second' });
      for (const body of [undefined, {}]) {
        const res = await callTool(app, token, 'list_forms', body);
        expect(res.status).toBe(200);
        matchesOutput('list_forms', res.body);
        expect(res.body).toMatchObject({ total: 2, offset: 0, count: 2 });
        expect(res.body.forms.map((f: { publicId: string }) => f.publicId)).toEqual([form.publicId, extra.publicId]);
      }
      const page = await callTool(app, token, 'list_forms', { limit: 1, offset: 1 });
      expect(page.body).toMatchObject({ total: 2, offset: 1, count: 1 });
      expect(page.body.forms[0].publicId).toBe(extra.publicId);
      const drafts = await callTool(app, token, 'list_forms', { status: 'draft' });
      expect(drafts.body.forms.map((f: { title: string }) => f.title)).toEqual(['Second']);
      expect(drafts.body.forms[0].url).toBe(`http://formwork.test/f/${extra.publicId}`);
    });

    it('shows each form its response count and last response time, exact before and after a write', async () => {
      const counted = async () => {
        const res = await callTool(app, token, 'list_forms', {});
        matchesOutput('list_forms', res.body);
        return Object.fromEntries(
          res.body.forms.map((f: { publicId: string; responseCount: number; lastResponseAt: string | null }) => [
            f.publicId,
            [f.responseCount, f.lastResponseAt],
          ]),
        );
      };
      const empty = await createForm(app, ws, { title: 'No answers yet', status: 'published' });
      const before = await counted();
      // 23 responses one second apart from 2026-01-01T00:00:00Z (createResponses).
      expect(before[form.publicId]).toEqual([23, '2026-01-01T00:00:22.000Z']);
      expect(before[empty.publicId]).toEqual([0, null]);

      // A response that has not been given its place in the order yet is counted too.
      await createResponses(app, empty, 2, { start: new Date('2026-03-01T10:00:00Z') });
      expect((await counted())[empty.publicId]).toEqual([2, '2026-03-01T10:00:01.000Z']);
    });

    it('refuses bad arguments with details naming each field', async () => {
      const res = await callTool(app, token, 'list_forms', {
        limit: 0,
        offset: 'x',
        status: 'archived',
        sort: 'title',
      });
      const error = expectError(res, 400, 'invalid_arguments');
      expect(error.details!.map((d) => d.path).sort()).toEqual(['/limit', '/offset', '/sort', '/status']);
    });
  });

  describe('get_form', () => {
    it('returns the form with its blocks in order, each with a stable id and choice ids', async () => {
      const res = await callTool(app, token, 'get_form', { publicId: form.publicId });
      expect(res.status).toBe(200);
      matchesOutput('get_form', res.body);
      expect(res.body).toMatchObject({ publicId: form.publicId, title: 'Survey', status: 'published', version: 2 });
      // The share link, from PUBLIC_URL (http://formwork.test in the tests): an agent need not guess it.
      expect(res.body.url).toBe(`http://formwork.test/f/${form.publicId}`);
      expect(res.body.blocks.map((b: { type: string }) => b.type)).toEqual([
        'short_text',
        'email',
        'multiple_choice',
        'checkboxes',
        'rating',
        'number',
        'yes_no',
      ]);
      const colour = res.body.blocks[2];
      expect(colour.choices.map((c: { label: string }) => c.label)).toEqual(['Red', 'Green', 'Blue']);
      expect(colour.choices.every((c: { id: string }) => /^c_[0-9A-Za-z]{8}$/.test(c.id))).toBe(true);
      expect(res.body).not.toHaveProperty('id');
      expect(res.body).not.toHaveProperty('workspaceId');
    });

    it("answers an unknown form, and another workspace's form, with 404 not_found", async () => {
      expectError(await callTool(app, token, 'get_form', { publicId: 'doesnotexist' }), 404, 'not_found');
      const other = await createWorkspace(app);
      const theirs = await createForm(app, other, { title: 'Secret' });
      const res = await callTool(app, token, 'get_form', { publicId: theirs.publicId });
      const error = expectError(res, 404, 'not_found');
      expect(JSON.stringify(error)).not.toContain('Secret');
      expectError(await callTool(app, token, 'list_responses', { publicId: theirs.publicId }), 404, 'not_found');
      expectError(await callTool(app, token, 'summarize_responses', { publicId: theirs.publicId }), 404, 'not_found');
      const listed = await callTool(app, token, 'list_forms', {});
      expect(listed.body.forms.map((f: { publicId: string }) => f.publicId)).not.toContain(theirs.publicId);
    });

    it('requires publicId', async () => {
      const error = expectError(await callTool(app, token, 'get_form', {}), 400, 'invalid_arguments');
      expect(error.details).toEqual([{ path: '/publicId', message: 'is required' }]);
    });
  });

  describe('list_responses', () => {
    it('pages with total, offset and count, 50 by default, oldest first', async () => {
      const res = await callTool(app, token, 'list_responses', { publicId: form.publicId });
      expect(res.status).toBe(200);
      matchesOutput('list_responses', res.body);
      expect(res.body).toMatchObject({ total: 23, offset: 0, count: 23 });
      expect(res.body.responses.map((r: { id: string }) => r.id)).toEqual(responseIds);
      const first = res.body.responses[0];
      expect(first.answers[form.blocks[2].id]).toBe('Red'); // stored by choice id, shown by label
    });

    it('returns every response exactly once when walking offset += count until total', async () => {
      const seen: string[] = [];
      let offset = 0;
      let total = Infinity;
      while (offset < total) {
        const res = await callTool(app, token, 'list_responses', { publicId: form.publicId, limit: 5, offset });
        total = res.body.total;
        seen.push(...res.body.responses.map((r: { id: string }) => r.id));
        offset += res.body.count;
        if (res.body.count === 0) break;
      }
      expect(seen).toEqual(responseIds);
    });

    it('walks exactly once even when many responses share one submission time', async () => {
      const same = await createForm(app, ws);
      const ids = await createResponses(app, same, 12, { sameTime: true });
      const seen: string[] = [];
      for (let offset = 0; offset < 12; offset += 5) {
        const res = await callTool(app, token, 'list_responses', { publicId: same.publicId, limit: 5, offset });
        seen.push(...res.body.responses.map((r: { id: string }) => r.id));
      }
      expect(seen.sort()).toEqual([...ids].sort());
      // A `since` that lands on those tied responses includes every one of them.
      const since = await callTool(app, token, 'list_responses', {
        publicId: same.publicId,
        since: new Date(Date.UTC(2026, 0, 1)).toISOString(),
        limit: 50,
      });
      expect(since.body.total).toBe(12);
      expect(since.body.responses.map((r: { id: string }) => r.id)).toEqual(ids);
    });

    it('keeps the walk exact while responses arrive concurrently', async () => {
      const busy = await createForm(app, ws);
      const before = await createResponses(app, busy, 30);
      const seen: string[] = [];
      let offset = 0;
      let total = Infinity;
      const arriving = createResponses(app, busy, 10, { start: new Date() }); // new responses arrive now, after the others
      while (offset < total) {
        const res = await callTool(app, token, 'list_responses', { publicId: busy.publicId, limit: 7, offset });
        total = res.body.total;
        seen.push(...res.body.responses.map((r: { id: string }) => r.id));
        offset += res.body.count;
        if (res.body.count === 0) break;
      }
      await arriving;
      for (const id of before) expect(seen.filter((s) => s === id)).toHaveLength(1);
      expect(new Set(seen).size).toBe(seen.length);
    });

    it('orders newest first and filters by since', async () => {
      const newest = await callTool(app, token, 'list_responses', {
        publicId: form.publicId,
        order: 'newest',
        limit: 3,
      });
      expect(newest.body.responses.map((r: { id: string }) => r.id)).toEqual(responseIds.slice(-3).reverse());
      const since = await callTool(app, token, 'list_responses', {
        publicId: form.publicId,
        since: new Date(Date.UTC(2026, 0, 1) + 20_000).toISOString(),
      });
      expect(since.body).toMatchObject({ total: 3, count: 3 });
    });

    it('refuses limit above 200, a negative offset and an unknown argument', async () => {
      const res = await callTool(app, token, 'list_responses', {
        publicId: form.publicId,
        limit: 201,
        offset: -1,
        page: 2,
      });
      const error = expectError(res, 400, 'invalid_arguments');
      expect(error.details).toEqual(
        expect.arrayContaining([
          { path: '/limit', message: 'must be <= 200' },
          { path: '/offset', message: 'must be >= 0' },
          { path: '/page', message: 'is not a known argument' },
        ]),
      );
      expect((await callTool(app, token, 'list_responses', { publicId: form.publicId, limit: 200 })).status).toBe(200);
      // A since PostgreSQL cannot represent is refused, not a 500.
      const ancient = expectError(
        await callTool(app, token, 'list_responses', { publicId: form.publicId, since: '0000-01-01T00:00:00Z' }),
        400,
        'invalid_arguments',
      );
      expect(ancient.details).toEqual([
        { path: '/since', message: 'must be a date-time between the years 1 and 9999' },
      ]);
      // Offsets beyond any form are refused up front, not left to overflow in the database.
      for (const tool of ['list_forms', 'list_responses']) {
        const args = tool === 'list_forms' ? { offset: 1e300 } : { publicId: form.publicId, offset: 1e300 };
        const huge = expectError(await callTool(app, token, tool, args), 400, 'invalid_arguments');
        expect(huge.details).toEqual([{ path: '/offset', message: 'must be <= 1000000000' }]);
      }
    });
  });

  describe('get_response', () => {
    it('returns one response, and 404 for an unknown id or a response of another form', async () => {
      const res = await callTool(app, token, 'get_response', { publicId: form.publicId, responseId: responseIds[4] });
      expect(res.status).toBe(200);
      matchesOutput('get_response', res.body);
      expect(res.body.id).toBe(responseIds[4]);
      expectError(
        await callTool(app, token, 'get_response', { publicId: form.publicId, responseId: 'nope' }),
        404,
        'not_found',
      );
      const other = await createForm(app, ws);
      expectError(
        await callTool(app, token, 'get_response', { publicId: other.publicId, responseId: responseIds[4] }),
        404,
        'not_found',
      );
    });
  });

  describe('summarize_responses', () => {
    it('returns per-block aggregates that match the responses', async () => {
      const res = await callTool(app, token, 'summarize_responses', { publicId: form.publicId });
      expect(res.status).toBe(200);
      matchesOutput('summarize_responses', res.body);
      expect(res.body.total).toBe(23);
      const [name, email, colour, , rating] = res.body.blocks;
      expect(name).toMatchObject({ answered: 23, skipped: 0 });
      expect(name.latest).toHaveLength(5);
      expect(name.latest[0].value).toBe('Person 22');
      expect(email).toMatchObject({ answered: 0, skipped: 23 });
      expect(colour.choices.map((c: { label: string; count: number }) => [c.label, c.count])).toEqual([
        ['Red', 8],
        ['Green', 8],
        ['Blue', 7],
      ]);
      expect(rating).toMatchObject({ min: 1, max: 5, answered: 23 });
      expect(rating.mean).toBeCloseTo((4 * 15 + 1 + 2 + 3) / 23, 3); // 1..5 cycling over 23 responses
    });
  });

  describe('scopes and roles', () => {
    it('answers a tool whose scope the token lacks with 403 insufficient_scope and a challenge naming it', async () => {
      const { token: formsOnly } = await createToken(app, ws, { role: 'viewer', scopes: ['forms:read'] });
      const res = await callTool(app, formsOnly, 'list_responses', { publicId: form.publicId });
      expectError(res, 403, 'insufficient_scope');
      expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"');
      expect(res.headers['www-authenticate']).toContain('scope="responses:read"');
      expect((await callTool(app, formsOnly, 'get_form', { publicId: form.publicId })).status).toBe(200);
    });

    it('checks the tool before the scope: an unknown tool is 404 even for a narrow token', async () => {
      const { token: narrow } = await createToken(app, ws, { scopes: ['forms:read'] });
      expectError(await callTool(app, narrow, 'no_such_tool', {}), 404, 'not_found');
    });

    it('answers a request without a credential with 401 before anything else', async () => {
      expectError(await callTool(app, undefined, 'no_such_tool', {}), 401, 'unauthorized');
      expectError(
        await request(app.getHttpServer())
          .post('/api/v1/tools/list_forms')
          .set('Authorization', 'Bearer fw_x')
          .send({ limit: 999 }),
        401,
        'unauthorized',
      );
    });
  });
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

/**
 * get_form and the respondent page serve a form's blocks from the instance's copy of its version
 * (no join per call): every kind of edit shows at once, on the instance that made it and on
 * another one sharing the database (two apps here, each with its own copy).
 */
describe('get_form after edits, on one instance and on two', () => {
  let a: NestFastifyApplication;
  let b: NestFastifyApplication;
  let token: string;

  beforeAll(async () => {
    a = await createTestApp();
    b = await createTestApp();
    token = (await createToken(a, await createWorkspace(a, 'pro'), { role: 'admin' })).token;
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  const call = async (app: NestFastifyApplication, tool: string, args: object) => {
    const res = await callTool(app, token, tool, args);
    expect([tool, res.status, res.body.error]).toEqual([tool, 200, undefined]);
    return res.body;
  };
  /** get_form on `app`, twice (the second from the instance's copy): both the form as `expected`. */
  const expectForm = async (app: NestFastifyApplication, expected: { publicId: string }) => {
    for (let i = 0; i < 2; i++) expect(await call(app, 'get_form', { publicId: expected.publicId })).toEqual(expected);
  };
  const page = (app: NestFastifyApplication, publicId: string) => request(app.getHttpServer()).get(`/f/${publicId}`);

  it('shows every kind of edit at once on the instance that made it', async () => {
    const created = await call(a, 'create_form', {
      title: 'Before',
      blocks: [
        { ref: 'pick', type: 'multiple_choice', title: 'Pick one', choices: ['Red', 'Blue'] },
        { type: 'short_text', title: 'Why?' },
      ],
    });
    await expectForm(a, created);
    const { publicId } = created;
    const edits: Array<[string, object]> = [
      ['update_form', { publicId, title: 'After', description: 'Now with a description' }],
      [
        'update_form',
        {
          publicId,
          blocks: [
            { id: created.blocks[0].id, type: 'multiple_choice', title: 'Pick one', choices: ['Red', 'Blue', 'Green'] },
            { id: created.blocks[1].id, type: 'long_text', title: 'Why, at length?', required: true },
            {
              type: 'email',
              title: 'Email',
              showIf: { block: 'pick', op: 'equals', value: 'Green' },
            },
          ],
        },
      ],
      ['update_form', { publicId, hiddenFields: ['campaign'] }],
      ['update_form', { publicId, partialResponses: true }],
      ['publish_form', { publicId }],
      ['close_form', { publicId }],
      ['publish_form', { publicId }],
    ];
    let version = created.version;
    for (const [tool, args] of edits) {
      const answer = await call(a, tool, args);
      expect(answer.version).toBe(++version);
      await expectForm(a, answer);
    }
    const last = await call(a, 'get_form', { publicId });
    expect(last).toMatchObject({
      title: 'After',
      description: 'Now with a description',
      status: 'published',
      hiddenFields: ['campaign'],
      partialResponses: true,
    });
    expect(last.blocks.map((x: { type: string }) => x.type)).toEqual(['multiple_choice', 'long_text', 'email']);
    expect(last.blocks[0].choices.map((c: { label: string }) => c.label)).toEqual(['Red', 'Blue', 'Green']);
    const green = last.blocks[0].choices[2].id;
    expect(last.blocks[2].showIf).toEqual({ block: 'pick', op: 'equals', value: green });
  });

  it('answers a kept version as every tool answers: the same JSON, headers and request id', async () => {
    const created = await call(a, 'create_form', { title: 'Kept', blocks: [{ type: 'short_text', title: 'Name' }] });
    const { publicId } = created;
    const answers = [];
    for (const id of ['first-read', 'second-read']) {
      const res = await callTool(a, token, 'get_form', { publicId }, { 'X-Request-Id': id });
      expect([res.status, res.headers['content-type'], res.headers['x-request-id']]).toEqual([
        200,
        'application/json; charset=utf-8',
        id,
      ]);
      expect(res.headers['ratelimit-remaining']).toMatch(/^\d+$/);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      answers.push(res.text);
    }
    expect(answers[1]).toBe(answers[0]);
    expect(JSON.parse(answers[0])).toEqual(created);
    // With an Idempotency-Key (its own route) and again from its stored answer: the same form.
    for (let i = 0; i < 2; i++) {
      const keyed = await callTool(a, token, 'get_form', { publicId }, { 'Idempotency-Key': 'kept-version-read' });
      expect([keyed.status, keyed.body]).toEqual([200, created]);
    }
  });

  it("answers calls made at the same time each with its own form, and another workspace's as not found", async () => {
    const other = (await createToken(a, await createWorkspace(a, 'pro'), { role: 'admin' })).token;
    const mine = await Promise.all(
      [1, 2, 3].map((i) =>
        call(a, 'create_form', { title: `Mine ${i}`, blocks: [{ type: 'short_text', title: 'Q' }] }),
      ),
    );
    const theirs = (await callTool(a, other, 'create_form', { title: 'Theirs' })).body;
    const calls = [];
    for (let round = 0; round < 10; round++) {
      for (const form of mine)
        calls.push(['mine', form, callTool(a, token, 'get_form', { publicId: form.publicId })] as const);
      calls.push(['theirs', theirs, callTool(a, token, 'get_form', { publicId: theirs.publicId })] as const);
      calls.push(['own', theirs, callTool(a, other, 'get_form', { publicId: theirs.publicId })] as const);
    }
    for (const [whose, form, pending] of calls) {
      const res = await pending;
      if (whose === 'theirs') expect([res.status, res.body.error?.code]).toEqual([404, 'not_found']);
      else expect([res.status, res.body]).toEqual([200, form]);
    }
  });

  it('never serves another instance a version older than the one committed', async () => {
    const created = await call(a, 'create_form', {
      title: 'Shared',
      blocks: [{ type: 'short_text', title: 'First question' }],
    });
    const { publicId } = created;
    await call(a, 'publish_form', { publicId });
    // Both instances hold the published version now.
    for (const app of [a, b]) {
      await call(app, 'get_form', { publicId });
      expect((await page(app, publicId)).text).toContain('First question');
    }

    const updated = await call(b, 'update_form', {
      publicId,
      title: 'Shared, edited',
      blocks: [{ type: 'short_text', title: 'Second question' }],
    });
    await expectForm(a, updated);
    const onA = await page(a, publicId);
    expect(onA.status).toBe(200);
    expect(onA.text).toContain('Second question');
    expect(onA.text).not.toContain('First question');

    const closed = await call(b, 'close_form', { publicId });
    await expectForm(a, closed);
    expect((await page(a, publicId)).text).not.toContain('Second question');

    const reopened = await call(a, 'publish_form', { publicId });
    await expectForm(b, reopened);

    await call(b, 'delete_form', { publicId });
    const gone = await callTool(a, token, 'get_form', { publicId });
    expect([gone.status, gone.body.error.code]).toEqual([404, 'not_found']);
    expect((await page(a, publicId)).status).toBe(404);
  });
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/**
 * Issue 52: the respondent page drawn once per form version, each request with its own signed
 * state; an edit or a publish served at once, on every instance; the page's script and style
 * sheet as files named by their content.
 */
describe('respondent page drawn once per form version', () => {
  let a: NestFastifyApplication;
  let b: NestFastifyApplication;
  let token: string;

  beforeAll(async () => {
    a = await createTestApp();
    b = await createTestApp();
    const ws = await createWorkspace(a, 'pro');
    token = (await createToken(a, ws, { role: 'admin' })).token;
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  const stateOf = (html: string) => /name="_state" value="([^"]+)"/.exec(html)?.[1];
  const get = (app: NestFastifyApplication, path: string) => request(app.getHttpServer()).get(path);
  const state = (token: string) => JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString('utf8'));

  async function published(blocks: unknown[]) {
    const created = await callTool(a, token, 'create_form', { title: 'Sign-up', blocks });
    expect(created.status).toBe(200);
    expect((await callTool(a, token, 'publish_form', { publicId: created.body.publicId })).status).toBe(200);
    return created.body as { publicId: string; version: number; blocks: Array<{ id: string }> };
  }

  it.each([
    ['one page', [{ type: 'short_text', title: 'Name', required: true }]],
    [
      'several pages',
      [
        { type: 'short_text', title: 'Name', required: true },
        { type: 'page_break', title: 'More' },
        { type: 'long_text', title: 'Anything else?' },
      ],
    ],
  ])('gives two GETs of the same page (%s) states of their own, each taken by a post', async (_kind, blocks) => {
    const form = await published(blocks);
    const [one, two] = [await get(a, `/f/${form.publicId}`), await get(a, `/f/${form.publicId}`)];
    expect([one.status, two.status]).toEqual([200, 200]);
    expect(one.headers['cache-control']).toBe('no-store');
    const [s1, s2] = [stateOf(one.text)!, stateOf(two.text)!];
    expect(s1).toBeDefined();
    expect(s1).not.toBe(s2);
    expect(state(s1).n).not.toBe(state(s2).n);
    // The same page otherwise.
    expect(one.text.replace(s1, '')).toBe(two.text.replace(s2, ''));
    // Each state is good for a post: the answer is stored.
    const name = form.blocks[0].id;
    for (const s of [s1, s2]) {
      const fields = { _state: s, [name]: 'Ada', ...(blocks.length > 1 ? { _action: 'next' } : {}) };
      const posted = await request(a.getHttpServer()).post(`/f/${form.publicId}`).type('form').send(fields);
      expect(posted.status).toBe(200);
      expect(posted.text).toContain(blocks.length > 1 ? 'Page 2 of 2' : 'Thank you');
    }
  });

  it('serves an edit and a publish at once, on this instance and on another', async () => {
    const form = await published([{ type: 'short_text', title: 'First wording' }]);
    // Both instances keep the page of this version.
    expect((await get(a, `/f/${form.publicId}`)).text).toContain('First wording');
    expect((await get(b, `/f/${form.publicId}`)).text).toContain('First wording');
    const current = await callTool(a, token, 'get_form', { publicId: form.publicId });
    const edited = await callTool(a, token, 'update_form', {
      publicId: form.publicId,
      ifVersion: current.body.version,
      blocks: [{ ...current.body.blocks[0], title: 'Second wording' }],
    });
    expect(edited.status).toBe(200);
    for (const app of [a, b]) {
      const page = await get(app, `/f/${form.publicId}`);
      expect(page.text).toContain('Second wording');
      expect(page.text).not.toContain('First wording');
    }
    // Closed, then published again with new words: each served at once too.
    expect((await callTool(a, token, 'close_form', { publicId: form.publicId })).status).toBe(200);
    expect((await get(b, `/f/${form.publicId}`)).status).toBe(409);
    const closed = await callTool(a, token, 'get_form', { publicId: form.publicId });
    const reworded = await callTool(a, token, 'update_form', {
      publicId: form.publicId,
      ifVersion: closed.body.version,
      blocks: [{ ...closed.body.blocks[0], title: 'Third wording' }],
    });
    expect(reworded.status).toBe(200);
    expect((await callTool(a, token, 'publish_form', { publicId: form.publicId })).status).toBe(200);
    for (const app of [b, a]) {
      const page = await get(app, `/f/${form.publicId}`);
      expect(page.status).toBe(200);
      expect(page.text).toContain('Third wording');
    }
  });

  it('links its script and style sheet by content hash, kept a year (immutable), under a CSP that allows them', async () => {
    const form = await published([
      { ref: 'pet', type: 'yes_no', title: 'A pet?' },
      { type: 'short_text', title: 'Its name', showIf: { block: 'pet', op: 'equals', value: true } },
    ]);
    const page = await get(a, `/f/${form.publicId}`);
    const css = /<link rel="stylesheet" href="(\/f\/assets\/respondent\.[0-9a-f]{16}\.css)"\/>/.exec(page.text)?.[1];
    const js = /<script src="(\/f\/assets\/respondent\.[0-9a-f]{16}\.js)" defer=""><\/script>/.exec(page.text)?.[1];
    expect(css).toBeDefined();
    expect(js).toBeDefined();
    expect(page.text).not.toContain('<style>');
    expect(page.headers['content-security-policy']).toContain("style-src 'self' 'unsafe-inline'");
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    for (const [path, type] of [
      [css!, 'text/css; charset=utf-8'],
      [js!, 'text/javascript; charset=utf-8'],
    ]) {
      const file = await get(a, path);
      expect(file.status).toBe(200);
      expect(file.headers['content-type']).toBe(type);
      expect(file.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(file.headers['x-content-type-options']).toBe('nosniff');
      expect(file.text.length).toBeGreaterThan(100);
    }
    expect((await get(a, css!)).text).toContain('font: 16px/1.5 system-ui');
    expect((await get(a, js!)).text).toContain('function evaluate(c, facts)');
  });

  it('answers 404 JSON for a file name it does not know', async () => {
    for (const path of ['/f/assets/respondent.0000000000000000.js', '/f/assets/respondent.css', '/f/assets/x']) {
      const res = await get(a, path);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expectError(res, 404, 'not_found');
    }
  });

  it('draws a page with hidden values in it for its request (not the kept one)', async () => {
    const created = await callTool(a, token, 'create_form', {
      title: 'Sourced',
      hiddenFields: ['source'],
      blocks: [
        { type: 'short_text', title: 'Name' },
        { type: 'page_break', title: 'More' },
        { type: 'short_text', title: 'Else' },
      ],
    });
    await callTool(a, token, 'publish_form', { publicId: created.body.publicId });
    await get(a, `/f/${created.body.publicId}`);
    const sourced = await get(a, `/f/${created.body.publicId}?source=newsletter`);
    expect(state(stateOf(sourced.text)!).h).toEqual({ source: 'newsletter' });
    expect(state(stateOf((await get(a, `/f/${created.body.publicId}`)).text)!).h).toEqual({});
  });
});

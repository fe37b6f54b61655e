import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

describe('errors: one JSON envelope on every path', () => {
  let app: NestFastifyApplication;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp();
    token = (await createToken(app, await createWorkspace(app))).token;
  });
  afterAll(() => app.close());

  it('answers an unknown path with 404 not_found', async () => {
    const res = await request(app.getHttpServer()).get('/no/such/path');
    expectError(res, 404, 'not_found');
  });

  it('answers an unknown path under the API with 404 not_found, even with a body', async () => {
    const res = await request(app.getHttpServer())
      .post('/api/v2/tools/list_forms')
      .set('Authorization', `Bearer ${token}`)
      .send({});
    expectError(res, 404, 'not_found');
  });

  it('answers a wrong method with 405 method_not_allowed and an Allow header', async () => {
    const res = await request(app.getHttpServer())
      .get('/api/v1/tools/list_forms')
      .set('Authorization', `Bearer ${token}`);
    expectError(res, 405, 'method_not_allowed');
    expect(res.headers.allow).toBe('POST');
    const del = await request(app.getHttpServer()).delete('/api/v1/tools');
    expectError(del, 405, 'method_not_allowed');
    expect(del.headers.allow).toContain('GET');
  });

  it('answers an unknown tool with 404 not_found naming the tools', async () => {
    const res = await callTool(app, token, 'drop_database', {});
    const error = expectError(res, 404, 'not_found');
    expect(error.hint).toContain('list_forms');
  });

  it('suggests the argument that was meant for an unknown one (id, formId for publicId; a typo)', async () => {
    for (const [tool, args, path, meant] of [
      ['get_form', { id: 'abc' }, '/id', 'publicId'],
      ['get_form', { formId: 'abc' }, '/formId', 'publicId'],
      ['list_responses', { publicId: 'abc', limt: 5 }, '/limt', 'limit'],
    ] as const) {
      const error = expectError(await callTool(app, token, tool, args), 400, 'invalid_arguments');
      expect(error.details).toContainEqual({ path, message: `is not a known argument; did you mean \`${meant}\`?` });
    }
  });

  it('serves a favicon (no 404 for every page a browser shows) and links it from the pages, whose CSP lets it load', async () => {
    const icon = await request(app.getHttpServer()).get('/favicon.ico');
    expect(icon.status).toBe(200);
    expect(icon.headers['content-type']).toMatch(/^image\/svg\+xml/);
    expect(icon.headers['cache-control']).toContain('max-age=');
    expect(String(icon.body ?? icon.text)).toContain('<svg');
    const page = await request(app.getHttpServer()).get('/f/nope');
    expect(page.text).toMatch(/<link rel="icon" href="\/favicon.ico" type="image\/svg\+xml"\/?>/);
    expect(page.headers['content-security-policy']).toContain("img-src 'self'");
  });

  it('answers malformed JSON with 400 invalid_arguments', async () => {
    const res = await callTool(app, token, 'list_forms').set('Content-Type', 'application/json').send('{"limit": 5,');
    const error = expectError(res, 400, 'invalid_arguments');
    expect(error.details).toEqual([{ path: '', message: 'malformed JSON' }]);
  });

  it('checks the credential before the body: malformed JSON without a token is 401', async () => {
    const res = await callTool(app, undefined, 'list_forms').set('Content-Type', 'application/json').send('{oops');
    expectError(res, 401, 'unauthorized');
  });

  it('answers a JSON body that is not an object with 400 invalid_arguments', async () => {
    const res = await callTool(app, token, 'list_forms').set('Content-Type', 'application/json').send('[1,2]');
    const error = expectError(res, 400, 'invalid_arguments');
    expect(error.details?.[0].path).toBe('');
  });

  it('answers a non-JSON body with 415 unsupported_media_type', async () => {
    const res = await callTool(app, token, 'list_forms').set('Content-Type', 'text/plain').send('limit=5');
    expectError(res, 415, 'unsupported_media_type');
  });

  it('reads JSON with a charset parameter or a +json type, and refuses other charsets with 415', async () => {
    for (const type of [
      'application/json; charset=utf-8',
      'application/JSON;charset="UTF-8"',
      'application/vnd.api+json',
    ]) {
      const res = await callTool(app, token, 'list_forms').set('Content-Type', type).send('{"limit": 1}');
      expect(res.status).toBe(200);
    }
    expectError(
      await callTool(app, token, 'list_forms').set('Content-Type', 'application/json; charset=latin1').send('{}'),
      415,
      'unsupported_media_type',
    );
  });

  it('answers an oversized body with 413 payload_too_large', async () => {
    const res = await callTool(app, token, 'list_forms', { padding: 'x'.repeat(1_100_000) });
    expectError(res, 413, 'payload_too_large');
  });

  it('answers a bad percent-encoding in the path with a JSON 4xx, not a crash', async () => {
    const res = await request(app.getHttpServer())
      .post('/api/v1/tools/%E0%A4%A')
      .set('Authorization', `Bearer ${token}`)
      .send({});
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(typeof res.body.error.code).toBe('string');
  });

  it('answers a failure on the service side with 500 internal_error, a generic message and no stack', async () => {
    const broken = await createTestApp();
    const brokenToken = (await createToken(broken, await createWorkspace(broken))).token;
    await broken.get(DataSource).destroy(); // the database goes away under the app
    try {
      const res = await callTool(broken, brokenToken, 'list_forms', {});
      const error = expectError(res, 500, 'internal_error');
      expect(error.message).toBe('Something went wrong on our side.');
      expect(JSON.stringify(res.body)).not.toMatch(/DataSource|pool|Error:|\.ts:/);
      // The respondent page too: an outage is not "Form not found".
      expectError(await request(broken.getHttpServer()).get('/f/abcdefghij'), 500, 'internal_error');
    } finally {
      await broken.close().catch(() => undefined);
    }
  });

  it('returns the request id as a header and in the error body', async () => {
    const res = await request(app.getHttpServer()).get('/nowhere').set('X-Request-Id', 'trace-123');
    expect(res.headers['x-request-id']).toBe('trace-123');
    expect(res.body.error.requestId).toBe('trace-123');
  });

  it('refuses the NUL character in any argument with 400 invalid_arguments naming where, never a 500', async () => {
    const get = expectError(
      await callTool(app, token, 'get_form', { publicId: 'ab\u0000c' }),
      400,
      'invalid_arguments',
    );
    expect(get.details).toEqual([
      { path: '/publicId', message: 'must be well-formed text (no NUL character \\u0000, no lone surrogate)' },
    ]);
    const surrogate = expectError(
      await callTool(app, token, 'create_form', {
        title: 'ok',
        blocks: [{ type: 'dropdown', title: 'x', choices: ['\udc00'] }],
      }),
      400,
      'invalid_arguments',
    );
    expect(surrogate.details!.map((d) => d.path)).toEqual(['/blocks/0/choices/0']);
    const create = expectError(
      await callTool(app, token, 'create_form', { title: 'ok', blocks: [{ type: 'short_text', title: 'x\u0000' }] }),
      400,
      'invalid_arguments',
    );
    expect(create.details!.map((d) => d.path)).toEqual(['/blocks/0/title']);
  });

  it('answers a respondent URL that cannot be a form with 404, for pages and JSON', async () => {
    expect((await request(app.getHttpServer()).get('/f/ab%00c')).status).toBe(404);
    expectError(await request(app.getHttpServer()).post('/f/ab%00c').send({ answers: {} }), 404, 'not_found');
    expect((await request(app.getHttpServer()).post('/f/ab%00c').type('form').send('x=1')).status).toBe(404);
  });
});

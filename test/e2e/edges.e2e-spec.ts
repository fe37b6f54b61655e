import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { FormRecord } from '../../src/forms/forms.service';
import { ToolRegistry } from '../../src/tools/tool-registry.service';
import { createForm, createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/** `depth` arrays nested in each other, as JSON text (JSON.stringify of such a value would overflow). */
const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('edges: deep, odd and encoded input; headers; the index; the API docs', () => {
  let app: NestFastifyApplication;
  let token: string;
  let form: FormRecord;

  beforeAll(async () => {
    app = await createTestApp();
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws)).token;
    form = await createForm(app, ws, { status: 'published' });
  });
  afterAll(() => app.close());

  describe('arguments nested 10,000 levels deep', () => {
    it('are a 400 invalid_arguments naming the argument, on a tool call; 64 levels are fine', async () => {
      const res = await callTool(app, token, 'list_forms')
        .set('Content-Type', 'application/json')
        .send(`{"deep": ${nested(10_000)}}`);
      const error = expectError(res, 400, 'invalid_arguments');
      expect(error.details).toEqual([{ path: '/deep', message: expect.stringContaining('64 levels') }]);
      // 64 levels in all (the body object, then 63 arrays) pass on to the schema, which refuses the unknown argument.
      const within = await callTool(app, token, 'list_forms')
        .set('Content-Type', 'application/json')
        .send(`{"deep": ${nested(63)}}`);
      expect(expectError(within, 400, 'invalid_arguments').details).toEqual([
        { path: '/deep', message: 'is not a known argument' },
      ]);
    });

    it('are a 400 with an Idempotency-Key too (nothing is fingerprinted or stored)', async () => {
      const body = `{"publicId": "${form.publicId}", "answers": {"x": ${nested(10_000)}}}`;
      const res = await callTool(app, token, 'create_response', undefined, { 'Idempotency-Key': `deep-${Date.now()}` })
        .set('Content-Type', 'application/json')
        .send(body);
      expectError(res, 400, 'invalid_arguments');
    });
  });

  it('refuses a list_responses since with an offset beyond what PostgreSQL takes (+23:59) with 400 on /since; takes real ones', async () => {
    for (const since of ['2026-01-01T00:00:00+23:59', '2026-01-01T00:00:00-16:00', '2026-01-01T00:00:00+2000']) {
      const res = await callTool(app, token, 'list_responses', { publicId: form.publicId, since });
      const error = expectError(res, 400, 'invalid_arguments');
      expect(error.details).toEqual([{ path: '/since', message: expect.stringContaining('15:59') }]);
    }
    for (const since of [
      '2026-01-01T00:00:00+14:00',
      '2026-01-01T00:00:00-12:00',
      '2026-01-01T00:00:00+15:59',
      '2026-01-01T00:00:00Z',
    ]) {
      expect((await callTool(app, token, 'list_responses', { publicId: form.publicId, since })).status).toBe(200);
    }
  });

  describe('Content-Encoding', () => {
    for (const encoding of ['gzip', 'br', 'deflate']) {
      it(`refuses a tool call body sent with Content-Encoding: ${encoding} (not compressed) with 415`, async () => {
        const res = await callTool(app, token, 'list_forms')
          .set('Content-Type', 'application/json')
          .set('Content-Encoding', encoding)
          .send('{}');
        const error = expectError(res, 415, 'unsupported_media_type');
        expect(error.hint).toContain('Content-Encoding');
      });
    }

    it('refuses a gzip-compressed body with 415 too, and takes identity', async () => {
      const res = await callTool(app, token, 'list_forms')
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', 'gzip')
        .send(gzipSync('{}'));
      expectError(res, 415, 'unsupported_media_type');
      const plain = await callTool(app, token, 'list_forms')
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', 'identity')
        .send('{}');
      expect(plain.status).toBe(200);
    });

    it('refuses an encoded form post on the respondent page with 415', async () => {
      const res = await request(app.getHttpServer())
        .post(`/f/${form.publicId}`)
        .type('form')
        .set('Content-Encoding', 'gzip')
        .send('a=b');
      expectError(res, 415, 'unsupported_media_type');
    });
  });

  it('says the limit of the route in a 413: 1 MB on the tools API, 200 KB on form posts, 20 KB on the sign-in pages', async () => {
    const api = await callTool(app, token, 'create_form', { title: 'x'.repeat(1_100_000) });
    expect(expectError(api, 413, 'payload_too_large').hint).toContain('at most 1 MB');
    const formPost = await request(app.getHttpServer())
      .post(`/f/${form.publicId}`)
      .type('form')
      .send(`a=${'x'.repeat(210_000)}`);
    expect(expectError(formPost, 413, 'payload_too_large').hint).toContain('at most 200 KB');
    const signIn = await request(app.getHttpServer())
      .post('/oauth/interaction/abc/login')
      .type('form')
      .send(`email=${'x'.repeat(25_000)}`);
    expect(expectError(signIn, 413, 'payload_too_large').hint).toContain('at most 20 KB');
  });

  it('sends X-Content-Type-Options: nosniff with every answer: results, errors, documents, pages', async () => {
    const server = app.getHttpServer();
    const answers = {
      'a tool result': await callTool(app, token, 'list_forms', {}),
      'a 401': await callTool(app, 'fw_nope', 'list_forms', {}),
      'a 404': await request(server).get('/no/such/path'),
      'a 415': await callTool(app, token, 'list_forms').set('Content-Type', 'text/plain').send('hi'),
      'the tool list': await request(server).get('/api/v1/tools'),
      '/openapi.json': await request(server).get('/openapi.json'),
      '/docs': await request(server).get('/docs/'),
      '/healthz': await request(server).get('/healthz'),
      '/auth.md': await request(server).get('/auth.md'),
      'a respondent page': await request(server).get(`/f/${form.publicId}`),
    };
    const missing = Object.entries(answers)
      .filter(([, res]) => res.headers['x-content-type-options'] !== 'nosniff')
      .map(([what]) => what);
    expect(missing).toEqual([]);
  });

  it('sends a Content-Security-Policy with /docs that allows only its own scripts', async () => {
    const res = await request(app.getHttpServer()).get('/docs/');
    expect(res.status).toBe(200);
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/script-src[^;]*'unsafe-(inline|eval)'/);
  });

  it('answers GET / with a JSON index of the service, without a credential', async () => {
    const res = await request(app.getHttpServer()).get('/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));
    expect(res.body).toMatchObject({ name: 'Formwork', version: pkg.version });
    const links = res.body.links as Record<string, string>;
    expect(Object.values(links)).toEqual(
      expect.arrayContaining(['/docs', '/openapi.json', '/auth.md', '/api/v1/tools', '/mcp']),
    );
    for (const path of Object.values(links)) {
      // The MCP endpoint takes POST only (a stateless server opens no stream for GET).
      const { status } = await request(app.getHttpServer()).get(path);
      if (path === '/mcp') expect(status).toBe(405);
      else expect(status).toBeLessThan(400);
    }
  });

  it('answers GET / from a browser (HTML preferred over JSON) with a short page linking the settings and the docs', async () => {
    const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    const res = await request(app.getHttpServer()).get('/').set('Accept', browser);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers.vary).toMatch(/Accept/);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    for (const path of ['/settings', '/docs', '/openapi.json', '/auth.md'])
      expect(res.text).toContain(`href="${path}"`);
    // API clients keep the JSON: no Accept, */*, JSON first, or JSON preferred by q.
    for (const accept of [
      undefined,
      '*/*',
      'application/json',
      'application/json, text/html',
      'text/html;q=0.5, application/json',
    ]) {
      const api = request(app.getHttpServer()).get('/');
      const json = await (accept ? api.set('Accept', accept) : api);
      expect({ accept, type: json.headers['content-type'] }).toEqual({
        accept,
        type: expect.stringMatching(/^application\/json/),
      });
      expect(json.body.name).toBe('Formwork');
    }
  });

  describe('/openapi.json as Swagger UI shows it', () => {
    let doc: any; // eslint-disable-line @typescript-eslint/no-explicit-any
    beforeAll(async () => {
      doc = (await request(app.getHttpServer()).get('/openapi.json')).body;
    });

    it('has no text that reads as an HTML tag (Swagger UI would drop it)', () => {
      const descriptions: string[] = [];
      const walk = (v: unknown) => {
        if (Array.isArray(v)) v.forEach(walk);
        else if (v && typeof v === 'object') {
          for (const [k, x] of Object.entries(v)) {
            if ((k === 'description' || k === 'summary') && typeof x === 'string') descriptions.push(x);
            else walk(x);
          }
        }
      };
      walk(doc);
      expect(descriptions.length).toBeGreaterThan(20);
      expect(descriptions.filter((d) => /<[A-Za-z][^>]*>/.test(d))).toEqual([]);
      expect(doc.info.description).toContain('Authorization: Bearer');
    });

    it('gives every tool an example that the tool takes as it is; list_forms lists every form', async () => {
      const registry = app.get(ToolRegistry);
      for (const tool of registry.all()) {
        const media = doc.paths[`/api/v1/tools/${tool.definition.name}`].post.requestBody.content['application/json'];
        const examples = Object.values(media.examples ?? {}) as Array<{ value: unknown }>;
        expect(examples.length).toBeGreaterThan(0);
        for (const { value } of examples) {
          expect({
            tool: tool.definition.name,
            valid: tool.validate(structuredClone(value)),
            errors: tool.validate.errors ?? null,
          }).toEqual({ tool: tool.definition.name, valid: true, errors: null });
        }
      }
      const listForms = doc.paths['/api/v1/tools/list_forms'].post.requestBody.content['application/json'];
      expect(Object.values(listForms.examples).map((e) => (e as { value: unknown }).value)).toEqual([{}]);
      // Tried as it is, it shows the published form too (not only drafts).
      const res = await callTool(app, token, 'list_forms', {});
      expect(res.body.forms.map((f: { publicId: string }) => f.publicId)).toContain(form.publicId);
    });
  });
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/** What the operator and the load balancer rely on: probes, version headers, CORS, budgets turned off. */
describe('operations', () => {
  let app: NestFastifyApplication;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp();
    ({ token } = await createToken(app, await createWorkspace(app)));
  });
  afterAll(() => app.close());
  afterEach(() => jest.restoreAllMocks());

  describe('probes', () => {
    it('/healthz is 200 without a credential and spends no budget', async () => {
      const res = await request(app.getHttpServer()).get('/healthz');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok' });
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    });

    it('/readyz reports the database and where budgets are counted (in-process without REDIS_URL)', async () => {
      const res = await request(app.getHttpServer()).get('/readyz');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        status: 'ok',
        checks: { database: 'ok', redis: 'not configured' },
        rateLimits: 'per instance',
        storage: { kind: 'disk', ok: true },
        // Without SMTP_URL messages wait in the outbox (issue 48).
        email: { configured: false, pending: expect.any(Number) },
      });
    });

    it('/readyz is 503 when the database does not answer', async () => {
      // Only the readiness probe fails: the sequencer's background queries on the same DataSource
      // must not take the one failure instead.
      const db = app.get(DataSource);
      const query = db.query.bind(db);
      const spy = jest
        .spyOn(db, 'query')
        .mockImplementation((sql: string, ...rest: unknown[]) =>
          sql === 'SELECT 1' ? Promise.reject(new Error('connection refused')) : query(sql, ...(rest as [])),
        );
      const res = await request(app.getHttpServer()).get('/readyz');
      spy.mockRestore();
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ status: 'unavailable', checks: { database: 'unreachable' } });
    });
  });

  describe('versioning headers', () => {
    const VERSION_HEADERS = ['deprecation', 'sunset', 'link'];

    it('are not sent while nothing is deprecated', async () => {
      const res = await callTool(app, token, 'list_forms', {});
      expect(res.status).toBe(200);
      for (const h of VERSION_HEADERS) expect(res.headers[h]).toBeUndefined();
    });

    it('are on every /api/v1 answer, errors included, when API_V1_DEPRECATION and API_V1_SUNSET are set', async () => {
      const deprecated = await createTestApp({
        API_V1_DEPRECATION: '2027-01-31',
        API_V1_SUNSET: '2027-07-31',
        API_V1_DEPRECATION_LINK: 'https://formwork.test/changelog#v2',
        RATE_LIMIT_IP_PER_MIN: '6',
      });
      try {
        const { token: t } = await createToken(deprecated, await createWorkspace(deprecated));
        const server = deprecated.getHttpServer();
        const answers = [
          await callTool(deprecated, t, 'list_forms', {}),
          await request(server).get('/api/v1'),
          await request(server).get('/api/v1/tools'),
          await request(server).get('/api/v1/no-such-path'),
          await callTool(deprecated, t, 'no_such_tool', {}),
          await callTool(deprecated, t, 'get_form', {}),
        ];
        answers.push(await request(server).get('/api/v1/tools')); // the 7th request of this IP: 429
        expect(answers.map((r) => r.status)).toEqual([200, 401, 200, 404, 404, 400, 429]);
        for (const res of answers) {
          expect(res.headers.deprecation).toBe('@1801353600');
          expect(res.headers.sunset).toBe('Sat, 31 Jul 2027 00:00:00 GMT');
          expect(res.headers.link).toBe(
            '<https://formwork.test/changelog#v2>; rel="deprecation"; type="text/html", <https://formwork.test/changelog#v2>; rel="sunset"; type="text/html"',
          );
        }
        // Not on what is outside the versioned API.
        const health = await request(server).get('/healthz');
        for (const h of VERSION_HEADERS) expect(health.headers[h]).toBeUndefined();
      } finally {
        await deprecated.close();
      }
    });
  });

  describe('CORS', () => {
    it('answers a preflight for a tool call with an Idempotency-Key, spending no budget', async () => {
      const res = await request(app.getHttpServer())
        .options('/api/v1/tools/create_form')
        .set('Origin', 'https://app.example.com')
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'authorization, content-type, idempotency-key');
      expect(res.status).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.headers['access-control-allow-methods']).toContain('POST');
      expect(res.headers['access-control-allow-headers']).toBe(
        'Authorization,Content-Type,Idempotency-Key,X-Request-Id,Mcp-Protocol-Version,Mcp-Session-Id,Last-Event-ID',
      );
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    });

    it('lets a browser read the headers a client needs, on answers and errors', async () => {
      for (const res of [
        await callTool(app, token, 'list_forms', {}, { Origin: 'https://app.example.com' }),
        await request(app.getHttpServer()).get('/api/v1').set('Origin', 'https://app.example.com'),
      ]) {
        expect(res.headers['access-control-allow-origin']).toBe('*');
        const exposed = String(res.headers['access-control-expose-headers']).split(',');
        for (const h of [
          'WWW-Authenticate',
          'RateLimit-Limit',
          'RateLimit-Remaining',
          'RateLimit-Reset',
          'RateLimit-Policy',
          'RateLimit',
          'X-RateLimit-Limit',
          'X-RateLimit-Remaining',
          'X-RateLimit-Reset',
          'Retry-After',
          'Idempotency-Replayed',
          'Deprecation',
          'Sunset',
          'Link',
          'X-Request-Id',
        ]) {
          expect(exposed).toContain(h);
        }
      }
    });
  });

  describe('RATE_LIMIT_ENABLED=false', () => {
    it('counts nothing: no RateLimit headers and no 429', async () => {
      const open = await createTestApp({
        RATE_LIMIT_ENABLED: 'false',
        RATE_LIMIT_CREDENTIAL_PER_MIN: '1',
        RATE_LIMIT_IP_PER_MIN: '1',
      });
      try {
        const { token: t } = await createToken(open, await createWorkspace(open));
        for (let i = 0; i < 3; i++) {
          const res = await callTool(open, t, 'list_forms', {});
          expect(res.status).toBe(200);
          expect(res.headers['ratelimit-limit']).toBeUndefined();
          expect(res.headers.ratelimit).toBeUndefined();
        }
        expect((await request(open.getHttpServer()).get('/readyz')).body.rateLimits).toBe('off');
        expectError(await request(open.getHttpServer()).get('/api/v1'), 401, 'unauthorized');
      } finally {
        await open.close();
      }
    });
  });
});

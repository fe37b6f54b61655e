import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

const HEADERS = ['limit', 'remaining', 'reset'];

function budgetHeaders(res: request.Response) {
  const values = HEADERS.map((h) => Number(res.headers[`ratelimit-${h}`]));
  const legacy = HEADERS.map((h) => Number(res.headers[`x-ratelimit-${h}`]));
  expect(legacy).toEqual(values); // X-RateLimit-* carry the same three values
  const [limit, remaining, reset] = values;
  return { limit, remaining, reset };
}

describe('rate limits (one instance, in-process counters)', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;

  beforeAll(async () => {
    app = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '120', RATE_LIMIT_IP_PER_MIN: '240' });
    ws = await createWorkspace(app);
  });
  afterAll(() => app.close());

  it('gives one credential 120 requests a minute over all routes, then 429 rate_limited with Retry-After', async () => {
    const { token } = await createToken(app, ws);
    const statuses: number[] = [];
    // Concurrent, and spread over two routes: one budget, counted exactly.
    const calls = Array.from({ length: 125 }, (_, i) =>
      i % 2 ? callTool(app, token, 'list_forms', {}) : request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`),
    );
    for (const res of await Promise.all(calls)) statuses.push(res.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(120);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);

    const refused = await callTool(app, token, 'list_forms', {});
    expectError(refused, 429, 'rate_limited');
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const h = budgetHeaders(refused);
    expect(h).toMatchObject({ limit: 120, remaining: 0 });
    expect(h.reset).toBeGreaterThan(0);
    expect(h.reset).toBeLessThanOrEqual(60);
  });

  it('shows the tighter budget on every response, errors included, counting down', async () => {
    const fresh = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '120', RATE_LIMIT_IP_PER_MIN: '240' });
    try {
      const { token } = await createToken(fresh, await createWorkspace(fresh));
      const a = budgetHeaders(await callTool(fresh, token, 'list_forms', {}));
      expect(a).toMatchObject({ limit: 120, remaining: 119 }); // credential: 119 left, IP: 239 left
      const b = budgetHeaders(await callTool(fresh, token, 'list_forms', {}));
      expect(b.remaining).toBe(118);
      const errored = await callTool(fresh, token, 'get_form', { publicId: 'missing' });
      expect(errored.status).toBe(404);
      expect(budgetHeaders(errored).remaining).toBe(117);
    } finally {
      await fresh.close();
    }
  });

  it('switches to the IP budget when it is the tighter one', async () => {
    // The first test spent 126 of this IP's 240; a new token has 120 of its own.
    const { token } = await createToken(app, ws);
    const h = budgetHeaders(await callTool(app, token, 'list_forms', {}));
    expect(h.limit).toBe(240);
    expect(h.remaining).toBeLessThan(119);
  });

  it('shows the IP budget on requests without a valid credential', async () => {
    const res = await request(app.getHttpServer()).get('/api/v1');
    expect(res.status).toBe(401);
    expect(budgetHeaders(res).limit).toBe(240);
  });
});

describe('rate limits per client IP', () => {
  it('gives one IP 240 requests a minute over several credentials', async () => {
    const app = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '120', RATE_LIMIT_IP_PER_MIN: '240' });
    try {
      const ws = await createWorkspace(app);
      const tokens = await Promise.all([0, 1, 2].map(() => createToken(app, ws)));
      const statuses: number[] = [];
      for (let round = 0; round < 3; round++) {
        const batch = await Promise.all(Array.from({ length: 85 }, () => callTool(app, tokens[round].token, 'list_forms', {})));
        statuses.push(...batch.map((r) => r.status));
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(240);
      expect(statuses.filter((s) => s === 429)).toHaveLength(15);
      // Unauthenticated requests from that IP are refused too, before authentication.
      const res = await request(app.getHttpServer()).get('/api/v1');
      expectError(res, 429, 'rate_limited');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      // The load balancer's probes are never refused.
      expect((await request(app.getHttpServer()).get('/healthz')).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});

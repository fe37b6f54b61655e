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
      i % 2
        ? callTool(app, token, 'list_forms', {})
        : request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${token}`),
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
        const batch = await Promise.all(
          Array.from({ length: 85 }, () => callTool(app, tokens[round].token, 'list_forms', {})),
        );
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

describe('the two budgets of one authenticated request', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  // Behind one trusted proxy, so that each test can call from addresses of its own.
  beforeAll(async () => {
    app = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '5', RATE_LIMIT_IP_PER_MIN: '3', TRUST_PROXY: '1' });
    ws = await createWorkspace(app);
  });
  afterAll(() => app.close());

  const from = (ip: string, token: string) => callTool(app, token, 'list_forms', {}, { 'X-Forwarded-For': ip });

  it("does not spend the credential's budget on requests the IP budget refuses", async () => {
    const { token } = await createToken(app, ws);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await from('198.51.100.1', token)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
    // From another address the credential has 5 - 3 = 2 requests left, not 5 - 6.
    const other = await from('198.51.100.2', token);
    expect(other.status).toBe(200);
    expect(other.headers['ratelimit']).toMatch(/^"ip";r=2;t=\d+, "cred";r=1;t=\d+$/);
    expect((await from('198.51.100.2', token)).status).toBe(200);
    expectError(await from('198.51.100.2', token), 429, 'rate_limited'); // the credential's 6th
  });

  it('lists both budgets on an authenticated answer, and the IP budget alone on an IP refusal', async () => {
    const { token } = await createToken(app, ws);
    const ok = await from('198.51.100.3', token);
    expect(ok.headers['ratelimit-policy']).toBe('"ip";q=3;w=60, "cred";q=5;w=60');
    await from('198.51.100.3', token);
    await from('198.51.100.3', token);
    const refused = await from('198.51.100.3', token);
    expectError(refused, 429, 'rate_limited');
    expect(refused.headers['ratelimit-policy']).toBe('"ip";q=3;w=60');
    expect(refused.body.error.message).toContain('client address');
  });

  it('counts the IP budget alone for a credential that is not valid, and refuses with 429 once it is spent', async () => {
    const bad = 'fw_not_a_real_token_at_all';
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await from('198.51.100.4', bad));
    expect(answers.map((r) => r.status)).toEqual([401, 401, 401, 429]);
    expect(answers[0].headers['ratelimit-policy']).toBe('"ip";q=3;w=60');
    expect(answers[2].headers['ratelimit-remaining']).toBe('0');
    expect(answers[3].headers['www-authenticate']).toBeUndefined();
    expect(Number(answers[3].headers['retry-after'])).toBeGreaterThan(0);
    expectError(answers[3], 429, 'rate_limited');
  });
});

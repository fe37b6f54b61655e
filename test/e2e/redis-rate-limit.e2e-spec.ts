import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { createToken, createWorkspace } from '../factories';
import { freePort, REDIS_URL, requireRedis, TcpRelay, waitUntil } from '../utils/cluster';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

/**
 * Budgets counted in Redis, reached through a relay the test can cut: shared by instances while
 * Redis answers, per instance (fail open, reported by /readyz) while it does not, shared again
 * once it is back.
 */
describe('rate limits in Redis', () => {
  let relay: TcpRelay;
  const apps: NestFastifyApplication[] = [];
  const instance = async (env: Record<string, string> = {}) => {
    const app = await createTestApp({ REDIS_URL: `redis://127.0.0.1:${relay.port}`, RATE_LIMIT_CREDENTIAL_PER_MIN: '5', ...env });
    apps.push(app);
    return app;
  };
  const ready = (app: NestFastifyApplication) => request(app.getHttpServer()).get('/readyz');

  beforeAll(async () => {
    await requireRedis();
    const { hostname, port } = new URL(REDIS_URL);
    relay = await TcpRelay.start({ host: hostname, port: Number(port || 6379) });
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await relay?.down();
  });

  it('shares one credential budget between two instances', async () => {
    const [one, two] = [await instance(), await instance()];
    const { token } = await createToken(one, await createWorkspace(one));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      statuses.push((await callTool(one, token, 'list_forms', {})).status);
      statuses.push((await callTool(two, token, 'list_forms', {})).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect((await ready(one)).body).toMatchObject({ status: 'ok', checks: { database: 'ok', redis: 'ok' }, rateLimits: 'shared' });
  });

  it('keeps serving on per-instance counters while Redis is unreachable, reports it as degraded with 200, and goes back to Redis when it returns', async () => {
    const app = await instance();
    const { token } = await createToken(app, await createWorkspace(app));
    const remaining = async () => {
      const res = await callTool(app, token, 'list_forms', {});
      return res.status === 200 ? Number(res.headers['ratelimit-remaining']) : res.status;
    };
    expect([await remaining(), await remaining()]).toEqual([4, 3]); // counted in Redis

    await relay.down();
    // A fresh window on this instance: 5 more, then refused (the limit still holds per instance).
    const during = [];
    for (let i = 0; i < 6; i++) during.push(await remaining());
    expect(during).toEqual([4, 3, 2, 1, 0, 429]);
    const degraded = await ready(app);
    expect(degraded.status).toBe(200);
    expect(degraded.body).toMatchObject({ status: 'degraded', checks: { database: 'ok', redis: 'unreachable' }, rateLimits: 'per instance' });
    expect(degraded.body.note).toMatch(/Redis has been unreachable since/);

    await relay.up();
    await waitUntil(async () => (await ready(app)).body.status === 'ok', 10_000, '/readyz reports Redis back');
    // Counted in Redis again, where the two hits from before the outage still are.
    expect(await remaining()).toBe(2);
  });

  it('starts while Redis is down, serving and reporting degraded', async () => {
    const nowhere = await freePort();
    const app = await createTestApp({ REDIS_URL: `redis://127.0.0.1:${nowhere}` });
    apps.push(app);
    const { token } = await createToken(app, await createWorkspace(app));
    const res = await callTool(app, token, 'list_forms', {});
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-limit']).toBeDefined();
    const readiness = await ready(app);
    expect(readiness.status).toBe(200);
    expect(readiness.body).toMatchObject({ status: 'degraded', checks: { redis: 'unreachable' } });
  });
});

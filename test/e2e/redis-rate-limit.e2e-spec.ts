import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { connect, Socket } from 'node:net';
import request from 'supertest';
import { createToken, createWorkspace } from '../factories';
import { freePort, randomLoopbackAddress, REDIS_URL, requireRedis, TcpRelay, waitUntil } from '../utils/cluster';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

/**
 * Redis's MONITOR on a connection of its own (ioredis's monitor() can lose track of its replies):
 * `onCommand` gets each command's client ("ip:port", or "lua" inside a script) and arguments.
 */
async function redisMonitor(onCommand: (source: string, args: string[]) => void): Promise<Socket> {
  const { hostname, port } = new URL(REDIS_URL);
  const socket = connect(Number(port || 6379), hostname);
  let buffered = '';
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.on('data', (chunk) => {
      buffered += chunk.toString('utf8');
      let end;
      while ((end = buffered.indexOf('\r\n')) >= 0) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (line === '+OK') resolve();
        const m = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/.exec(line);
        if (m)
          onCommand(
            m[1],
            [...m[2].matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((a) => a[1]),
          );
      }
    });
    socket.write('MONITOR\r\n');
  });
  return socket;
}

/**
 * Budgets counted in Redis, reached through a relay the test can cut: shared by instances while
 * Redis answers, per instance (fail open, reported by /readyz) while it does not, shared again
 * once it is back.
 */
describe('rate limits in Redis', () => {
  let relay: TcpRelay;
  const apps: NestFastifyApplication[] = [];
  const instance = async (env: Record<string, string> = {}) => {
    const app = await createTestApp({
      REDIS_URL: `redis://127.0.0.1:${relay.port}`,
      RATE_LIMIT_CREDENTIAL_PER_MIN: '5',
      ...env,
    });
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
    expect((await ready(one)).body).toMatchObject({
      status: 'ok',
      checks: { database: 'ok', redis: 'ok' },
      rateLimits: 'shared',
    });
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
    expect(degraded.body).toMatchObject({
      status: 'degraded',
      checks: { database: 'ok', redis: 'unreachable' },
      rateLimits: 'per instance',
    });
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

  it('counts both budgets of an authenticated request with one script call each, sent together, and an IP refusal spends no credential budget', async () => {
    const app = await instance({ TRUST_PROXY: '1', RATE_LIMIT_IP_PER_MIN: '3' });
    const { token } = await createToken(app, await createWorkspace(app));
    // Addresses of this run only (a budget's key outlives the test by up to a minute).
    const [ip, elsewhere] = [randomLoopbackAddress(), randomLoopbackAddress()];
    const call = () => callTool(app, token, 'list_forms', {}, { 'X-Forwarded-For': ip });
    await call(); // the first call also loads the scripts, and may verify the token
    const commands: Array<{ source: string; args: string[] }> = [];
    const monitor = await redisMonitor((source, args) => commands.push({ source, args }));
    try {
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await call()).status);
      await new Promise((resolve) => setTimeout(resolve, 200)); // the last commands reached the monitor
      expect(statuses).toEqual([200, 200, 429, 429]); // the IP's 3rd request was the last within its budget
      // Everything this instance's connection sent (found by its keys; MONITOR also shows the
      // commands the scripts run, from "lua"): per request, one script per budget, each on one key
      // (its own hash tag: a Redis Cluster slot), and for each IP refusal the credential's hit taken back.
      const ours = commands.filter((c) => c.source !== 'lua' && c.args.some((a) => a.includes(`rl:ip:${ip}`)));
      const sources = new Set(ours.map((c) => c.source));
      expect(sources.size).toBe(1);
      const sent = commands.filter((c) => sources.has(c.source));
      const hits = sent.filter((c) => c.args.length === 5);
      const refunds = sent.filter((c) => c.args.length === 4);
      expect(hits).toHaveLength(8);
      expect(refunds).toHaveLength(2);
      for (const c of sent) expect(c.args[0].toLowerCase()).toMatch(/^evalsha$|^eval$/);
      expect(hits.map((c) => c.args[3].replace(/credential:.*/, 'credential:…'))).toEqual(
        Array.from({ length: 4 }, () => [`formwork:{rl:ip:${ip}}`, 'formwork:{rl:credential:…']).flat(),
      );
      for (const c of refunds) expect(c.args[3]).toMatch(/^formwork:\{rl:credential:.*\}$/);
    } finally {
      monitor.destroy();
    }
    // The two IP refusals left the credential at 3 of 5 spent.
    const fromElsewhere = await callTool(app, token, 'list_forms', {}, { 'X-Forwarded-For': elsewhere });
    expect(fromElsewhere.status).toBe(200);
    expect(fromElsewhere.headers['ratelimit']).toMatch(/"cred";r=1;/); // 5 - (3 + this one)
  });
});

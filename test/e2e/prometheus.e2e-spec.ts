import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import {
  callToolAt,
  destroyAgents,
  ensureBuilt,
  freePort,
  httpRequest,
  Instance,
  REDIS_URL,
  requireRedis,
  sleep,
  waitUntil,
} from '../utils/cluster';
import { createTestApp } from '../utils/create-test-app';
import { isolatedDatabaseUrl, WebhookReceiver } from '../utils/webhooks';

/** Debian's prometheus, or a failure saying how to install it. */
function requirePrometheus(): string {
  for (const candidate of [process.env.TEST_PROMETHEUS, '/usr/bin/prometheus', '/usr/local/bin/prometheus']) {
    if (candidate && existsSync(candidate)) return candidate;
  }
  try {
    return execFileSync('sh', ['-c', 'command -v prometheus'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(
      'prometheus is not installed. This test scrapes the service with it: apt-get update && apt-get install -y prometheus (.ci/run does), or set TEST_PROMETHEUS to its path.',
    );
  }
}

/** A Prometheus server scraping `targets` every 500 ms, with its data in a temporary folder. */
class Prometheus {
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly port: number,
    readonly output: string[],
  ) {}

  static async start(binary: string, targets: string[]): Promise<Prometheus> {
    const dir = mkdtempSync(join(tmpdir(), 'formwork-prometheus-'));
    const config = join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global:',
        '  scrape_interval: 500ms',
        '  scrape_timeout: 400ms',
        'scrape_configs:',
        '  - job_name: formwork',
        '    static_configs:',
        `      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]`,
      ].join('\n'),
    );
    const port = await freePort();
    const output: string[] = [];
    const child = spawn(
      binary,
      [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout!.on('data', (c) => output.push(String(c)));
    child.stderr!.on('data', (c) => output.push(String(c)));
    const prometheus = new Prometheus(child, dir, port, output);
    try {
      await waitUntil(
        async () => (await httpRequest(port, '/-/ready').catch(() => ({ status: 0 }))).status === 200,
        30_000,
        'prometheus is ready',
      );
    } catch (err) {
      await prometheus.stop();
      throw new Error(`prometheus did not start:\n${output.join('')}`, { cause: err });
    }
    return prometheus;
  }

  /** An instant query's vector: each series' labels and value. */
  async query(promql: string): Promise<Array<{ metric: Record<string, string>; value: number }>> {
    const res = await httpRequest(this.port, `/api/v1/query?query=${encodeURIComponent(promql)}`);
    if (res.status !== 200 || res.json?.status !== 'success') throw new Error(`query failed: ${res.text}`);
    return (res.json.data.result as Array<{ metric: Record<string, string>; value: [number, string] }>).map((r) => ({
      metric: r.metric,
      value: Number(r.value[1]),
    }));
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.on('exit', resolve));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Two instances of the built service, each serving /metrics on a METRICS_PORT of its own, scraped
 * by a real Prometheus: the counts read back through its query API are exactly what was done.
 */
describe('Prometheus scraping two instances', () => {
  let setup: NestFastifyApplication;
  let isolated: { url: string; drop: () => Promise<void> };
  let ws: TestWorkspace;
  let token: string;
  let a: Instance;
  let b: Instance;
  let prometheus: Prometheus;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    const binary = requirePrometheus();
    await requireRedis();
    ensureBuilt();
    // A schema of its own: other suites' instances running meanwhile must not deliver this one's webhooks.
    isolated = await isolatedDatabaseUrl('prom');
    setup = await createTestApp({ WEBHOOKS_DELIVERY: 'false' }, isolated.url);
    ws = await createWorkspace(setup, 'pro');
    token = (await createToken(setup, ws, { role: 'admin' })).token;
    receiver = await WebhookReceiver.start();
    const metricsPorts = [await freePort(), await freePort()];
    const env = (metricsPort: number) => ({
      DATABASE_URL: isolated.url,
      REDIS_URL,
      NODE_ENV: 'production',
      BOOTSTRAP_DEMO: 'false',
      PUBLIC_URL: 'http://formwork.test',
      DATABASE_POOL_SIZE: '4',
      LOG_LEVEL: 'warn',
      METRICS_PORT: String(metricsPort),
      WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
      RATE_LIMIT_CREDENTIAL_PER_MIN: '100000',
      RATE_LIMIT_IP_PER_MIN: '100000',
    });
    [a, b] = await Promise.all([Instance.start('a', env(metricsPorts[0])), Instance.start('b', env(metricsPorts[1]))]);
    prometheus = await Prometheus.start(
      binary,
      metricsPorts.map((p) => `127.0.0.1:${p}`),
    );
  }, 120_000);

  afterAll(async () => {
    destroyAgents();
    await prometheus?.stop();
    await Promise.all([a?.stop(), b?.stop()]);
    await receiver?.down();
    await setup?.close();
    await isolated?.drop();
  }, 30_000);

  it('reads back tool calls per tool and code, page posts and a webhook delivery, exactly, across both', async () => {
    // Both targets up before anything is counted.
    await waitUntil(
      async () => (await prometheus.query('up == 1')).length === 2,
      30_000,
      'prometheus scrapes both instances',
    );
    const call = (at: Instance, tool: string, args: unknown) => callToolAt(at.port, token, tool, args);
    const made = await call(a, 'create_form', {
      title: 'Metrics',
      blocks: [{ type: 'short_text', title: 'Name' }],
    });
    expect(made.status).toBe(200);
    const { publicId } = made.json;
    const hook = await call(b, 'create_webhook', { url: receiver.url('/hook'), events: ['form.published'] });
    expect(hook.status).toBe(200);
    expect((await call(b, 'publish_form', { publicId })).status).toBe(200);
    for (const at of [a, a, a, b, b]) expect((await call(at, 'get_form', { publicId })).status).toBe(200);
    expect((await call(a, 'get_form', { publicId: 'nope' })).status).toBe(404);
    expect((await call(b, 'get_form', { nope: 1 })).status).toBe(400);
    expect((await call(b, 'no_such_tool', {})).status).toBe(404);
    // Page posts: two taken (one per instance), one refused (an unknown form).
    const blockId = made.json.blocks[0].id;
    for (const [at, id, status] of [
      [a, publicId, 200],
      [b, publicId, 200],
      [b, 'f_nope', 404],
    ] as const) {
      const posted = await postForm(at.port, `/f/${id}`, new URLSearchParams([[blockId, 'Ada']]).toString());
      expect(posted).toBe(status);
    }
    await waitUntil(async () => receiver.received.length === 1, 20_000, 'the webhook is delivered');

    // What Prometheus holds once its scrapes have caught up (a scrape every 500 ms), keyed by `by`'s labels.
    const settled = async (promql: string, by: string[], expected: Record<string, number>) => {
      const read = async () =>
        sortKeys(
          Object.fromEntries(
            (await prometheus.query(promql))
              .filter((r) => r.value > 0)
              .map((r) => [by.map((l) => r.metric[l]).join(' '), r.value]),
          ),
        );
      await waitUntil(
        async () => JSON.stringify(await read()) === JSON.stringify(sortKeys(expected)),
        20_000,
        `prometheus holds ${promql}`,
      ).catch(() => undefined);
      expect(await read()).toEqual(sortKeys(expected));
    };
    await settled('sum by (tool, code) (formwork_tool_calls_total{transport="rest"})', ['tool', 'code'], {
      'create_form ok': 1,
      'create_webhook ok': 1,
      'publish_form ok': 1,
      'get_form ok': 5,
      'get_form not_found': 1,
      'get_form invalid_arguments': 1,
      'unknown not_found': 1,
    });
    // Each instance's share, by its instance label.
    const byInstance = await prometheus.query('sum by (instance) (formwork_tool_calls_total{tool="get_form"})');
    expect(byInstance.map((r) => r.value).sort()).toEqual([3, 4]);
    await settled('sum by (status) (formwork_respondent_requests_total{method="POST"})', ['status'], {
      '200': 2,
      '404': 1,
    });
    await settled('sum by (outcome) (formwork_webhook_deliveries_total)', ['outcome'], { delivered: 1 });
    // The outbox is empty again, and the database pools are reported by both.
    expect((await prometheus.query('sum(formwork_webhook_outbox_pending)'))[0].value).toBe(0);
    expect(await prometheus.query('count(formwork_db_pool_connections{state="in_use"})')).toEqual([
      { metric: {}, value: 2 },
    ]);
  }, 120_000);
});

function sortKeys(o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).sort(([x], [y]) => x.localeCompare(y)));
}

/** Posts a urlencoded body (the respondent page's own encoding); the status. */
async function postForm(port: number, path: string, body: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body,
    redirect: 'manual',
  });
  await res.arrayBuffer();
  await sleep(0);
  return res.status;
}

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { callToolAt, destroyAgents, ensureBuilt, Instance, REDIS_URL, requireRedis, waitUntil } from '../utils/cluster';
import { createTestApp } from '../utils/create-test-app';
import { isolatedDatabaseUrl } from '../utils/webhooks';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: { stringValue?: string } }>;
  links?: Array<{ traceId: string; spanId: string }>;
}

/** A small HTTP server taking what it is sent: OTLP/HTTP JSON exports on /v1/traces, webhooks elsewhere. */
class Collector {
  private constructor(
    private readonly server: http.Server,
    readonly port: number,
    readonly spans: OtlpSpan[],
    readonly webhooks: Array<{ traceparent?: string; type: string }>,
  ) {}

  static async start(): Promise<Collector> {
    const spans: OtlpSpan[] = [];
    const webhooks: Array<{ traceparent?: string; type: string }> = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        if (req.url === '/v1/traces') {
          expect(req.headers['content-type']).toMatch(/^application\/json/);
          const exported = JSON.parse(body) as {
            resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
          };
          for (const r of exported.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans);
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
          return;
        }
        const traceparent = req.headers.traceparent;
        webhooks.push({
          traceparent: typeof traceparent === 'string' ? traceparent : undefined,
          type: (JSON.parse(body) as { type: string }).type,
        });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new Collector(server, (server.address() as AddressInfo).port, spans, webhooks);
  }

  inTrace(traceId: string): OtlpSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const attribute = (span: OtlpSpan, key: string) => span.attributes?.find((a) => a.key === key)?.value.stringValue;

/**
 * The built service with OTEL_EXPORTER_OTLP_ENDPOINT set exports its traces over OTLP/HTTP: one
 * tool call's trace holds its request, its tool, its SQL and its Redis call, under the traceparent
 * the caller sent; the webhook it queued is delivered in a span linked to it, which the receiver
 * is told of; its log lines name the trace.
 */
describe('OpenTelemetry traces over OTLP/HTTP', () => {
  let setup: NestFastifyApplication;
  let isolated: { url: string; drop: () => Promise<void> };
  let ws: TestWorkspace;
  let token: string;
  let collector: Collector;
  let receiver: Collector;
  let instance: Instance;

  beforeAll(async () => {
    await requireRedis();
    ensureBuilt();
    // A schema of its own: other suites' instances running meanwhile must not deliver this one's webhooks.
    isolated = await isolatedDatabaseUrl('otlp');
    setup = await createTestApp({ WEBHOOKS_DELIVERY: 'false' }, isolated.url);
    ws = await createWorkspace(setup, 'pro');
    token = (await createToken(setup, ws, { role: 'admin' })).token;
    collector = await Collector.start();
    receiver = await Collector.start();
    instance = await Instance.start('traced', {
      DATABASE_URL: isolated.url,
      REDIS_URL,
      NODE_ENV: 'production',
      BOOTSTRAP_DEMO: 'false',
      PUBLIC_URL: 'http://formwork.test',
      DATABASE_POOL_SIZE: '4',
      LOG_LEVEL: 'info',
      WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
  }, 120_000);

  afterAll(async () => {
    destroyAgents();
    await instance?.stop();
    await collector?.stop();
    await receiver?.stop();
    await setup?.close();
    await isolated?.drop();
  }, 30_000);

  it('exports a tool call with its SQL and Redis spans under the caller’s traceparent, and links the webhook it queued', async () => {
    const made = await callToolAt(instance.port, token, 'create_form', {
      title: 'Traced',
      blocks: [{ type: 'short_text', title: 'Name' }],
    });
    expect(made.status).toBe(200);
    const { publicId } = made.json;
    const hook = await callToolAt(instance.port, token, 'create_webhook', {
      url: `http://127.0.0.1:${receiver.port}/hook`,
      events: ['form.published'],
    });
    expect(hook.status).toBe(200);

    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const published = await callToolAt(
      instance.port,
      token,
      'publish_form',
      { publicId },
      { headers: { traceparent: `00-${traceId}-${callerSpanId}-01`, 'X-Request-Id': `traced-${traceId}` } },
    );
    expect(published.status).toBe(200);

    await waitUntil(
      async () => collector.spans.some((s) => s.name === 'webhook deliver') && receiver.webhooks.length === 1,
      20_000,
      'the delivery is made and its span exported',
    );
    await waitUntil(
      async () => collector.inTrace(traceId).some((s) => s.name === 'tool publish_form'),
      20_000,
      'the request is exported',
    );
    const spans = collector.inTrace(traceId);
    // The request's span continues the caller's trace, named by its route.
    const server = spans.find((s) => s.parentSpanId === callerSpanId);
    expect(server).toMatchObject({ name: 'POST /api/v1/tools/:name', kind: 2 });
    expect(attribute(server!, 'tool.name')).toBe('publish_form');
    // The tool's span under it, and the tool's SQL under that.
    const tool = spans.find((s) => s.name === 'tool publish_form');
    expect(tool?.parentSpanId).toBe(server!.spanId);
    const under = (parent: OtlpSpan): OtlpSpan[] =>
      spans.filter((s) => s.parentSpanId === parent.spanId).flatMap((s) => [s, ...under(s)]);
    const sql = under(tool!).filter((s) => attribute(s, 'db.system') === 'postgresql' || /^pg\./.test(s.name));
    expect(sql.length).toBeGreaterThan(0);
    // Its Redis call (the credential's budget), in the same trace.
    const redis = spans.filter((s) => attribute(s, 'db.system') === 'redis' || /^(evalsha|eval)\b/i.test(s.name));
    expect(redis.length).toBeGreaterThan(0);

    // The delivery: a trace of its own, linked to the request that queued it; the receiver got its traceparent.
    const deliver = collector.spans.find((s) => s.name === 'webhook deliver')!;
    expect(deliver.links?.map((l) => l.traceId)).toEqual([traceId]);
    expect(deliver.links?.[0].spanId).toBe(tool!.spanId);
    expect(receiver.webhooks).toEqual([
      { type: 'form.published', traceparent: `00-${deliver.traceId}-${deliver.spanId}-01` },
    ]);

    // Log lines name the request and the trace.
    const access = instance.lines
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.requestId === `traced-${traceId}` && l.msg === 'request');
    expect(access).toMatchObject({ trace_id: traceId, status: 200 });
    expect(access!.span_id).toMatch(/^[0-9a-f]{16}$/);
  }, 60_000);

  it('links a response.created delivery, written by the batched response store, to the request that made the response', async () => {
    const made = await callToolAt(instance.port, token, 'create_form', {
      title: 'Traced responses',
      blocks: [{ type: 'short_text', title: 'Name' }],
    });
    expect(made.status).toBe(200);
    const { publicId } = made.json;
    const blockId = made.json.blocks[0].id;
    const hook = await callToolAt(instance.port, token, 'create_webhook', {
      url: `http://127.0.0.1:${receiver.port}/created`,
      events: ['response.created'],
    });
    expect(hook.status).toBe(200);

    const traceId = randomBytes(16).toString('hex');
    const created = await callToolAt(
      instance.port,
      token,
      'create_response',
      { publicId, answers: { [blockId]: 'Ada' } },
      { headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` } },
    );
    expect(created.status).toBe(200);

    const linked = () => collector.spans.find((s) => s.name === 'webhook deliver' && s.links?.[0]?.traceId === traceId);
    await waitUntil(
      async () => linked() !== undefined && collector.inTrace(traceId).some((s) => s.name === 'tool create_response'),
      20_000,
      'the response.created delivery and the request are exported',
    );
    const tool = collector.inTrace(traceId).find((s) => s.name === 'tool create_response')!;
    const deliver = linked()!;
    expect(deliver.links).toEqual([expect.objectContaining({ traceId, spanId: tool.spanId })]);
    expect(receiver.webhooks).toContainEqual({
      type: 'response.created',
      traceparent: `00-${deliver.traceId}-${deliver.spanId}-01`,
    });
  }, 60_000);

  it('links a response.partial_saved delivery to the request that saved the partial', async () => {
    const made = await callToolAt(instance.port, token, 'create_form', {
      title: 'Traced partials',
      partialResponses: true,
      blocks: [
        { ref: 'name', type: 'short_text', title: 'Name' },
        { type: 'page_break', title: 'More' },
        { ref: 'role', type: 'short_text', title: 'Role' },
      ],
    });
    expect(made.status).toBe(200);
    const { publicId } = made.json;
    expect((await callToolAt(instance.port, token, 'publish_form', { publicId })).status).toBe(200);
    const hook = await callToolAt(instance.port, token, 'create_webhook', {
      url: `http://127.0.0.1:${receiver.port}/partial`,
      events: ['response.partial_saved'],
    });
    expect(hook.status).toBe(200);

    const traceId = randomBytes(16).toString('hex');
    const saved = await callToolAt(
      instance.port,
      token,
      'create_response',
      { publicId, answers: { name: 'Ada' }, partial: true },
      { headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` } },
    );
    expect(saved.status).toBe(200);

    const linked = () => collector.spans.find((s) => s.name === 'webhook deliver' && s.links?.[0]?.traceId === traceId);
    await waitUntil(
      async () => linked() !== undefined && collector.inTrace(traceId).some((s) => s.name === 'tool create_response'),
      20_000,
      'the response.partial_saved delivery and the request are exported',
    );
    const tool = collector.inTrace(traceId).find((s) => s.name === 'tool create_response')!;
    expect(linked()!.links).toEqual([expect.objectContaining({ traceId, spanId: tool.spanId })]);
    expect(receiver.webhooks.map((w) => w.type)).toContain('response.partial_saved');
  }, 60_000);
});

/**
 * OpenTelemetry traces, off unless OTEL_EXPORTER_OTLP_ENDPOINT (or its _TRACES_ variant) is set;
 * the SDK reads the standard OTEL_* variables itself (service name, headers, sampler, batch delay).
 * Spans: the server span of each request (named by its route; made by http-observer.ts), `tool <name>` around a tool's
 * run (REST and MCP), PostgreSQL (pg) and Redis (ioredis) calls under them, `storage <op>`, and
 * `webhook deliver`, linked to the request that queued the delivery (its traceparent is stored
 * with the outbox row) and sending its own traceparent to the receiver.
 */
import {
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

const tracer = trace.getTracer('formwork');

/** Set when the SDK runs in this thread. */
let running: { shutdown(): Promise<void> } | undefined;

/**
 * Starts the SDK when an OTLP endpoint is configured. Call it before pg and ioredis are first
 * required (main.ts and the delivery thread import start-tracing.ts first): their instrumentation
 * patches the modules as they load.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): void {
  if (running || !(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) return;
  // Traces only: metrics are Prometheus' (/metrics), logs are stdout's.
  env.OTEL_METRICS_EXPORTER ??= 'none';
  env.OTEL_LOGS_EXPORTER ??= 'none';
  // The batch span processor's defaults (a 2,048-span queue sent 512 at a time) make a busy
  // instance export several times a second and drop spans past the queue: bigger batches, fewer
  // exports (each is a JSON body and an HTTP request). The standard variables still win.
  env.OTEL_BSP_MAX_QUEUE_SIZE ??= '16384';
  env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE ??= '4096';
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { OTLPTraceExporter } =
    require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { PgInstrumentation } =
    require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { IORedisInstrumentation } =
    require('@opentelemetry/instrumentation-ioredis') as typeof import('@opentelemetry/instrumentation-ioredis');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? 'formwork',
    traceExporter: new OTLPTraceExporter(),
    instrumentations: [
      // Only inside a request or a delivery: the background loops' polling would be noise.
      // (The pool's connect spans add nothing a query's span does not show, at a span a request.)
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
      // The command's name only: by default EVAL/EVALSHA record every argument (the rate limit's
      // keys, which name credentials, and a script's whole text), built into a string per call.
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
    ],
  });
  sdk.start();
  running = sdk;
}

/** Flushes and stops the SDK (at shutdown), if it runs. */
export async function stopTracing(): Promise<void> {
  await running?.shutdown().catch(() => undefined);
  running = undefined;
}

/** Whether the SDK runs in this thread. */
export function tracingOn(): boolean {
  return running !== undefined;
}

/** Runs `fn` in a span named `name`, child of the active one (a root with `root`); a failure marks the span. */
export function inSpan<T>(
  name: string,
  fn: () => Promise<T>,
  options: { kind?: SpanKind; links?: Link[]; root?: boolean } = {},
): Promise<T> {
  if (!running) return fn();
  const parent = options.root ? ROOT_CONTEXT : context.active();
  return tracer.startActiveSpan(name, { kind: options.kind, links: options.links }, parent, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** A request's server span, child of the caller's `traceparent` header when it sends one, and the context it is active in. */
export function startServerSpan(method: string, headers: Record<string, unknown>): { span: Span; context: Context } {
  const parent = propagation.extract(ROOT_CONTEXT, headers);
  const span = tracer.startSpan(
    method,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

/** Runs `fn` with `active` as the active context. */
export function inContext<T>(active: Context, fn: () => T): T {
  return context.with(active, fn);
}

/** The W3C traceparent of the active span (to store with an outbox row), or null without one. */
export function currentTraceparent(): string | null {
  if (!running || !trace.getActiveSpan()) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/**
 * Runs a webhook delivery's send in a `webhook deliver` span, a new trace linked to the request
 * that queued it (`queuedBy`, its stored traceparent); `headers` gets the span's traceparent.
 */
export function inDeliverySpan<T>(
  queuedBy: string | null | undefined,
  headers: Record<string, string>,
  send: () => Promise<T>,
): Promise<T> {
  if (!running) return send();
  const queued = queuedBy && trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent: queuedBy }));
  const links = queued ? [{ context: queued }] : undefined;
  return inSpan(
    'webhook deliver',
    () => {
      propagation.inject(context.active(), headers);
      return send();
    },
    { kind: SpanKind.CLIENT, links, root: true },
  );
}

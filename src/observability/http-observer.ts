/**
 * What every HTTP request adds to the metrics and to its trace, and GET /metrics: on METRICS_PORT
 * when set (a server of its own, which the public load balancer does not reach), else on the public
 * port to a bearer of METRICS_TOKEN, else refused.
 */
import { type Span, SpanStatusCode } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createServer, type Server } from 'node:http';
import { timingSafeEqual, createHash } from 'node:crypto';
import { ApiError } from '../common/errors/api-error';
import { sendError } from '../common/errors/api-exception.filter';
import type { AppConfig } from '../config/config';
import { metrics, registry } from './metrics';
import { inContext, startServerSpan, tracingOn } from './tracing';

const TOOL_ROUTE = '/api/v1/tools/:name';
/** The respondent's form: its GET (the page) and its POST (a page posted). */
const RESPONDENT_ROUTE = '/f/:publicId';
const UNTRACED = /^\/(?:healthz|readyz|metrics)(?:[/?]|$)/;

/**
 * Records each answered request: its route's latency; a tool call's tool, transport "rest" and
 * code (`isTool` bounds the tool label: any other name is "unknown"); the respondent page's. With
 * tracing on, the request's server span is named by its route (and `tool.name`).
 */
export function observeRequests(fastify: FastifyInstance, isTool: (name: string) => boolean): void {
  const spans = new WeakMap<FastifyRequest, Span>();
  if (tracingOn()) {
    // The request's server span, made here rather than by the SDK's node:http instrumentation
    // (which binds every listener of each request and answer to its context: half the cost of
    // tracing in bench/metrics.js); the caller's W3C traceparent is its parent.
    fastify.addHook('onRequest', (req, _reply, done) => {
      // Probes and scrapes are not requests anyone traces.
      if (UNTRACED.test(req.url)) return done();
      const { span, context: active } = startServerSpan(req.method, req.headers);
      spans.set(req, span);
      inContext(active, done);
    });
  }
  fastify.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    const seconds = reply.elapsedTime / 1000;
    const status = String(reply.statusCode);
    metrics.httpSeconds.observe({ route, method: req.method, status }, seconds);
    let tool: string | undefined;
    if (route === TOOL_ROUTE) {
      const name = String((req.params as { name?: unknown }).name);
      tool = isTool(name) ? name : 'unknown';
      metrics.toolCalls.inc({
        tool,
        transport: 'rest',
        code: reply.errorCode ?? (reply.statusCode < 400 ? 'ok' : `status_${status}`),
      });
      metrics.toolCallSeconds.observe({ tool, transport: 'rest' }, seconds);
    } else if (route === RESPONDENT_ROUTE) {
      metrics.respondentRequests.inc({ method: req.method, status });
      metrics.respondentSeconds.observe({ method: req.method }, seconds);
    }
    const span = spans.get(req);
    if (span) {
      span.updateName(`${req.method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': reply.statusCode });
      if (tool) span.setAttribute('tool.name', tool);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    done();
  });
}

/** An MCP tools/call, counted when it is answered: "ok", or the code of the refusal it answers with. */
export async function observeMcpToolCall<T extends { isError?: boolean; content?: unknown }>(
  tool: string,
  call: () => Promise<T>,
): Promise<T> {
  const end = metrics.toolCallSeconds.startTimer({ tool, transport: 'mcp' });
  let code = 'internal_error';
  try {
    const result = await call();
    code = result.isError ? refusalCode(result.content) : 'ok';
    return result;
  } catch (err) {
    // A JSON-RPC error: an unknown tool (the only one callTool throws).
    code = tool === 'unknown' ? 'not_found' : code;
    throw err;
  } finally {
    end();
    metrics.toolCalls.inc({ tool, transport: 'mcp', code });
  }
}

/** The code of an MCP refusal: its text is the REST error envelope. */
function refusalCode(content: unknown): string {
  const text = Array.isArray(content) ? (content[0] as { text?: unknown } | undefined)?.text : undefined;
  try {
    const code = (JSON.parse(String(text)) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' && /^[a-z_]{1,40}$/.test(code) ? code : 'internal_error';
  } catch {
    return 'internal_error';
  }
}

/** The Prometheus text of this instance's metrics. */
async function exposition(): Promise<{ type: string; body: string }> {
  return { type: registry.contentType, body: await registry.metrics() };
}

/**
 * GET /metrics on the public port: with METRICS_PORT set it is not there (404, like any unknown
 * path); else only to `Authorization: Bearer $METRICS_TOKEN`; with neither set, refused with what to set.
 */
export function publicMetricsRoute(fastify: FastifyInstance, config: Pick<AppConfig, 'metrics'>): void {
  if (config.metrics.port !== undefined) return;
  const expected = config.metrics.token ? digest(config.metrics.token) : undefined;
  fastify.get('/metrics', async (req: FastifyRequest, reply: FastifyReply) => {
    if (!expected) {
      return sendError(
        reply,
        new ApiError('not_found', {
          message: 'Metrics are not served on this port.',
          hint: 'Set METRICS_PORT to serve GET /metrics on a port of its own, or METRICS_TOKEN to serve it here to that bearer.',
        }),
        req.id,
      );
    }
    const sent = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!sent || !timingSafeEqual(digest(sent), expected)) {
      reply.header('WWW-Authenticate', 'Bearer realm="metrics"');
      return sendError(
        reply,
        new ApiError('unauthorized', {
          message: 'GET /metrics needs the metrics token.',
          hint: 'Send Authorization: Bearer <METRICS_TOKEN>.',
        }),
        req.id,
      );
    }
    const { type, body } = await exposition();
    return reply.type(type).send(body);
  });
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** GET /metrics on METRICS_PORT (every interface, or HOST's): a server of its own, nothing else on it. */
export function startMetricsServer(port: number, host?: string): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'application/json; charset=utf-8' });
      return res.end(
        JSON.stringify({
          error: { code: 'not_found', message: 'Only GET /metrics is served here.', hint: 'GET /metrics.' },
        }),
      );
    }
    exposition().then(
      ({ type, body }) => res.writeHead(200, { 'Content-Type': type }).end(body),
      () =>
        res.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8' }).end(
          JSON.stringify({
            error: { code: 'internal_error', message: 'The metrics could not be read.', hint: 'Try again.' },
          }),
        ),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

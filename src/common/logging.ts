/** The service's logger (pino): JSON lines with the request id, secrets redacted, readable in development. */
import type { LoggerService } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import pino, { DestinationStream, Level, Logger, LoggerOptions } from 'pino';
import { currentRequestContext } from './request-context';

/** The service's log: pino, one JSON object per line (readable lines in development). */
export type Log = Logger;

/**
 * Values that never reach a log line, under these keys at the top level and up to two levels down
 * (a request's headers, a body's fields). Nothing logs them on purpose; this is the safety net.
 */
const SECRET_KEYS = [
  'authorization',
  'cookie',
  '["set-cookie"]',
  'password',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'client_secret',
  'code_verifier',
  'csrf',
  'resume',
];
/** OAuth authorization codes: `code` at the top level or in a query or body (an error's `code` stays readable). */
const CODE_PATHS = ['code', 'query.code', 'body.code', '*.query.code', '*.body.code'];
export const REDACTED_PATHS = [
  ...SECRET_KEYS.flatMap((key) => [
    key,
    `*${key.startsWith('[') ? '' : '.'}${key}`,
    `*.*${key.startsWith('[') ? '' : '.'}${key}`,
  ]),
  ...CODE_PATHS,
];

/**
 * The log of the service, configured from LOG_LEVEL and NODE_ENV:
 *  - production: one JSON object per line on stdout, `{"level":"info","time":"<ISO-8601>","pid",
 *    "hostname","context"?,"requestId"?,...,"msg":"..."}`: standard level names, `msg` always a
 *    string, and the id of the request being served on every line written while serving it;
 *  - development: the same entries as one readable line each (see prettyLine).
 * `destination` replaces stdout (tests).
 */
export function createLog(config: { logLevel: Level; production: boolean }, destination?: DestinationStream): Log {
  const shared: LoggerOptions = {
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    // The request id of the request being served, unless the line names one itself (the access
    // line); the trace and span ids of the active span when tracing is on (src/observability).
    mixin: (fields: object) => {
      const context = currentRequestContext();
      const ids = context && !('requestId' in fields) ? { requestId: context.requestId } : {};
      const span = trace.getActiveSpan()?.spanContext();
      return span ? { ...ids, trace_id: span.traceId, span_id: span.spanId } : ids;
    },
  };
  // Asynchronous writes to stdout (pino flushes them when the process exits).
  const stream = destination ?? (config.production ? pino.destination({ dest: 1, sync: false }) : prettyStream());
  // The redaction walks all its paths (most of them wildcards) on every line: about 58 µs a line,
  // most of the cost of the access line (bench/README.md, issue 28). A line whose fields are plain
  // values under keys that are not secret holds nothing a path names, so this twin without
  // redaction writes it, with the same options, to the same stream. Levels are checked before.
  const unredacted = pino({ ...shared, level: 'trace' }, stream);
  const log: Log = pino(
    {
      ...shared,
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      hooks: {
        // `msg` is always a string, whatever a caller (a library, Fastify) passes.
        logMethod(args: unknown[], method, level) {
          const [first, second] = args;
          let call: unknown[];
          if (typeof first === 'string') call = args;
          else if (first !== null && typeof first === 'object') {
            if (typeof second === 'string') call = args;
            else {
              const msg =
                first instanceof Error
                  ? first.message
                  : typeof (first as { msg?: unknown }).msg === 'string'
                    ? (first as { msg: string }).msg
                    : '';
              call = [first, msg];
            }
          } else call = [String(first)];
          const at = typeof call[0] === 'string' ? 0 : 1;
          call[at] = withoutQuerySecrets(call[at] as string);
          // Only the logger itself: a child's bindings would not be in the twin's line.
          if (this === log && (typeof call[0] === 'string' || nothingToRedact(call[0]))) {
            const label = this.levels.labels[level] as Level;
            return (unredacted[label] as (...a: unknown[]) => void)(...call);
          }
          return method.apply(this, call as [string]);
        },
      },
    },
    stream,
  );
  return log;
}

/** A secret's value in a URL's query (`?resume=`, `&code=`...), as a message may quote a URL. */
const QUERY_SECRET = new RegExp(
  `([?&](?:${SECRET_KEYS.filter((k) => /^\w+$/.test(k)).join('|')}|code)=)[^&#\\s"']*`,
  'gi',
);

/** The message with the values of secret query parameters of any URL it quotes replaced. */
export function withoutQuerySecrets(msg: string): string {
  return msg.includes('=') ? msg.replace(QUERY_SECRET, '$1[redacted]') : msg;
}

/** Top-level keys that REDACTED_PATHS names (`["set-cookie"]` is the key set-cookie). */
const SECRET_TOP_KEYS = new Set([...SECRET_KEYS.map((k) => k.replace(/^\["|"\]$/g, '')), 'code']);

/**
 * True for a plain object whose values are all primitives and whose keys are none of the secret
 * ones: every redacted path is a secret key at the top level or a key inside a nested object, so
 * none can match. Anything else (an Error, a nested object, an array) goes through the redaction.
 */
function nothingToRedact(fields: unknown): boolean {
  if (fields === null || typeof fields !== 'object' || Object.getPrototypeOf(fields) !== Object.prototype) return false;
  for (const key in fields) {
    if (SECRET_TOP_KEYS.has(key)) return false;
    const value = (fields as Record<string, unknown>)[key];
    if (value !== null && (typeof value === 'object' || typeof value === 'function')) return false;
  }
  return true;
}

/** Nest's start-up lines (one per module and route): debug, useful only when debugging. */
const BOOT_CONTEXTS = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestFactory', 'NestApplication']);

/**
 * Nest's logger on top of the log: `new Logger('Context').log(...)` anywhere in the service writes
 * one entry with `context`. A message may be a string, an Error, or an object whose `msg` is the
 * message and whose other members become fields of the entry.
 */
export class NestLog implements LoggerService {
  constructor(private readonly pino: Log) {}

  log(message: unknown, ...params: unknown[]) {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]) {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]) {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]) {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]) {
    this.write('debug', message, params);
  }
  fatal(message: unknown, ...params: unknown[]) {
    this.write('fatal', message, params);
  }

  /** Nest passes the context last, and error() a stack (or undefined) before it. */
  private write(level: Level, message: unknown, params: unknown[]) {
    const rest = [...params];
    const context = typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
    const stack = typeof rest[0] === 'string' ? rest[0] : undefined;
    if (level === 'info' && context && BOOT_CONTEXTS.has(context)) level = 'debug';
    if (!this.pino.isLevelEnabled(level)) return;
    const fields: Record<string, unknown> = context ? { context } : {};
    let msg: string;
    if (message instanceof Error) {
      msg = message.message;
      fields.err = message;
    } else if (message !== null && typeof message === 'object') {
      const { msg: text, ...other } = message as { msg?: unknown };
      Object.assign(fields, other);
      msg = typeof text === 'string' ? text : '';
    } else {
      msg = String(message);
    }
    if (stack) fields.stack = stack;
    this.pino[level](fields, msg);
  }
}

/** Development output: each entry as one readable line on stdout. */
function prettyStream(): DestinationStream {
  return { write: (line: string) => void process.stdout.write(prettyLine(line)) };
}

const SHOWN_APART = new Set(['level', 'time', 'pid', 'hostname', 'context', 'msg', 'requestId', 'stack', 'err']);

/**
 * `12:00:00.123 INFO  [Http] request method=POST path=/api/v1/tools/list_forms status=200 ms=3.1 (req 5f0c...)`;
 * a stack, when there is one, follows on its own lines.
 */
export function prettyLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 23) : '';
  const level = String(entry.level ?? '')
    .toUpperCase()
    .padEnd(5);
  const context = entry.context ? `[${String(entry.context)}] ` : '';
  const fields = Object.entries(entry)
    .filter(([key]) => !SHOWN_APART.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  const requestId = entry.requestId ? ` (req ${String(entry.requestId)})` : '';
  const err = entry.err as { stack?: string } | undefined;
  const stack = typeof entry.stack === 'string' ? entry.stack : err?.stack;
  return `${time} ${level} ${context}${[String(entry.msg ?? ''), ...fields].join(' ')}${requestId}\n${stack ? `${stack.replace(/^/gm, '    ')}\n` : ''}`;
}

/**
 * Database failures that mean "retry later" rather than a bug: the database cannot be reached, or
 * a bounded wait on it ran out (see database/data-source.ts). The error filter answers them 503
 * service_unavailable with Retry-After; anything else stays a 500, including the few SQLSTATEs of
 * those classes that a retry cannot mend (NOT_AN_OUTAGE).
 */
import { ApiError } from './api-error';

export type DatabaseUnavailableKind = 'unreachable' | 'timeout' | 'busy';

/** Seconds a client should wait before retrying, by kind. */
const RETRY_AFTER_S: Record<DatabaseUnavailableKind, number> = { unreachable: 5, timeout: 2, busy: 2 };

/**
 * SQLSTATEs of a database that is away or a wait that ran out, and what they mean to a client.
 * Class 08 (connection exception) and 53 (insufficient resources: too many connections, disk
 * full, out of memory) are matched by their class below.
 */
const SQLSTATES: Record<string, DatabaseUnavailableKind> = {
  '57014': 'timeout', // query_canceled: statement_timeout (or a cancel request)
  '55P03': 'busy', // lock_not_available: lock_timeout
  '25P03': 'timeout', // idle_in_transaction_session_timeout ended the session
  '57P01': 'unreachable', // admin_shutdown: the server is stopping, or pg_terminate_backend
  '57P02': 'unreachable', // crash_shutdown
  '57P03': 'unreachable', // cannot_connect_now: starting up or in recovery
  '57P05': 'timeout', // idle_session_timeout
  '58P01': 'unreachable', // undefined_file (a server-side I/O failure)
};

/**
 * SQLSTATEs in those classes that are a bug, not an outage: retrying sends the same statement and
 * fails the same way, so they stay a 500 (logged with their stack) rather than a 503 that clients
 * retry forever and operators read as the database being down.
 */
const NOT_AN_OUTAGE = new Set([
  '08P01', // protocol_violation: e.g. a statement with more than 65,535 bind parameters
  '53400', // configuration_limit_exceeded: e.g. one statement's temporary files past temp_file_limit
]);

/** Network errors of the driver's socket (Node.js error codes). */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * What node-postgres and its pool say when the server is away or silent: the pool's connect
 * timeout, the client's read timeout (query_timeout), a connection cut mid-query, and a client
 * reused after such a cut.
 */
const DRIVER_MESSAGES: Array<[RegExp, DatabaseUnavailableKind]> = [
  [/^timeout exceeded when trying to connect$/i, 'unreachable'],
  [/^Connection terminated due to connection timeout$/i, 'unreachable'],
  [/^Connection terminated( unexpectedly)?$/i, 'unreachable'],
  [/^Query read timeout$/i, 'timeout'],
  [/is not queryable$/i, 'unreachable'],
  [/^Cannot use a pool after calling end on the pool$/i, 'unreachable'],
];

/** The kind of database unavailability `error` is, or undefined for any other failure (a bug stays a 500). */
export function databaseUnavailableKind(error: unknown): DatabaseUnavailableKind | undefined {
  // The HTTP layer's own errors (a client that went away mid-body: ECONNRESET with statusCode 400).
  if (typeof (error as { statusCode?: unknown } | null)?.statusCode === 'number') return undefined;
  // TypeORM's QueryFailedError copies the driver error's fields (code) and keeps it as driverError.
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string') {
      if (NOT_AN_OUTAGE.has(code)) return undefined;
      if (SQLSTATES[code]) return SQLSTATES[code];
      if (/^(08|53)[0-9A-Z]{3}$/.test(code)) return 'unreachable';
      if (SOCKET_CODES.has(code)) return 'unreachable';
    }
    if (typeof message === 'string') {
      const hit = DRIVER_MESSAGES.find(([pattern]) => pattern.test(message));
      if (hit) return hit[1];
    }
    e = (e as { driverError?: unknown; cause?: unknown }).driverError ?? (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The SQLSTATE or socket code of a database failure, for the log (never its message: it may hold SQL). */
export function databaseErrorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { driverError?: unknown; cause?: unknown }).driverError ?? (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * The 503 for a database failure: its message says what happened in a client's terms, never the
 * SQL, the parameters or the database's address.
 */
export function databaseUnavailable(kind: DatabaseUnavailableKind): ApiError {
  const retryAfter = RETRY_AFTER_S[kind];
  const headers = { 'Retry-After': String(retryAfter) };
  switch (kind) {
    case 'busy':
      return new ApiError('service_unavailable', {
        message: 'What this request needs is held by another request that has not finished.',
        hint: `Retry after ${retryAfter} seconds (Retry-After).`,
        headers,
      });
    case 'timeout':
      return new ApiError('service_unavailable', {
        message: 'The database did not answer in time.',
        hint: `Retry after ${retryAfter} seconds (Retry-After). A write may or may not have been saved: retry it with the same Idempotency-Key to be sure it is stored once.`,
        headers,
      });
    default:
      return new ApiError('service_unavailable', {
        message: 'The database cannot be reached right now.',
        hint: `Retry after ${retryAfter} seconds (Retry-After); GET /readyz says when this instance is ready again.`,
        headers,
      });
  }
}

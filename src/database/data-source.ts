import { join } from 'node:path';
import { DataSourceOptions } from 'typeorm';
import type { DatabaseTimeouts } from '../config/config';
import { SHARED_SESSION_MARK } from './embedded-postgres';
import { transactionPooledClient } from './pooler';
import { QueryLogger } from './query-logger';

/**
 * How long the client waits for an answer beyond the statement timeout before it gives up on its
 * own: PostgreSQL cancels a slow statement itself, but a frozen server or a cut-off network never
 * answers, and only a timer in this process bounds that wait.
 */
export const CLIENT_TIMEOUT_MARGIN_MS = 2000;

/**
 * The bounds of a DataSource's sessions. `request` (the service's pool): every wait bounded by the
 * configured timeouts, so a request answers 503 instead of hanging. `maintenance` (migrations, the
 * CLI, tests' setup): no statement or lock timeout, since a migration may legitimately rewrite a
 * big table or wait for a lock; a session left idle in a transaction is still ended, and
 * connecting is still bounded.
 */
export type SessionBounds =
  { kind: 'request'; timeouts: DatabaseTimeouts; pooler?: 'none' | 'transaction' } | { kind: 'maintenance' };

export const MAINTENANCE: SessionBounds = { kind: 'maintenance' };

/** Defaults of the maintenance profile (the request profile takes the configured ones). */
const MAINTENANCE_CONNECT_MS = 10_000;
const MAINTENANCE_IDLE_IN_TRANSACTION_MS = 60_000;
export const MAINTENANCE_OPTIONS = '-c statement_timeout=0 -c lock_timeout=0';

/**
 * The database layer: the options of the one DataSource used by the app, the CLI and the
 * migration tooling, the transaction idiom (transaction.ts), prepared statements, the migration
 * runner and the embedded PostgreSQL. It imports no feature. The schema comes only from
 * migrations/ (never synchronize).
 *
 * Each table is described once in code besides its migration: by its entity, registered by the
 * module that owns it (TypeOrmModule.forFeature, gathered by autoLoadEntities), and the rows a
 * repository returns are typed from that entity (Pick, Omit), never by a hand-written row type.
 */
export function dataSourceOptions(
  url: string,
  poolSize = 10,
  logErrors = true,
  bounds: SessionBounds = MAINTENANCE,
): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    // dist/src/database -> dist/migrations (built), src/database -> migrations (ts-jest)
    migrations: [join(__dirname, '..', '..', 'migrations', '*.{ts,js}')],
    migrationsTableName: 'schema_migrations',
    // uuid keys default to gen_random_uuid(), built into PostgreSQL 13+: no extension to install
    // (the embedded PostgreSQL has none), so TypeORM must not try.
    uuidExtension: 'pgcrypto',
    installExtensions: false,
    synchronize: false,
    migrationsRun: false,
    // Failed queries go to the service's logger without their parameters (see QueryLogger).
    logging: logErrors ? ['error', 'warn'] : false,
    logger: logErrors ? new QueryLogger() : undefined,
    maxQueryExecutionTime: 2000,
    extra: { max: poolSize, ...poolBounds(url, bounds) },
  };
}

/**
 * node-postgres pool options that bound every wait: the pool's connect timeout (a free connection
 * or a new one), the session settings PostgreSQL enforces (sent in the startup message, so they
 * cost no round trip), a client-side read timeout for a server that does not answer at all, and
 * TCP keepalives, without which a server notices a vanished client only after about two hours.
 */
export function poolBounds(url: string, bounds: SessionBounds): Record<string, unknown> {
  const request = bounds.kind === 'request' ? bounds.timeouts : undefined;
  const keepAlive = { keepAlive: true, keepAliveInitialDelayMillis: 10_000 };
  const connectionTimeoutMillis = request?.connectMs ?? MAINTENANCE_CONNECT_MS;
  // Where the read timer starts only after the statement timeout has had its chance (a slow
  // server cancels its statement and says so: 57014, a clearer failure than the client's own).
  const query_timeout = request ? request.statementMs + CLIENT_TIMEOUT_MARGIN_MS : undefined;
  if (url.includes(SHARED_SESSION_MARK)) {
    // The embedded PostgreSQL (PGlite) is one session shared by every connection, in this
    // process: it ignores the startup message's settings (and has no timers to enforce a statement
    // or lock timeout), and an idle-in-transaction timeout, were it applied, would end the one
    // session everyone shares. A lock wait cannot happen there either: whole transactions queue
    // (embedded-postgres.ts). Only the client-side bounds apply.
    return { ...keepAlive, connectionTimeoutMillis, ...(query_timeout ? { query_timeout } : {}) };
  }
  if (bounds.kind === 'request' && bounds.pooler === 'transaction') {
    // A transaction pooler (DATABASE_POOLER=transaction) takes no session settings: its server
    // sessions start with the same bounds as the role's defaults (setPoolerBounds, pooler.ts).
    return { ...keepAlive, connectionTimeoutMillis, query_timeout, Client: transactionPooledClient() };
  }
  return {
    ...keepAlive,
    connectionTimeoutMillis,
    idle_in_transaction_session_timeout: request?.idleInTransactionMs ?? MAINTENANCE_IDLE_IN_TRANSACTION_MS,
    // Maintenance says "none" itself: behind a pooler the role's defaults are the request bounds.
    // (node-postgres sends no zero timeout, so they go in `options`.)
    ...(request
      ? { statement_timeout: request.statementMs, lock_timeout: request.lockMs, query_timeout }
      : { options: MAINTENANCE_OPTIONS }),
  };
}

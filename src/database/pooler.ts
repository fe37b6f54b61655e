import { Client, type QueryConfig } from 'pg';
import type { DatabaseTimeouts } from '../config/config';

const POOLED = Symbol('formwork.transactionPooled');
/** Serialises the instances that set the role's bounds at once (concurrent ALTER ROLE fails). */
const BOUNDS_LOCK_ID = 7_140_214;

type PoolerBounds = Pick<DatabaseTimeouts, 'statementMs' | 'lockMs' | 'idleInTransactionMs'>;

/** The bounds as PostgreSQL settings, in ms (their unit in pg_settings and in what ALTER ROLE stores). */
function boundSettings(bounds: PoolerBounds): [string, number][] {
  return [
    ['statement_timeout', Math.floor(bounds.statementMs)],
    ['lock_timeout', Math.floor(bounds.lockMs)],
    ['idle_in_transaction_session_timeout', Math.floor(bounds.idleInTransactionMs)],
  ];
}

/**
 * Behind a transaction pooler (DATABASE_POOLER=transaction) the request bounds are the defaults of
 * the role in its database (ALTER ROLE ... IN DATABASE ... SET), which every server session the
 * pooler opens starts with: PgBouncer 1.18 refuses them as startup parameters, and SET LOCAL would
 * need a transaction around every lone statement (two more round trips each). Set through the
 * direct URL (the same role and database as the pooler's server sessions), under an advisory lock,
 * and only when they differ; the CLI and every instance do it when they open the database.
 * Sessions that need other bounds set their own: maintenance ones at startup (poolBounds), a long
 * transaction with SET LOCAL (allowLongStatements).
 *
 * A server session the pooler opened before a change keeps the bounds it started with until the
 * pooler replaces it: checked on one pooled session, and said at warn (docs/operating.md).
 */
export async function setPoolerBounds(directUrl: string, poolerUrl: string, bounds: PoolerBounds): Promise<void> {
  const wanted = boundSettings(bounds);
  // No startup setting: without DATABASE_DIRECT_URL this is the pooler too, which refuses them.
  const direct = new Client({ connectionString: directUrl, connectionTimeoutMillis: 10_000, query_timeout: 30_000 });
  await direct.connect();
  try {
    await direct.query('BEGIN');
    await direct.query('SELECT pg_advisory_xact_lock($1)', [BOUNDS_LOCK_ID]);
    const { rows } = await direct.query<{ setconfig: string[] | null }>(
      `SELECT s.setconfig FROM pg_db_role_setting s
        WHERE s.setrole = (SELECT oid FROM pg_roles WHERE rolname = current_user)
          AND s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    const stored = new Set(rows[0]?.setconfig ?? []);
    const missing = wanted.filter(([name, ms]) => !stored.has(`${name}=${ms}`));
    if (missing.length) {
      // ALTER ROLE takes no parameters: the names are our own, the values integers.
      const sets = missing.map(
        ([name, ms]) =>
          `EXECUTE format('ALTER ROLE %I IN DATABASE %I SET ${name} = ${ms}', current_user, current_database());`,
      );
      await direct.query(`DO $$ BEGIN ${sets.join(' ')} END $$`);
    }
    await direct.query('COMMIT');
  } finally {
    await direct.end().catch(() => undefined);
  }

  const pooled = new Client({ connectionString: poolerUrl, connectionTimeoutMillis: 10_000 });
  await pooled.connect();
  try {
    const { rows } = await pooled.query<{ name: string; setting: string }>(
      `SELECT name, setting FROM pg_settings WHERE name = ANY($1)`,
      [wanted.map(([name]) => name)],
    );
    const seen = new Map(rows.map((r) => [r.name, Number(r.setting)]));
    const off = wanted.filter(([name, ms]) => seen.get(name) !== ms);
    if (off.length) {
      // Plain stderr, as start-up's other lines before the logger runs (and the CLI's stdout stays its answer).
      process.stderr.write(
        `formwork: warning: a session through the pooler runs with other bounds (${off.map(([n]) => `${n} ${seen.get(n)} ms`).join(', ')}): ` +
          'its server sessions opened before the bounds were set keep theirs until replaced (PgBouncer: RECONNECT on its ' +
          'admin console, or a restart), or DATABASE_DIRECT_URL is another role or database than the pooler connects as\n',
      );
    }
  } finally {
    await pooled.end().catch(() => undefined);
  }
}

/**
 * The node-postgres Client for DATABASE_POOLER=transaction (PgBouncer, RDS Proxy in transaction
 * mode): consecutive transactions of one client may run on different server sessions, so nothing
 * may live in the session. The bounds are the role's defaults (setPoolerBounds), so statements and
 * transactions are sent as they are; only a query's name is dropped: no named prepared statements
 * (see also prepared.ts). Streams and cursors (submittables) pass untouched.
 */
export function transactionPooledClient(): typeof Client {
  class TransactionPooledClient extends Client {
    static readonly [POOLED] = true;

    // One signature for the promise and callback forms node-postgres offers.
    query(config: unknown, values?: unknown, callback?: unknown): never {
      const named = typeof config === 'object' && config !== null && 'name' in config && !('submit' in config);
      const query = named ? { ...(config as QueryConfig), name: undefined } : config;
      return (super.query as (...a: unknown[]) => never)(query, values, callback);
    }
  }
  return TransactionPooledClient;
}

/** Whether node-postgres options hold the transaction-pooled client. */
export function isTransactionPooled(extra: unknown): boolean {
  const client = (extra as { Client?: Record<symbol, unknown> } | undefined)?.Client;
  return Boolean(client?.[POOLED]);
}

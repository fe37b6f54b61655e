import { Client, type QueryConfig } from 'pg';

/** The session bounds a transaction carries itself behind a transaction pooler (see poolBounds). */
export interface TransactionBounds {
  statementMs?: number;
  lockMs?: number;
  idleInTransactionMs: number;
}

const POOLED = Symbol('formwork.transactionPooled');
const STARTS = /^\s*(START\s+TRANSACTION|BEGIN)\b/i;
const ENDS = /^\s*(COMMIT|ROLLBACK|END|ABORT)\s*;?\s*$/i;

/**
 * The node-postgres Client for DATABASE_POOLER=transaction (PgBouncer, RDS Proxy in transaction
 * mode): consecutive transactions of one client may run on different server sessions, so nothing
 * may live in the session.
 *  - The bounds PostgreSQL enforces (statement, lock and idle-in-transaction timeouts) cannot be
 *    startup parameters (PgBouncer 1.18 refuses them): each transaction sets them with SET LOCAL,
 *    sent with its BEGIN in one simple query (no extra round trip). A statement outside a
 *    transaction is run in one of its own, so it is bounded too (two more round trips).
 *  - No named prepared statements: a query's name is dropped (see also prepared.ts).
 *  - Streams and cursors (submittables) pass as they are: they run inside the caller's transaction.
 */
export function transactionPooledClient(bounds: TransactionBounds): typeof Client {
  const settings = [
    bounds.statementMs !== undefined ? `SET LOCAL statement_timeout = ${Math.floor(bounds.statementMs)}` : '',
    bounds.lockMs !== undefined ? `SET LOCAL lock_timeout = ${Math.floor(bounds.lockMs)}` : '',
    `SET LOCAL idle_in_transaction_session_timeout = ${Math.floor(bounds.idleInTransactionMs)}`,
  ].filter(Boolean);
  const begin = ['START TRANSACTION', ...settings].join('; ');

  class TransactionPooledClient extends Client {
    static readonly [POOLED] = true;
    private inTransaction = false;

    // One signature for the promise and callback forms node-postgres offers.
    query(config: unknown, values?: unknown, callback?: unknown): never {
      const submittable = typeof (config as { submit?: unknown })?.submit === 'function';
      if (submittable) return (super.query as (...a: unknown[]) => never)(config, values, callback);
      if (typeof values === 'function') [callback, values] = [values, undefined];
      const done = this.run(config as string | QueryConfig, values as unknown[] | undefined);
      if (typeof callback !== 'function') return done as never;
      done.then(
        (r) => (callback as (e: unknown, r?: unknown) => void)(null, r),
        (e) => (callback as (e: unknown) => void)(e),
      );
      return undefined as never;
    }

    private async run(config: string | QueryConfig, values: unknown[] | undefined): Promise<unknown> {
      const send = (q: string | QueryConfig, v?: unknown[]) =>
        (super.query as (q: unknown, v?: unknown) => Promise<unknown>)(q, v);
      const text = typeof config === 'string' ? config : config.text;
      const query = typeof config === 'string' ? config : { ...config, name: undefined };
      if (STARTS.test(text)) {
        const result = await send(/^\s*START TRANSACTION\s*$/i.test(text) ? begin : query, values);
        this.inTransaction = true;
        return result;
      }
      if (ENDS.test(text)) {
        this.inTransaction = false;
        return send(query, values);
      }
      if (this.inTransaction) return send(query, values);
      await send(begin);
      try {
        const result = await send(query, values);
        await send('COMMIT');
        return result;
      } catch (err) {
        await send('ROLLBACK').catch(() => undefined);
        throw err;
      }
    }
  }
  return TransactionPooledClient;
}

/** Whether node-postgres options hold the transaction-pooled client. */
export function isTransactionPooled(extra: unknown): boolean {
  const client = (extra as { Client?: Record<symbol, unknown> } | undefined)?.Client;
  return Boolean(client?.[POOLED]);
}

import type { EntityManager, QueryRunner } from 'typeorm';
import { CLIENT_TIMEOUT_MARGIN_MS } from './data-source';

/** What a path that legitimately runs long statements allows them (deleting a big form, a sequencing backlog). */
export const LONG_STATEMENT_MS = 10 * 60_000;

interface PgClientParams {
  connectionParameters?: { query_timeout?: number };
}

/**
 * Raises the statement timeout for the rest of the transaction `tx` (SET LOCAL: it ends with the
 * transaction) and, with it, the client-side read timer of its connection (see poolBounds), which
 * is put back when the connection returns to the pool. For paths whose statements grow with a
 * form's size, where the request paths' default (DATABASE_STATEMENT_TIMEOUT_MS) would make a big
 * form impossible to delete.
 */
export async function allowLongStatements(tx: EntityManager, ms = LONG_STATEMENT_MS): Promise<void> {
  const runner = tx.queryRunner;
  // Outside a transaction each statement is its own: the default bounds them (SET LOCAL would not last).
  if (!runner?.isTransactionActive) return;
  await tx.query(`SET LOCAL statement_timeout = ${Math.floor(ms)}`);
  const params = (runner as QueryRunner & { databaseConnection?: PgClientParams }).databaseConnection
    ?.connectionParameters;
  const before = params?.query_timeout;
  if (!params || !before) return; // no client-side timer on this connection
  params.query_timeout = Math.max(before, ms + CLIENT_TIMEOUT_MARGIN_MS);
  const release = runner.release.bind(runner);
  runner.release = () => {
    params.query_timeout = before;
    runner.release = release;
    return release();
  };
}

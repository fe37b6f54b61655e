import { AsyncLocalStorage } from 'node:async_hooks';
import { DataSource, DataSourceOptions, EntityManager } from 'typeorm';

/**
 * A transaction owns its connection. While work runs inside `inTransaction`, every query of that
 * work goes through the transaction's manager: `currentManager(db)` hands it out, and a query that
 * would take a second connection from the pool instead is refused (`guardPooledQueries`).
 *
 * Why refuse rather than let it run: on PostgreSQL a stray pooled query only reads outside the
 * transaction (and holds a second connection while the first waits); on the embedded database
 * every connection shares one session, which the open transaction holds, so the stray query waits
 * for the transaction and the transaction waits for it: the whole service freezes. Refusing it
 * makes the mistake fail at once, in every test, on both databases.
 */
interface Ambient {
  manager: EntityManager;
  open: boolean;
}

const ambient = new AsyncLocalStorage<Ambient>();

export class PooledQueryInTransactionError extends Error {
  constructor() {
    super(
      'A query asked the pool for a second connection while a transaction is open in the same request: ' +
        'use currentManager(db) (or the tx passed to inTransaction) for every query made inside a transaction.',
    );
    this.name = 'PooledQueryInTransactionError';
  }
}

/**
 * Runs a write's work in one transaction. A caller that already holds a transaction for the same
 * request (the idempotency step claims its key in one) has the work join it: the key, the write and
 * its stored result then commit or roll back together, for the price of one commit.
 */
export function inTransaction<T>(db: DataSource, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  const outer = ambient.getStore();
  if (outer?.open) return work(outer.manager);
  return db.transaction(async (tx) => {
    const store: Ambient = { manager: tx, open: true };
    try {
      return await ambient.run(store, () => work(tx));
    } finally {
      // Work started inside that outlives the transaction (a timer, a fire-and-forget write) gets
      // the pool, as it would have outside.
      store.open = false;
    }
  });
}

/** The manager a query must use now: the open transaction's, or the pool's when none is open. */
export function currentManager(db: DataSource): EntityManager {
  const outer = ambient.getStore();
  return outer?.open ? outer.manager : db.manager;
}

/** The open transaction's manager, or undefined when none is open (work may then share the pool). */
export function openTransaction(): EntityManager | undefined {
  const outer = ambient.getStore();
  return outer?.open ? outer.manager : undefined;
}

/**
 * Runs `fn` as if no transaction were open: for work that must not belong to the caller's
 * transaction and is not awaited by it (a last-used time written in the background). Its queries
 * take pool connections, which on the embedded database wait until the transaction ends.
 */
export function outsideTransaction<T>(fn: () => T): T {
  return ambient.exit(fn);
}

/**
 * Makes `db` refuse to hand out a pool connection while a transaction is open in the caller's
 * async context (see above). Installed on every DataSource the service opens.
 */
export function guardPooledQueries(db: DataSource): DataSource {
  const driver = db.driver as unknown as { obtainMasterConnection: () => Promise<unknown> };
  const obtain = driver.obtainMasterConnection.bind(driver);
  driver.obtainMasterConnection = () =>
    ambient.getStore()?.open ? Promise.reject(new PooledQueryInTransactionError()) : obtain();
  return db;
}

/** The DataSource factory of the app and the CLI (TypeOrmModule's dataSourceFactory): guarded, then connected. */
export async function openGuardedDataSource(options?: DataSourceOptions): Promise<DataSource> {
  if (!options) throw new Error('openGuardedDataSource needs the DataSource options');
  return guardPooledQueries(new DataSource(options)).initialize();
}

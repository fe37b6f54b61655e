import { AsyncLocalStorage } from 'node:async_hooks';
import { DataSource, EntityManager } from 'typeorm';

interface Ambient {
  manager: EntityManager;
  open: boolean;
}

const ambient = new AsyncLocalStorage<Ambient>();

/**
 * Runs a write's work in one transaction. Services call this instead of `db.transaction` so that
 * a caller that already holds a transaction for the same request (the idempotency step claims its
 * key in it) can have the write join that transaction: the key, the write and its stored result
 * then commit or roll back together, for the price of one commit.
 */
export function inTransaction<T>(db: DataSource, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  const outer = ambient.getStore();
  return outer?.open ? work(outer.manager) : db.transaction(work);
}

/**
 * Runs `fn` with `manager` (a transaction the caller opened and will commit or roll back) as the
 * one that inTransaction joins. Work started by `fn` that outlives it (a timer, a fire-and-forget
 * query) gets a transaction of its own instead.
 */
export async function withAmbientTransaction<T>(manager: EntityManager, fn: () => Promise<T>): Promise<T> {
  const store: Ambient = { manager, open: true };
  try {
    return await ambient.run(store, fn);
  } finally {
    store.open = false;
  }
}

/** The transaction of the request under way (see inTransaction), or the pool: for a write that is one statement. */
export function ambientManager(db: DataSource): EntityManager {
  const outer = ambient.getStore();
  return outer?.open ? outer.manager : db.manager;
}

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import {
  currentManager,
  inTransaction,
  outsideTransaction,
  PooledQueryInTransactionError,
} from '../../src/database/transaction';
import { createTestApp } from '../utils/create-test-app';

/**
 * A transaction owns its connection (src/database/transaction.ts): inside inTransaction every
 * query goes through the transaction's manager, and one that asks the pool for a second
 * connection is refused at once. On the embedded database (one shared session) such a query
 * froze the service; here it fails on either database, so no call site can bring it back.
 */
describe('a transaction owns its connection', () => {
  let app: NestFastifyApplication;
  let db: DataSource;

  beforeAll(async () => {
    app = await createTestApp();
    db = app.get(DataSource);
  });
  afterAll(() => app.close());

  it('refuses a pooled query made inside a transaction, and rolls the transaction back', async () => {
    const key = `tx-${Date.now()}`;
    const attempt = inTransaction(db, async (tx) => {
      await tx.query(`INSERT INTO settings_once (key) VALUES ($1)`, [key]);
      await db.query('SELECT 1'); // a stray query on the DataSource
    });
    await expect(attempt).rejects.toBeInstanceOf(PooledQueryInTransactionError);
    expect(await db.query(`SELECT key FROM settings_once WHERE key = $1`, [key])).toEqual([]);
  });

  it("hands out the transaction's manager inside it (its own writes are seen), the pool outside", async () => {
    const key = `tx-${Date.now()}-seen`;
    await inTransaction(db, async (tx) => {
      await tx.query(`INSERT INTO settings_once (key) VALUES ($1)`, [key]);
      expect(currentManager(db)).toBe(tx);
      // A service deeper down, taking no manager argument, joins the same transaction.
      const nested = await inTransaction(db, async (inner) => {
        expect(inner).toBe(tx);
        return currentManager(db).query(`SELECT key FROM settings_once WHERE key = $1`, [key]);
      });
      expect(nested).toEqual([{ key }]);
    });
    expect(currentManager(db)).toBe(db.manager);
    expect(await db.query(`SELECT key FROM settings_once WHERE key = $1`, [key])).toEqual([{ key }]);
  });

  it('lets work that is not part of the transaction take the pool once the transaction ends', async () => {
    let background: Promise<unknown> | undefined;
    await inTransaction(db, async () => {
      // Fire-and-forget work (a last-used time) is declared outside the transaction.
      background = outsideTransaction(() => currentManager(db).query('SELECT 1 AS one'));
    });
    await expect(background).resolves.toEqual([{ one: 1 }]);
    // A timer started inside that fires after the commit gets the pool too.
    let late: Promise<unknown> | undefined;
    await inTransaction(db, async () => {
      late = new Promise((resolve) => setTimeout(resolve, 10)).then(() => currentManager(db).query('SELECT 2 AS two'));
    });
    await expect(late).resolves.toEqual([{ two: 2 }]);
  });
});

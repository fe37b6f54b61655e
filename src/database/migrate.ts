import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { MAINTENANCE_OPTIONS } from './data-source';

/** Any fixed number: the advisory lock that serialises migration runs across instances. */
const MIGRATION_LOCK_ID = 7_140_213;

/**
 * Runs pending migrations while holding a PostgreSQL advisory lock, so instances that start at
 * the same moment run them one after the other (the second finds nothing left to do).
 * The lock lives on its own connection, since TypeORM picks pool connections as it likes.
 */
export async function runMigrations(dataSource: DataSource, url: string): Promise<string[]> {
  // No lock timeout: it waits for another run's migrations however long they take.
  const lock = new Client({ connectionString: url, options: MAINTENANCE_OPTIONS });
  await lock.connect();
  try {
    // Said again in the session: an `options` in the URL replaces the startup one, and a role's
    // defaults in the database (behind a pooler: the request bounds) would time the wait out.
    await lock.query('SET lock_timeout = 0; SET statement_timeout = 0');
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    const ran = await dataSource.runMigrations({ transaction: 'each' });
    return ran.map((m) => m.name);
  } finally {
    await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await lock.end();
  }
}

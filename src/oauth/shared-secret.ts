/** Keys every instance must share, stored once in the database. */
import type { DataSource } from 'typeorm';
import { currentManager } from '../database/transaction';

/**
 * A key every instance must share (signing keys, cookie keys, the CSRF key): read it, or make it
 * if this is the first instance to need it (two first instances race safely: one insert wins).
 */
export async function sharedSecret<T>(db: DataSource, name: string, make: () => T): Promise<T> {
  await currentManager(db).query(
    'INSERT INTO oauth_secrets (name, value) VALUES ($1, $2::jsonb) ON CONFLICT (name) DO NOTHING',
    [name, JSON.stringify(make())],
  );
  const [row] = await currentManager(db).query('SELECT value FROM oauth_secrets WHERE name = $1', [name]);
  return row.value as T;
}

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/config';
import { dataSourceOptions } from '../../src/database/data-source';
import { openDatabase } from '../../src/database/database-url';
import { runMigrations } from '../../src/database/migrate';
import { testDatabaseUrl } from '../utils/create-test-app';

const onServer = process.env.FORMWORK_TEST_DATABASE_KIND === 'server';

describe('migrations when instances start together', () => {
  it(
    onServer
      ? 'run once on an empty database when two instances start at the same moment (advisory lock)'
      : 'leave the embedded database intact when two runs overlap (embedded PostgreSQL: one shared session)',
    async () => {
      const admin = new Client({ connectionString: testDatabaseUrl() });
      await admin.connect();
      // On a server: an empty schema of our own stands in for a new database.
      const schema = onServer ? `mig_${Date.now().toString(36)}` : 'public';
      if (onServer) await admin.query(`CREATE SCHEMA ${schema}`);
      const url = onServer ? withSearchPath(testDatabaseUrl(), schema) : testDatabaseUrl();
      const a = await new DataSource(dataSourceOptions(url, 2, false)).initialize();
      const b = await new DataSource(dataSourceOptions(url, 2, false)).initialize();
      try {
        const [ranA, ranB] = await Promise.all([runMigrations(a, url), runMigrations(b, url)]);
        const all = a.migrations.map((m) => m.name).sort();
        // One ran them all (on the empty schema); the other, waiting on the lock, found nothing left.
        expect([...ranA, ...ranB].sort()).toEqual(onServer ? all : []);
        expect(Math.min(ranA.length, ranB.length)).toBe(0);
        const rows = await admin.query(`SELECT name FROM ${schema}.schema_migrations ORDER BY name`);
        expect(rows.rows.map((r) => r.name).sort()).toEqual(all);
        const tables = await admin.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, [
          schema,
        ]);
        expect(tables.rows.map((r) => r.table_name)).toEqual(
          expect.arrayContaining(['forms', 'responses', 'api_tokens', 'audit_events']),
        );
      } finally {
        await a.destroy();
        await b.destroy();
        if (onServer) await admin.query(`DROP SCHEMA ${schema} CASCADE`);
        await admin.end();
      }
    },
  );

  it('makes a second process use the embedded database through its owner instead of opening its files', async () => {
    // A live owner (this process) has written its address into the data directory.
    const dir = mkdtempSync(join(tmpdir(), 'formwork-data-'));
    writeFileSync(join(dir, 'embedded.json'), JSON.stringify({ pid: process.pid, url: testDatabaseUrl() }));
    const db = await openDatabase(loadConfig({ DATA_DIR: dir, NODE_ENV: 'test' }));
    expect(db).toMatchObject({ url: testDatabaseUrl(), embedded: true });
    await db.close();
  });
});

function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

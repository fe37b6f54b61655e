import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source';
import { runMigrations } from '../../src/database/migrate';
import { testDatabaseUrl } from '../utils/create-test-app';
import { ensureBuilt, Instance } from '../utils/cluster';

/**
 * What `npm start` does on a DATABASE_URL database, as the built service (node dist/src/main.js):
 * each case gets an empty schema of its own in the run's database, named by search_path.
 */
describe('start-up on a DATABASE_URL database', () => {
  let admin: Client;
  const schemas: string[] = [];

  beforeAll(async () => {
    ensureBuilt();
    admin = new Client({ connectionString: testDatabaseUrl() });
    await admin.connect();
  });
  afterAll(async () => {
    for (const s of schemas) await admin.query(`DROP SCHEMA ${s} CASCADE`);
    await admin.end();
  });

  async function emptySchema(): Promise<string> {
    const schema = `start_${Date.now().toString(36)}_${schemas.length}`;
    await admin.query(`CREATE SCHEMA ${schema}`);
    schemas.push(schema);
    const u = new URL(testDatabaseUrl());
    u.searchParams.set('options', `-c search_path=${schema}`);
    return u.toString();
  }

  async function migrated(): Promise<{ url: string; schema: string }> {
    const url = await emptySchema();
    const ds = await new DataSource(dataSourceOptions(url, 1, false)).initialize();
    await runMigrations(ds, url);
    await ds.destroy();
    return { url, schema: schemas[schemas.length - 1] };
  }

  const env = (url: string, extra: Record<string, string> = {}) => ({
    DATABASE_URL: url,
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    ...extra,
  });
  const workspaces = async (schema: string) =>
    (await admin.query(`SELECT count(*)::int AS n FROM ${schema}.workspaces`)).rows[0].n as number;

  it('stops with the "migrations have not run" line on an empty database, before touching a table', async () => {
    const url = await emptySchema();
    const failure = await Instance.start('empty', env(url)).then(
      async (i) => {
        await i.stop();
        return '';
      },
      (err: Error) => err.message,
    );
    expect(failure).toContain('the database has migrations that have not run');
    expect(failure).toContain('cli -- migrate');
    expect(failure).not.toMatch(/relation .* does not exist/);
  });

  it('stops with one configuration line, no stack trace, on a malformed DATABASE_URL', async () => {
    const failure = await Instance.start('malformed', env('postgres://a:b%zz@127.0.0.1/db')).then(
      async (i) => {
        await i.stop();
        return '';
      },
      (err: Error) => err.message,
    );
    expect(failure).toContain('configuration error: DATABASE_URL is not a valid PostgreSQL URL');
    expect(failure).not.toMatch(/\n\s+at /);
  });

  it('creates no demo workspace and prints no token by default', async () => {
    const { url, schema } = await migrated();
    const instance = await Instance.start('no-demo', env(url));
    // Exit 0 on SIGTERM means its handler was installed, which happens after the demo step.
    expect(await instance.stop()).toBe(0);
    expect(instance.lines.join('\n')).not.toMatch(/fw_[A-Za-z0-9]{20,}/);
    expect(await workspaces(schema)).toBe(0);
  });

  it('creates the demo and prints its token when BOOTSTRAP_DEMO=true says so', async () => {
    const { url, schema } = await migrated();
    const instance = await Instance.start('demo', env(url, { BOOTSTRAP_DEMO: 'true' }));
    try {
      // The demo is made right after the server listens: wait for the printed token.
      const until = Date.now() + 10_000;
      while (!instance.lines.some((l) => /token: fw_/.test(l)) && Date.now() < until)
        await new Promise((r) => setTimeout(r, 100));
      expect(instance.lines.join('\n')).toMatch(/token: fw_[A-Za-z0-9]{20,}/);
      // A DATABASE_URL database may be shared: no known password for the demo owner is made or printed.
      expect(instance.lines.join('\n')).not.toMatch(/password:/);
      expect(await workspaces(schema)).toBe(1);
    } finally {
      expect(await instance.stop()).toBe(0);
    }
  });

  it('never creates the demo in production, even with BOOTSTRAP_DEMO=true', async () => {
    const { url, schema } = await migrated();
    const instance = await Instance.start('production', env(url, { NODE_ENV: 'production', BOOTSTRAP_DEMO: 'true' }));
    expect(await instance.stop()).toBe(0);
    expect(instance.lines.join('\n')).not.toMatch(/fw_[A-Za-z0-9]{20,}/);
    expect(await workspaces(schema)).toBe(0);
  });
});

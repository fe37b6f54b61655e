import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres';
import { runMigrations } from '../../src/database/migrate';

/**
 * Gives the run its own database: a fresh one on the PostgreSQL at TEST_DATABASE_SERVER
 * (default: this machine's, 127.0.0.1:5432), or the embedded PostgreSQL when none answers or
 * TEST_DATABASE=embedded asks for it (npm run test:embedded: the quick start's default database,
 * one session shared by every connection). Migrations are applied, never synchronize. Workers
 * read the URL from FORMWORK_TEST_DATABASE_URL.
 */
export default async function globalSetup() {
  const server = process.env.TEST_DATABASE_SERVER ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `formwork_test_${Date.now()}_${process.pid}`;
  let url: string;
  if (process.env.TEST_DATABASE !== 'embedded' && (await answers(server))) {
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const u = new URL(server);
    u.pathname = `/${name}`;
    url = u.toString();
    (globalThis as Record<string, unknown>).__formworkTeardown = async () => {
      const c = new Client({ connectionString: server });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    };
    process.env.FORMWORK_TEST_DATABASE_KIND = 'server';
    process.stdout.write(`\n[tests] PostgreSQL at ${u.host}, fresh database ${name}\n`);
  } else {
    const embedded = await startEmbeddedPostgres(undefined);
    url = embedded.url;
    (globalThis as Record<string, unknown>).__formworkTeardown = () => embedded.stop();
    process.env.FORMWORK_TEST_DATABASE_KIND = 'embedded';
    process.stdout.write(
      process.env.TEST_DATABASE === 'embedded'
        ? `\n[tests] TEST_DATABASE=embedded: using the embedded PostgreSQL (PGlite)\n`
        : `\n[tests] no PostgreSQL answered at ${new URL(server).host}: using the embedded PostgreSQL (PGlite)\n`,
    );
  }
  const ds = await new DataSource(dataSourceOptions(url, 1)).initialize();
  await runMigrations(ds, url);
  await ds.destroy();
  process.env.FORMWORK_TEST_DATABASE_URL = url;
}

async function answers(url: string): Promise<boolean> {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

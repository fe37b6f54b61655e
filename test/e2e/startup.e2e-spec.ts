import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source';
import { runMigrations } from '../../src/database/migrate';
import { testDatabaseUrl } from '../utils/create-test-app';
import { ensureBuilt, httpRequest, Instance } from '../utils/cluster';

/**
 * The addresses a TCP port is listened on, as the kernel lists them (/proc/net/tcp and tcp6, state
 * 0A = LISTEN): '0.0.0.0', '::', '127.0.0.1', '::1' or another address in hex.
 */
function listeningOn(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const names: Record<string, string> = {
    '00000000': '0.0.0.0',
    '0100007F': '127.0.0.1',
    '00000000000000000000000000000000': '::',
    '00000000000000000000000001000000': '::1',
  };
  const found = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state !== '0A' || !local?.endsWith(`:${hexPort}`)) continue;
      const address = local.slice(0, -5);
      found.add(names[address] ?? address);
    }
  }
  return [...found].sort();
}

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
    // No password printed: it listens on every interface (IPv6 and IPv4 through ::, or 0.0.0.0).
    expect(listeningOn(instance.port)).toEqual([expect.stringMatching(/^(::|0\.0\.0\.0)$/)]);
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

  it('listens on the one address HOST names, and says where it listens', async () => {
    const { url } = await migrated();
    const instance = await Instance.start('host', env(url, { HOST: '127.0.0.1', LOG_LEVEL: 'info' }));
    try {
      expect(listeningOn(instance.port)).toEqual(['127.0.0.1']);
      expect(instance.lines.join('\n')).toMatch(/Formwork listening on .*127\.0\.0\.1 \(HOST\)/);
    } finally {
      expect(await instance.stop()).toBe(0);
    }
  });

  it('on a first embedded start, which prints the demo password, listens on 127.0.0.1 and ::1 only, and says so; /favicon.ico answers 200', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'formwork-loopback-'));
    const instance = await Instance.start(
      'loopback',
      { DATA_DIR: dir, NODE_ENV: 'development', LOG_LEVEL: 'info' },
      90_000,
    );
    try {
      const until = Date.now() + 30_000;
      while (!instance.lines.some((l) => /password: \S+/.test(l)) && Date.now() < until)
        await new Promise((r) => setTimeout(r, 50));
      const out = instance.lines.join('\n');
      expect(out).toMatch(/password: \S+ \(works once: signing in asks for a new password\)/);
      // The kernel's list: nothing but loopback (::1 where the machine has IPv6).
      const addresses = listeningOn(instance.port);
      expect(addresses).toContain('127.0.0.1');
      expect(addresses.every((a) => a === '127.0.0.1' || a === '::1')).toBe(true);
      expect(out).toMatch(/Listening on 127\.0\.0\.1( and ::1)? only \(this machine\), since this password is printed/);
      expect(out).toMatch(/Formwork listening on .*127\.0\.0\.1( and ::1)? only/);

      // Browsers ask every page's origin for /favicon.ico: it answers, and the access log says 200, not 404.
      const icon = await httpRequest(instance.port, '/favicon.ico');
      expect(icon.status).toBe(200);
      const logged = () => instance.lines.filter((l) => / path=\/favicon\.ico /.test(l));
      const seen = Date.now() + 5_000;
      while (logged().length === 0 && Date.now() < seen) await new Promise((r) => setTimeout(r, 50));
      expect(logged()).toHaveLength(1);
      expect(logged()[0]).toMatch(/ status=200 /);
    } finally {
      expect(await instance.stop()).toBe(0);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);

  it('never creates the demo in production, even with BOOTSTRAP_DEMO=true', async () => {
    const { url, schema } = await migrated();
    const instance = await Instance.start('production', env(url, { NODE_ENV: 'production', BOOTSTRAP_DEMO: 'true' }));
    expect(await instance.stop()).toBe(0);
    expect(instance.lines.join('\n')).not.toMatch(/fw_[A-Za-z0-9]{20,}/);
    expect(await workspaces(schema)).toBe(0);
  });
});

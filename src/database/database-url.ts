import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import type { AppConfig } from '../config/config';
import { startEmbeddedPostgres } from './embedded-postgres';
import { setPoolerBounds } from './pooler';

export interface DatabaseHandle {
  url: string;
  /** A session of its own, for migrations' advisory lock and the CLI: DATABASE_DIRECT_URL, else `url`. */
  directUrl: string;
  embedded: boolean;
  close(): Promise<void>;
}

/**
 * The database to use: DATABASE_URL, or the embedded PostgreSQL under DATA_DIR. Behind a
 * transaction pooler, the role's bounds for the pooler's sessions are set first (setPoolerBounds). Only one process
 * may open an embedded data directory, so the one that does writes its address to
 * DATA_DIR/embedded.json, and others (the CLI while the server runs) connect to it instead.
 */
export async function openDatabase(config: AppConfig): Promise<DatabaseHandle> {
  if (config.databaseUrl) {
    const directUrl = config.databaseDirectUrl ?? config.databaseUrl;
    if (config.databasePooler === 'transaction') {
      await checkDatabaseReachable(directUrl);
      await setPoolerBounds(directUrl, config.databaseUrl, config.databaseTimeouts);
    }
    return { url: config.databaseUrl, directUrl, embedded: false, close: async () => undefined };
  }
  const dir = resolve(config.dataDir);
  mkdirSync(dir, { recursive: true });
  const marker = join(dir, 'embedded.json');
  const running = readMarker(marker);
  if (running && isAlive(running.pid) && (await answers(running.url))) {
    return { url: running.url, directUrl: running.url, embedded: true, close: async () => undefined };
  }
  const pg = await startEmbeddedPostgres(dir);
  writeFileSync(marker, JSON.stringify({ pid: process.pid, url: pg.url }));
  return {
    url: pg.url,
    directUrl: pg.url,
    embedded: true,
    async close() {
      if (readMarker(marker)?.pid === process.pid) rmSync(marker, { force: true });
      await pg.stop();
    },
  };
}

export class DatabaseUnreachableError extends Error {}

/**
 * Connects once to a DATABASE_URL server and disconnects: a wrong host, a closed port or a bad
 * password then fails within `timeoutMs` with one line, where the pool would wait out its own
 * timeout (and the Nest TypeORM module retry for half a minute). The message never holds the URL.
 */
export async function checkDatabaseReachable(url: string, timeoutMs = 5000): Promise<void> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined); // a late socket error after a failed connect is already reported
  try {
    await client.connect();
  } catch (err) {
    const u = new URL(url);
    const host = u.hostname || u.searchParams.get('host') || 'localhost';
    const reason = err instanceof Error ? err.message : String(err);
    throw new DatabaseUnreachableError(`Cannot connect to the database at ${host}:${u.port || 5432}: ${reason}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

function readMarker(path: string): { pid: number; url: string } | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function answers(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((done) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      socket.end();
      done(true);
    });
    socket.on('error', () => done(false));
    socket.setTimeout(1000, () => {
      socket.destroy();
      done(false);
    });
  });
}

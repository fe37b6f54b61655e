import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

/**
 * PostgreSQL in-process (PGlite, PostgreSQL compiled to WASM) behind a socket server on loopback,
 * so the ordinary `pg` driver and the migrations run unchanged. For laptops and test machines
 * with no PostgreSQL; it runs one query at a time, so production uses DATABASE_URL.
 */
export async function startEmbeddedPostgres(dataDir: string | undefined, maxConnections: number): Promise<EmbeddedPostgres> {
  // Loaded lazily: production never needs these modules.
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  let db;
  if (dataDir) {
    const dir = resolve(dataDir, 'pglite');
    mkdirSync(dir, { recursive: true });
    db = await PGlite.create(dir);
  } else {
    db = await PGlite.create(); // in memory
  }
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections });
  await server.start();
  const conn = server.getServerConn(); // "127.0.0.1:<port>"
  return {
    url: `postgres://postgres@${conn}/postgres?sslmode=disable`,
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}

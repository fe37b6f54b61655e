import 'reflect-metadata';
import type { Server } from 'node:http';
import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createLog, NestLog } from './common/logging';
import { DataSource } from 'typeorm';
import { createApp } from './app';
import { ConfigError, loadConfig } from './config/config';
import { openDatabase } from './database/database-url';
import { runMigrations } from './database/migrate';
import { DemoService } from './demo/demo.service';
import { WorkspacesService } from './workspaces/workspaces.service';

async function main() {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`formwork: configuration error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const log = createLog(config);
  Logger.overrideLogger(new NestLog(log));
  const logger = new Logger('Formwork');

  const database = await openDatabase(config);
  if (database.embedded) {
    logger.log(`Using the embedded PostgreSQL under ${config.dataDir} (set DATABASE_URL for a real server)`);
    const ds = await new DataSource((await import('./database/data-source')).dataSourceOptions(database.url, 1)).initialize();
    const ran = await runMigrations(ds, database.url);
    if (ran.length) logger.log(`Applied migrations: ${ran.join(', ')}`);
    await ds.destroy();
  }

  const app = await createApp(config, database.url, log);
  if (!database.embedded && (await app.get(DataSource).showMigrations())) {
    process.stderr.write('formwork: the database has migrations that have not run: run `npm run --silent cli -- migrate` with the same DATABASE_URL first\n');
    await app.close();
    process.exit(1);
  }

  const server = await listen(app, config.port);
  logger.log(`Formwork listening on ${config.publicUrl} (port ${config.port})`);

  if (config.bootstrapDemo && (await app.get(WorkspacesService).isEmpty())) {
    const demo = await app.get(DemoService).create();
    // Printed to the terminal (not the logger), once, on a first start outside production.
    process.stdout.write(
      [
        '',
        'A demo workspace was created (this happens once, on an empty database).',
        `  token: ${demo.token}`,
        '  try:',
        `    curl -s -X POST ${config.publicUrl}/api/v1/tools/list_forms -H "Authorization: Bearer ${demo.token}" -H "Content-Type: application/json" -d '{}'`,
        '',
      ].join('\n') + '\n',
    );
  }

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.log(`${signal}: no new connections; finishing in-flight requests, then stopping`);
    const force = setTimeout(() => {
      logger.error(`in-flight requests did not finish within ${SHUTDOWN_GRACE_MS / 1000} s: exiting anyway`);
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    await stopAccepting(server);
    await app.close(); // Nest's hooks: the purge timer, Redis, the database pool
    await database.close();
    logger.log('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/**
 * Listens on every address, as Node.js does by default: IPv6 and IPv4 where the machine has IPv6,
 * IPv4 alone where it has not (some containers). Fastify would otherwise listen on localhost only.
 */
async function listen(app: NestFastifyApplication, port: number): Promise<Server> {
  try {
    await app.listen(port, '::');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EAFNOSUPPORT' && code !== 'EADDRNOTAVAIL') throw err;
    await app.listen(port, '0.0.0.0');
  }
  return app.getHttpServer() as Server;
}

/** Under the usual 30 s a container runtime waits after SIGTERM before it kills. */
const SHUTDOWN_GRACE_MS = 25_000;

/**
 * Stops listening and resolves once every connection has closed: idle keep-alive connections at
 * once, busy ones as soon as their request is answered (Node keeps them open for the next request
 * otherwise).
 */
function stopAccepting(server: Server): Promise<void> {
  return new Promise((resolve) => {
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    server.close(() => {
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections();
  });
}

main().catch((err) => {
  process.stderr.write(`formwork: could not start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

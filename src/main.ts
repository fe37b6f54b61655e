import 'reflect-metadata';
// First: tracing (when configured) must start before pg and ioredis are required.
import './observability/start-tracing';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { configureServer } from './common/http-server';
import { createLog, NestLog } from './common/logging';
import { DataSource } from 'typeorm';
import { createApp } from './app';
import { ConfigError, demoOnFirstStart, demoSignInOnFirstStart, listenAddress, loadConfig } from './config/config';
import { openDatabase } from './database/database-url';
import { runMigrations } from './database/migrate';
import { QueryLogger } from './database/query-logger';
import { DemoService } from './demo/demo.service';
import { startMetricsServer } from './observability/http-observer';
import { stopTracing } from './observability/tracing';
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
  // Migrations run before anything reads the schema: the embedded database runs them itself; on a
  // DATABASE_URL server they are a deliberate step, and a pending one stops start-up here, before
  // the app (the OAuth keys, the CSRF key) touches a table that may not exist yet.
  const ds = await new DataSource(
    (await import('./database/data-source')).dataSourceOptions(database.directUrl, 1),
  ).initialize();
  try {
    if (database.embedded) {
      logger.log(`Using the embedded PostgreSQL under ${config.dataDir} (set DATABASE_URL for a real server)`);
      // A first start's migrations and seeding may be slow on the embedded database: no warning for them.
      const ran = await QueryLogger.expectingSlowQueries(() => runMigrations(ds, database.directUrl));
      if (ran.length) logger.log(`Applied migrations: ${ran.join(', ')}`);
    } else if (await ds.showMigrations()) {
      process.stderr.write(
        'formwork: the database has migrations that have not run: run `npm run --silent cli -- migrate` with the same DATABASE_URL first\n',
      );
      await ds.destroy();
      await database.close();
      process.exit(1);
    }
  } finally {
    if (ds.isInitialized) await ds.destroy();
  }

  const app = await createApp(config, database.url, log);
  // Decided before listening: a start that will print the demo owner's password listens on
  // loopback only (unless HOST says otherwise), so the password opens nothing to the network.
  const firstStart = demoOnFirstStart(config, database.embedded) && (await app.get(WorkspacesService).isEmpty());
  const printsPassword = firstStart && demoSignInOnFirstStart(config, database.embedded);
  const where = listenAddress(config, printsPassword);
  const servers = await listen(app, config.port, where);
  // Timeouts (a request must arrive within 60 s), and the connections tracked for a clean stop.
  const connections = servers.map((s) => configureServer(s));
  const addresses = servers.map((s) => s.address()).map((a) => (typeof a === 'string' ? a : `${a?.address}`));
  const on =
    where.kind === 'everywhere'
      ? 'every interface'
      : where.kind === 'loopback'
        ? `${addresses.join(' and ')} only, this machine alone, because this start prints a password (set HOST=:: or HOST=0.0.0.0 to listen on every interface)`
        : `${addresses.join(' and ')} (HOST)`;
  logger.log(`Formwork listening on ${config.publicUrl} (port ${config.port}, ${on})`);
  if (config.metrics.port !== undefined) {
    const metricsServer = await startMetricsServer(config.metrics.port, config.host);
    metricsServer.unref();
    logger.log(`Metrics on port ${config.metrics.port} (GET /metrics)`);
  }

  if (firstStart) {
    const demo = await QueryLogger.expectingSlowQueries(() => app.get(DemoService).create());
    // A password for the demo owner, so a newcomer can sign in to the settings at once: only on
    // the embedded database and never in production (a shared database gets no known password).
    const signIn = printsPassword ? await app.get(DemoService).ownerPassword() : undefined;
    // Printed to the terminal (not the logger), once, on a first start outside production.
    process.stdout.write(
      [
        '',
        'A demo workspace was created (this happens once, on an empty database).',
        `  token: ${demo.token}`,
        '  try:',
        `    curl -s -X POST ${config.publicUrl}/api/v1/tools/list_forms -H "Authorization: Bearer ${demo.token}" -H "Content-Type: application/json" -d '{}'`,
        ...(signIn
          ? [
              '  settings (API tokens, members, connected apps):',
              `    ${config.publicUrl}/settings`,
              `    email: ${signIn.email}`,
              `    password: ${signIn.password} (works once: signing in asks for a new password)`,
              `  Listening on ${addresses.join(' and ')} only (this machine), since this password is printed;`,
              '  later starts listen on every interface, and HOST=0.0.0.0 (or ::) does so now.',
            ]
          : []),
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
    // Clients still sending a request after a few seconds are cut: they must not hold the stop up.
    await Promise.all(
      connections.map((c) =>
        c.drain(undefined, (count) => logger.warn(`closed ${count} connection(s) still sending a request`)),
      ),
    );
    await app.close(); // Nest's hooks: the purge timer, Redis, the database pool
    await database.close();
    await stopTracing();
    logger.log('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/**
 * Listens where `where` says; the servers that listen (two for loopback: 127.0.0.1 and ::1).
 * Every interface: IPv6 and IPv4 where the machine has IPv6, IPv4 alone where it has not (some
 * containers), as Node.js does by default (Fastify would otherwise listen on localhost only).
 * Loopback: 127.0.0.1 through Fastify, and ::1 on a second server handing its requests to the
 * same handler, where the machine has IPv6.
 */
async function listen(
  app: NestFastifyApplication,
  port: number,
  where: ReturnType<typeof listenAddress>,
): Promise<Server[]> {
  const unavailable = (err: unknown) =>
    ['EAFNOSUPPORT', 'EADDRNOTAVAIL'].includes(`${(err as NodeJS.ErrnoException).code}`);
  if (where.kind === 'host') {
    await app.listen(port, where.host);
    return [app.getHttpServer() as Server];
  }
  if (where.kind === 'everywhere') {
    try {
      await app.listen(port, '::');
    } catch (err) {
      if (!unavailable(err)) throw err;
      await app.listen(port, '0.0.0.0');
    }
    return [app.getHttpServer() as Server];
  }
  await app.listen(port, '127.0.0.1');
  const main = app.getHttpServer() as Server;
  const v6 = createServer((req, res) => main.emit('request', req, res));
  try {
    await new Promise<void>((resolve, reject) => {
      v6.once('error', reject);
      v6.listen({ port: (main.address() as AddressInfo).port, host: '::1', ipv6Only: true }, resolve);
    });
  } catch (err) {
    if (!unavailable(err)) throw err;
    return [main];
  }
  return [main, v6];
}

/** Under the usual 30 s a container runtime waits after SIGTERM before it kills. */
const SHUTDOWN_GRACE_MS = 25_000;

main().catch((err) => {
  process.stderr.write(`formwork: could not start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

import { join } from 'node:path';
import { DataSourceOptions } from 'typeorm';
import { ENTITIES } from './entities';
import { QueryLogger } from './query-logger';

/**
 * Options of the one DataSource used by the app, the CLI and the migration tooling.
 * The schema comes only from migrations/ (never synchronize).
 */
export function dataSourceOptions(url: string, poolSize = 10, logErrors = true): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    // dist/src/database -> dist/migrations (built), src/database -> migrations (ts-jest)
    migrations: [join(__dirname, '..', '..', 'migrations', '*.{ts,js}')],
    migrationsTableName: 'schema_migrations',
    // uuid keys default to gen_random_uuid(), built into PostgreSQL 13+: no extension to install
    // (the embedded PostgreSQL has none), so TypeORM must not try.
    uuidExtension: 'pgcrypto',
    installExtensions: false,
    synchronize: false,
    migrationsRun: false,
    // Failed queries go to the service's logger without their parameters (see QueryLogger).
    logging: logErrors ? ['error', 'warn'] : false,
    logger: logErrors ? new QueryLogger() : undefined,
    maxQueryExecutionTime: 2000,
    extra: { max: poolSize, connectionTimeoutMillis: 10_000 },
  };
}

import { join } from 'node:path';
import { DataSourceOptions } from 'typeorm';
import { QueryLogger } from './query-logger';

/**
 * The database layer: the options of the one DataSource used by the app, the CLI and the
 * migration tooling, the transaction idiom (transaction.ts), prepared statements, the migration
 * runner and the embedded PostgreSQL. It imports no feature. The schema comes only from
 * migrations/ (never synchronize).
 *
 * Each table is described once in code besides its migration: by its entity, registered by the
 * module that owns it (TypeOrmModule.forFeature, gathered by autoLoadEntities), and the rows a
 * repository returns are typed from that entity (Pick, Omit), never by a hand-written row type.
 */
export function dataSourceOptions(url: string, poolSize = 10, logErrors = true): DataSourceOptions {
  return {
    type: 'postgres',
    url,
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

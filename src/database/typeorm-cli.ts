import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source';

/**
 * For the TypeORM CLI only (`typeorm migration:generate -d dist/src/database/typeorm-cli.js`).
 * A file of its own: building a DataSource from process.env when a module loads would make a
 * malformed DATABASE_URL crash the service with a stack trace before its configuration is checked.
 * The entities are found by their file names (every feature's entities/), as the service gathers
 * them from the feature modules: database/ imports no feature.
 */
export default new DataSource({
  ...dataSourceOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/formwork'),
  entities: [join(__dirname, '..', '*', 'entities', '*.entity.{ts,js}')],
});

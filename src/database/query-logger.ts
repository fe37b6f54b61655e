import { Logger } from '@nestjs/common';
import type { Logger as TypeOrmLogger, QueryRunner } from 'typeorm';
import { databaseUnavailableKind } from '../common/errors/database-unavailable';
import { sqlText } from './prepared';

/**
 * TypeORM's logging through the service's logger (JSON in production, with the request id), and
 * never with query parameters: they hold bearer tokens, codes, keys and people's answers.
 */
export class QueryLogger implements TypeOrmLogger {
  private readonly logger = new Logger('Database');

  logQueryError(error: string | Error, query: string, _parameters?: unknown[], _runner?: QueryRunner) {
    const e = error as Error & { code?: string };
    // A database away or a bounded wait run out (503 to the client, logged by the error filter too)
    // is the operator's concern, not a bug: a warning.
    const log = databaseUnavailableKind(error)
      ? this.logger.warn.bind(this.logger)
      : this.logger.error.bind(this.logger);
    log({
      msg: 'query failed',
      sqlState: e.code,
      error: typeof error === 'string' ? error : e.message,
      query: sqlText(query).replace(/\s+/g, ' ').slice(0, 300),
    });
  }

  logQuerySlow(time: number, query: string) {
    this.logger.warn({ msg: 'slow query', ms: time, query: sqlText(query).replace(/\s+/g, ' ').slice(0, 300) });
  }

  logSchemaBuild(message: string) {
    this.logger.debug(message);
  }

  logMigration(message: string) {
    this.logger.log(message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown) {
    if (level === 'warn') this.logger.warn(String(message));
  }

  logQuery() {}
}

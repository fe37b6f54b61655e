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

  /**
   * Runs `work` (a first start's migrations and demo seeding) with slow queries logged at debug,
   * not as warnings: those that began while it ran, its own and those that waited for it (the
   * embedded database has one session, which seeding holds). They are expected once, and are no
   * sign of trouble to an operator.
   */
  static async expectingSlowQueries<T>(work: () => Promise<T>): Promise<T> {
    expected.running += 1;
    try {
      return await work();
    } finally {
      expected.running -= 1;
      expected.endedAt = Date.now();
    }
  }

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
    const entry = { msg: 'slow query', ms: time, query: sqlText(query).replace(/\s+/g, ' ').slice(0, 300) };
    if (expected.running > 0 || Date.now() - time <= expected.endedAt) this.logger.debug(entry);
    else this.logger.warn(entry);
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

/** Whether slow queries are expected now (see expectingSlowQueries), and when they last stopped being. */
const expected = { running: 0, endedAt: 0 };

import { Logger } from '@nestjs/common';
import { QueryLogger } from './query-logger';

describe('QueryLogger', () => {
  afterEach(() => jest.restoreAllMocks());

  it('logs a failed query with its SQL and error, never its parameters (they hold tokens and answers)', () => {
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const failure = Object.assign(new Error('relation "x" does not exist'), { code: '42P01' });
    new QueryLogger().logQueryError(failure, 'SELECT *\n  FROM api_tokens WHERE token_hash = $1', [
      'fw_secretsecretsecret',
    ]);
    expect(error).toHaveBeenCalledTimes(1);
    const logged = JSON.stringify(error.mock.calls[0]);
    expect(logged).not.toContain('fw_secretsecretsecret');
    expect(error.mock.calls[0][0]).toEqual({
      msg: 'query failed',
      sqlState: '42P01',
      error: 'relation "x" does not exist',
      query: 'SELECT * FROM api_tokens WHERE token_hash = $1',
    });
  });

  it('logs the SQL of a failed prepared statement the same way', () => {
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const failure = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    const statement = {
      name: 'formwork_1',
      text: 'INSERT INTO responses\n  (answers) VALUES ($1)',
    } as unknown as string; // as prepared() makes it
    new QueryLogger().logQueryError(failure, statement, ['{"secret": 1}']);
    expect(error.mock.calls[0][0]).toEqual({
      msg: 'query failed',
      sqlState: '40P01',
      error: 'deadlock detected',
      query: 'INSERT INTO responses (answers) VALUES ($1)',
    });
    expect(JSON.stringify(error.mock.calls[0])).not.toContain('secret');
  });

  it('logs a timed-out or cut-off query as a warning (the client gets a 503), not an error', () => {
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const failure = Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' });
    new QueryLogger().logQueryError(failure, 'SELECT pg_advisory_xact_lock($1)', ['secret']);
    expect(error).not.toHaveBeenCalled();
    expect(warn.mock.calls[0][0]).toMatchObject({ msg: 'query failed', sqlState: '55P03' });
    expect(JSON.stringify(warn.mock.calls[0])).not.toContain('secret');
  });

  it('warns of a slow query, except one that began during expectingSlowQueries (a first start): a debug line', async () => {
    jest.useFakeTimers({ now: new Date('2026-11-27T12:00:00Z'), doNotFake: ['nextTick', 'setImmediate'] });
    try {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const debug = jest.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
      const logger = new QueryLogger();
      logger.logQuerySlow(2500, 'CREATE TABLE forms (id uuid)');
      expect(warn.mock.calls[0][0]).toEqual({ msg: 'slow query', ms: 2500, query: 'CREATE TABLE forms (id uuid)' });
      const result = await QueryLogger.expectingSlowQueries(async () => {
        jest.setSystemTime(Date.now() + 10_000);
        logger.logQuerySlow(3100, 'INSERT INTO responses (answers) VALUES ($1)'); // its own
        return 'seeded';
      });
      expect(result).toBe('seeded');
      // One that waited for the seeding's session, and ends just after it.
      jest.setSystemTime(Date.now() + 100);
      logger.logQuerySlow(7000, 'SELECT 1');
      expect(warn).toHaveBeenCalledTimes(1);
      expect(debug.mock.calls.map((c) => c[0].ms)).toEqual([3100, 7000]);
      // One that began after it: a warning again.
      jest.setSystemTime(Date.now() + 5000);
      logger.logQuerySlow(2600, 'SELECT 1');
      expect(warn).toHaveBeenCalledTimes(2);
    } finally {
      jest.useRealTimers();
    }
  });

  it('does not log successful queries', () => {
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    new QueryLogger().logQuery();
    expect(log).not.toHaveBeenCalled();
  });
});

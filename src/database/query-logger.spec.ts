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

  it('does not log successful queries', () => {
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    new QueryLogger().logQuery();
    expect(log).not.toHaveBeenCalled();
  });
});

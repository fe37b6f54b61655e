import { ArgumentsHost, HttpException, Logger } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiExceptionFilter, pathOf } from './api-exception.filter';
import { databaseUnavailableKind } from './database-unavailable';

describe('ApiExceptionFilter.toApiError', () => {
  const filter = new ApiExceptionFilter(() => ['GET', 'HEAD']);
  const req = (method: string, url: string, headers: Record<string, string> = {}) =>
    ({ method, url, headers, routeOptions: { config: {} } }) as unknown as FastifyRequest;

  it('answers a body that stopped arriving with 400, not 500', () => {
    const aborted = Object.assign(new Error('aborted'), { code: 'ECONNRESET', statusCode: 400 });
    expect(filter.toApiError(aborted, req('POST', '/api/v1/tools/list_forms'))).toMatchObject({
      status: 400,
      code: 'invalid_arguments',
      message: 'The request body was cut short.',
    });
    const mismatch = new HttpException('Request body size did not match Content-Length', 400);
    expect(filter.toApiError(mismatch, req('POST', '/x')).message).toBe('The request body was cut short.');
  });

  it("names the route's own body limit in a 413", () => {
    const tooLarge = new HttpException('Request body is too large', 413);
    expect(
      filter.toApiError(tooLarge, req('POST', '/api/v1/tools/list_forms', { 'content-type': 'application/json' })).hint,
    ).toContain('at most 1 MB');
    expect(
      filter.toApiError(tooLarge, req('POST', '/f/x', { 'content-type': 'application/x-www-form-urlencoded' })).hint,
    ).toContain('at most 200 KB');
  });

  it('turns an unknown method on a known path into 405 with Allow, and an unknown path into 404', () => {
    const notFound = new HttpException('Cannot POST /healthz', 404);
    const error = filter.toApiError(notFound, req('POST', '/healthz?x=1'));
    expect(error).toMatchObject({ status: 405, code: 'method_not_allowed', headers: { Allow: 'GET, HEAD' } });
    expect(new ApiExceptionFilter(() => []).toApiError(notFound, req('GET', '/nowhere'))).toMatchObject({
      status: 404,
      code: 'not_found',
      message: 'No route GET /nowhere.',
    });
  });

  it('answers anything else with a generic 500', () => {
    expect(filter.toApiError(new Error('secret detail'), req('GET', '/'))).toMatchObject({
      status: 500,
      code: 'internal_error',
      message: 'Something went wrong on our side.',
    });
  });

  describe('database failures', () => {
    // As TypeORM throws them: QueryFailedError copies the driver error's fields and keeps it.
    const queryFailed = (code: string, message: string) =>
      Object.assign(new Error(message), {
        name: 'QueryFailedError',
        code,
        query: 'SELECT * FROM api_tokens WHERE token_hash = $1',
        parameters: ['fw_secretsecret'],
        driverError: Object.assign(new Error(message), { code }),
      });
    /** Runs the filter's catch on `err` for a POST to `url`; returns the reply it answered on. */
    const catchFor = (err: unknown, url: string, id: string) => {
      const reply = {
        sent: false,
        raw: { headersSent: false },
        headers: jest.fn(),
        status: jest.fn().mockReturnThis(),
        type: jest.fn().mockReturnThis(),
        send: jest.fn(),
      };
      const host = {
        switchToHttp: () => ({ getRequest: () => ({ ...req('POST', url), id }), getResponse: () => reply }),
      } as unknown as ArgumentsHost;
      filter.catch(err, host);
      return reply;
    };
    const unavailable = [
      ['statement timeout', queryFailed('57014', 'canceling statement due to statement timeout')],
      ['lock timeout', queryFailed('55P03', 'canceling statement due to lock timeout')],
      ['idle-in-transaction kill', queryFailed('25P03', 'terminating connection due to idle-in-transaction timeout')],
      ['server shutting down', queryFailed('57P01', 'terminating connection due to administrator command')],
      ['too many connections', queryFailed('53300', 'sorry, too many clients already')],
      ['connection failure', queryFailed('08006', 'connection failure')],
      ['refused', Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' })],
      ['pool connect timeout', new Error('timeout exceeded when trying to connect')],
      ['connect timeout', new Error('Connection terminated due to connection timeout')],
      ['cut mid-query', new Error('Connection terminated unexpectedly')],
      ['frozen server', new Error('Query read timeout')],
      ['a client after a cut', new Error('Client has encountered a connection error and is not queryable')],
    ] as const;

    it.each(unavailable)('answers %s with 503 service_unavailable and Retry-After, no SQL or address', (_, err) => {
      const error = filter.toApiError(err, req('POST', '/api/v1/tools/list_forms'));
      expect(error).toMatchObject({ status: 503, code: 'service_unavailable' });
      expect(Number(error.headers?.['Retry-After'])).toBeGreaterThan(0);
      const body = JSON.stringify(error.toJSON('r1'));
      for (const leak of ['SELECT', 'api_tokens', 'fw_secret', '10.0.0.5', '5432', 'canceling', 'terminat'])
        expect(body).not.toContain(leak);
    });

    it('keeps real bugs a 500: SQL errors, a deadlock, a query in the wrong connection, a TypeError', () => {
      for (const err of [
        queryFailed('42P01', 'relation "x" does not exist'),
        queryFailed('23505', 'duplicate key value violates unique constraint'),
        queryFailed('40P01', 'deadlock detected'),
        Object.assign(new Error('A query asked the pool for a second connection'), {
          name: 'PooledQueryInTransactionError',
        }),
        new TypeError("Cannot read properties of undefined (reading 'id')"),
      ]) {
        expect(filter.toApiError(err, req('GET', '/'))).toMatchObject({ status: 500, code: 'internal_error' });
      }
    });

    it('keeps a bug in the class of outages a 500: a protocol violation (over 65,535 parameters), a configuration limit', () => {
      for (const err of [
        queryFailed('08P01', 'bind message supplies 4464 parameters, but prepared statement "" requires 70000'),
        queryFailed('53400', 'temporary file size exceeds temp_file_limit (1024kB)'),
      ]) {
        expect(databaseUnavailableKind(err)).toBeUndefined();
        const error = filter.toApiError(err, req('POST', '/api/v1/tools/list_responses'));
        expect(error).toMatchObject({ status: 500, code: 'internal_error' });
        expect(error.headers?.['Retry-After']).toBeUndefined();
      }
      // Their neighbours stay outages.
      expect(databaseUnavailableKind(queryFailed('08006', 'connection failure'))).toBe('unreachable');
      expect(databaseUnavailableKind(queryFailed('53300', 'sorry, too many clients already'))).toBe('unreachable');
    });

    it('logs a protocol violation as a failed request at error, with its SQLSTATE and stack, never its SQL or parameters', () => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const reply = catchFor(
        queryFailed('08P01', 'bind message supplies 4464 parameters'),
        '/api/v1/tools/list_responses',
        'req-2',
      );
      expect(warn).not.toHaveBeenCalled();
      expect(error).toHaveBeenCalledTimes(1);
      expect(error.mock.calls[0][0]).toEqual({
        msg: 'request failed',
        requestId: 'req-2',
        method: 'POST',
        path: '/api/v1/tools/list_responses',
        sqlState: '08P01',
      });
      expect(error.mock.calls[0][1]).toContain('bind message supplies');
      expect(JSON.stringify(error.mock.calls)).not.toContain('fw_secret');
      expect(reply.status).toHaveBeenCalledWith(500);
      warn.mockRestore();
      error.mockRestore();
    });

    it('logs a database failure at warn with its SQLSTATE, never its SQL or parameters', () => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const reply = catchFor(
        queryFailed('57014', 'canceling statement due to statement timeout'),
        '/api/v1/tools/list_forms?x=1',
        'req-1',
      );
      expect(error).not.toHaveBeenCalled();
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0][0]).toEqual({
        msg: 'database unavailable',
        requestId: 'req-1',
        method: 'POST',
        path: '/api/v1/tools/list_forms',
        kind: 'timeout',
        sqlState: '57014',
      });
      expect(JSON.stringify(warn.mock.calls)).not.toContain('fw_secret');
      expect(reply.status).toHaveBeenCalledWith(503);
      expect(reply.headers).toHaveBeenCalledWith({ 'Retry-After': '2' });
      warn.mockRestore();
      error.mockRestore();
    });
  });
});

describe('pathOf', () => {
  it('drops the query, and redacts the token of an email unsubscribe link (logs and errors show the path)', () => {
    expect(pathOf('/api/v1/tools/get_form?x=secret')).toBe('/api/v1/tools/get_form');
    expect(pathOf('/email/unsubscribe/0b1c.deadbeef?one-click')).toBe('/email/unsubscribe/[redacted]');
  });
});

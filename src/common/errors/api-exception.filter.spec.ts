import { HttpException } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiExceptionFilter } from './api-exception.filter';

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
});

/** The global exception filter: every failure as the JSON error envelope. */
import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { bodyLimitOf } from '../http/body';
import { ApiError } from './api-error';
import { databaseErrorCode, databaseUnavailable, databaseUnavailableKind } from './database-unavailable';
import { ErrorCode } from './error-catalog';
import { payloadTooLarge } from './request-checks';

declare module 'fastify' {
  interface FastifyReply {
    /** The code of the error envelope the answer carries, when it is one. */
    errorCode?: string;
  }
}

/** Methods the app serves on a path (for 405 answers). */
export type AllowedMethodsLookup = (path: string) => string[];

/**
 * The one place where every failure becomes the JSON envelope, on every path: ApiError as thrown,
 * Nest's and Fastify's own errors (unknown route, wrong method, bad body, too large) mapped to a
 * code, a database that cannot be reached or a bounded wait on it that ran out a 503 with
 * Retry-After (logged at warn, without the SQL or its parameters), and anything else a 500 with a
 * generic message (its stack goes to the log only).
 */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  constructor(private readonly allowedMethods: AllowedMethodsLookup = () => []) {}

  catch(exception: unknown, host: ArgumentsHost) {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<FastifyRequest>();
    const reply = ctx.getResponse<FastifyReply>();
    const error = this.toApiError(exception, req);
    const unavailable = databaseUnavailableKind(exception);
    if (unavailable) {
      this.logger.warn({
        msg: 'database unavailable',
        requestId: req.id,
        method: req.method,
        path: pathOf(req.url),
        kind: unavailable,
        sqlState: databaseErrorCode(exception),
      });
    } else if (error.status >= 500) {
      this.logger.error(
        {
          msg: 'request failed',
          requestId: req.id,
          method: req.method,
          path: pathOf(req.url),
          sqlState: databaseErrorCode(exception),
        },
        exception instanceof Error ? exception.stack : String(exception),
      );
    }
    sendError(reply, error, req.id);
  }

  toApiError(exception: unknown, req: FastifyRequest): ApiError {
    if (exception instanceof ApiError) return exception;
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      if (status === 404) {
        const path = pathOf(req.url);
        const allow = this.allowedMethods(path);
        if (allow.length > 0 && !allow.includes(req.method)) {
          return new ApiError('method_not_allowed', {
            message: `${req.method} is not allowed on ${path}.`,
            hint: `Use ${allow.join(' or ')} on this path.`,
            headers: { Allow: allow.join(', ') },
          });
        }
        return new ApiError('not_found', {
          message: `No route ${req.method} ${path}.`,
          hint: 'See GET /openapi.json or /docs for the paths this API serves.',
        });
      }
      if (status === 413) return payloadTooLarge(bodyLimitOf(req));
      if (status === 400 && /content-length/i.test(exception.message)) {
        return new ApiError('invalid_arguments', {
          message: 'The request body was cut short.',
          hint: 'Send the whole body, with a Content-Length that matches it.',
        });
      }
      const code = STATUS_CODES[status];
      if (code) return new ApiError(code);
    }
    // A body that stopped arriving (the client went away, or sent less than its Content-Length).
    if (
      (exception as { statusCode?: unknown })?.statusCode === 400 &&
      (exception as { message?: unknown }).message === 'aborted'
    ) {
      return new ApiError('invalid_arguments', {
        message: 'The request body was cut short.',
        hint: 'Send the whole body, with a Content-Length that matches it.',
      });
    }
    const unavailable = databaseUnavailableKind(exception);
    if (unavailable) return databaseUnavailable(unavailable);
    return new ApiError('internal_error');
  }
}

/** Sends the envelope (with its headers) unless an answer has already started. */
export function sendError(reply: FastifyReply, error: ApiError, requestId: string): void {
  reply.errorCode = error.code; // for the metrics (src/observability)
  if (reply.sent || reply.raw.headersSent) {
    reply.raw.end();
    return;
  }
  if (error.headers) reply.headers(error.headers);
  reply
    .status(error.status)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(error.toJSON(requestId)));
}

/**
 * The path of a request URL, without its query string (which could hold anything), for logs and
 * errors: an email's one-click unsubscribe link carries its token in the path, which is redacted.
 */
export function pathOf(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  return path.startsWith(UNSUBSCRIBE_PATH) ? `${UNSUBSCRIBE_PATH}[redacted]` : path;
}
const UNSUBSCRIBE_PATH = '/email/unsubscribe/';

const STATUS_CODES: Record<number, ErrorCode> = {
  400: 'invalid_arguments',
  401: 'unauthorized',
  403: 'forbidden',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

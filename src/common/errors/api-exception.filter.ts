import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiError } from './api-error';
import { ErrorCode } from './error-catalog';
import { payloadTooLarge } from './request-checks';

/** Methods the app serves on a path, read from Express's own route table (for 405 answers). */
export type AllowedMethodsLookup = (path: string) => string[];

/**
 * The one place where every failure becomes the JSON envelope, on every path: ApiError as thrown,
 * Nest's and Express's own errors (unknown route, wrong method, bad JSON, too large) mapped to a code,
 * and anything else a 500 with a generic message (its stack goes to the log only).
 */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  constructor(private readonly allowedMethods: AllowedMethodsLookup = () => []) {}

  catch(exception: unknown, host: ArgumentsHost) {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request>();
    const res = ctx.getResponse<Response>();
    const error = this.toApiError(exception, req);
    if (error.status >= 500) {
      this.logger.error(
        { msg: 'request failed', requestId: req.id, method: req.method, path: req.path },
        exception instanceof Error ? exception.stack : String(exception),
      );
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    for (const [name, value] of Object.entries(error.headers ?? {})) res.setHeader(name, value);
    res.status(error.status).json(error.toJSON(req.id));
  }

  toApiError(exception: unknown, req: Request): ApiError {
    if (exception instanceof ApiError) return exception;
    const bodyError = mapBodyParserError(exception);
    if (bodyError) return bodyError;
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      if (status === 404) {
        const allow = this.allowedMethods(req.path);
        if (allow.length > 0 && !allow.includes(req.method)) {
          return new ApiError('method_not_allowed', {
            message: `${req.method} is not allowed on ${req.path}.`,
            hint: `Use ${allow.join(' or ')} on this path.`,
            headers: { Allow: allow.join(', ') },
          });
        }
        return new ApiError('not_found', {
          message: `No route ${req.method} ${req.path}.`,
          hint: 'See GET /openapi.json or /docs for the paths this API serves.',
        });
      }
      const code = STATUS_CODES[status];
      if (code) return new ApiError(code);
    }
    return new ApiError('internal_error');
  }
}

const STATUS_CODES: Record<number, ErrorCode> = {
  400: 'invalid_arguments',
  401: 'unauthorized',
  403: 'forbidden',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/** body-parser marks its errors with `type`; Nest may have wrapped them already. */
export function mapBodyParserError(exception: unknown): ApiError | undefined {
  const e = exception as { type?: string; message?: string; limit?: number } | undefined;
  switch (e?.type) {
    case 'entity.parse.failed':
      return new ApiError('invalid_arguments', {
        message: 'The request body is not valid JSON.',
        hint: 'Send a JSON object, e.g. {} for a tool without arguments.',
        details: [{ path: '', message: 'malformed JSON' }],
      });
    case 'entity.too.large':
      // The parser's own limit (raw-body puts it on the error): the hint says the route's real one.
      return payloadTooLarge(e.limit);
    case 'parameters.too.many':
      return new ApiError('payload_too_large', { message: 'The form post has too many fields.', hint: 'Send only the fields of the form.' });
    case 'request.aborted':
    case 'request.size.invalid':
      return new ApiError('invalid_arguments', { message: 'The request body was cut short.', hint: 'Send the whole body, with a Content-Length that matches it.' });
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiError('unsupported_media_type', { message: 'The body encoding or charset is not supported.', hint: 'Send UTF-8 JSON without Content-Encoding.' });
    default:
      return undefined;
  }
}

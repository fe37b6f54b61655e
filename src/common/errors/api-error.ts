/** ApiError, the one error type thrown for a client's mistake or a refusal, and its details (JSON Pointers). */
import { ERROR_CATALOG, ErrorCode } from './error-catalog';

export interface ErrorDetail {
  /** JSON Pointer into the request body, e.g. "/blocks/2/choices". */
  path: string;
  message: string;
}

/** One segment of a JSON Pointer (RFC 6901): ~ and / escaped. */
export function pointerSegment(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

export interface ApiErrorOptions {
  message?: string;
  hint?: string;
  details?: ErrorDetail[];
  /** Extra response headers, e.g. Retry-After or WWW-Authenticate. */
  headers?: Record<string, string>;
}

/** The one error type services and guards throw. Status, message and hint default from the catalog. */
export class ApiError extends Error {
  readonly status: number;
  readonly hint: string;
  readonly details?: ErrorDetail[];
  readonly headers?: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    options: ApiErrorOptions = {},
  ) {
    const entry = ERROR_CATALOG[code];
    super(options.message ?? entry.message);
    this.status = entry.status;
    this.hint = options.hint ?? entry.hint;
    this.details = options.details;
    this.headers = options.headers;
  }

  toJSON(requestId?: string) {
    return {
      error: {
        code: this.code,
        message: this.message,
        hint: this.hint,
        ...(this.details ? { details: this.details } : {}),
        ...(requestId ? { requestId } : {}),
      },
    };
  }
}

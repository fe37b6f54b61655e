/** Every refusal of the service as one typed error: its `code`, `message`, `hint` and `details`. */
import type { components } from './generated/openapi';

type Envelope = components['schemas']['Error']['error'];

/** The service's stable error codes, and `unexpected_response` for an answer without the JSON envelope (a proxy's 502 page). */
export type ErrorCode = Envelope['code'] | 'unexpected_response';

/** One problem of a refused request: `path` is a JSON Pointer into the arguments. */
export interface ErrorDetail {
  path: string;
  message: string;
}

export class FormworkError extends Error {
  override readonly name = 'FormworkError';
  /** What to do about it, in words. */
  readonly hint: string;
  readonly details: ErrorDetail[];
  /** The HTTP status. */
  readonly status: number;
  /** Quote it when reporting a problem (`X-Request-Id`; for a replayed error, the first request's). */
  readonly requestId: string | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    init: { hint: string; status: number; details?: ErrorDetail[]; requestId?: string },
  ) {
    super(message);
    this.hint = init.hint;
    this.status = init.status;
    this.details = init.details ?? [];
    this.requestId = init.requestId;
  }

  /** The error a refused answer carries (`body` as parsed by openapi-fetch: JSON, or the text). */
  static fromResponse(response: Response, body: unknown): FormworkError {
    const error = (body as { error?: Partial<Envelope> } | undefined)?.error;
    const requestId = error?.requestId ?? response.headers.get('x-request-id') ?? undefined;
    if (typeof error?.code === 'string' && typeof error.message === 'string') {
      return new FormworkError(error.code, error.message, {
        hint: error.hint ?? '',
        status: response.status,
        details: error.details,
        requestId,
      });
    }
    return new FormworkError('unexpected_response', `HTTP ${response.status} without Formwork's error envelope.`, {
      hint: 'Check baseUrl: something other than Formwork answered (a proxy or load balancer); retry later.',
      status: response.status,
      requestId,
    });
  }
}

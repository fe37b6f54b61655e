/**
 * Checks on a request before its body is read, free of any HTTP framework (plain Node headers in,
 * an ApiError or nothing out), so that each adapter only wires them in.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { ApiError } from './api-error';

/**
 * Request bodies are taken as sent: a Content-Encoding other than identity (gzip, br, deflate...)
 * is refused with 415 before anything reads the body, on every route. Decompressing would let a
 * small body inflate past the size limits; bodies here are small JSON or form posts anyway.
 */
export function checkContentEncoding(headers: IncomingHttpHeaders): ApiError | undefined {
  const raw = headers['content-encoding'];
  if (raw === undefined) return undefined;
  const codings = raw
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  if (codings.length === 0) return undefined;
  return new ApiError('unsupported_media_type', {
    message: `Compressed request bodies are not supported (Content-Encoding: ${codings.join(', ').slice(0, 100)}).`,
    hint: 'Send the body uncompressed, without a Content-Encoding header (or with Content-Encoding: identity).',
  });
}

/** 413 whose hint names the limit of the route that refused the body (in bytes, when known). */
export function payloadTooLarge(limitBytes?: number): ApiError {
  if (limitBytes === undefined || !Number.isFinite(limitBytes)) return new ApiError('payload_too_large');
  return new ApiError('payload_too_large', {
    message: `The request body is larger than this route takes (${formatBytes(limitBytes)}).`,
    hint: `Send a body of at most ${formatBytes(limitBytes)}; page through large imports.`,
  });
}

/** 1048576 → "1 MB", 204800 → "200 KB", 1000 → "1000 bytes" (the units body size limits are set in). */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KB`;
  return `${bytes} bytes`;
}

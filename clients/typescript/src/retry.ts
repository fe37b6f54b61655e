/** When to try again: Retry-After, then the RateLimit headers, then an exponential backoff. */

/** Seconds the `Retry-After` header asks for (delta-seconds or an HTTP date), or undefined. */
function retryAfterMs(headers: Headers, now: number): number | undefined {
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && value.trim() !== '') return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Milliseconds until an exhausted budget resets, or undefined when none is exhausted: the `RateLimit`
 * field (`"ip";r=0;t=42, "cred";r=57;t=42`, every budget) first, the `RateLimit-Remaining` and
 * `RateLimit-Reset` pair (the tighter budget) otherwise. Both count seconds, not epoch times.
 */
export function exhaustedForMs(headers: Headers): number | undefined {
  const field = headers.get('ratelimit');
  if (field !== null) {
    let wait: number | undefined;
    for (const item of field.split(',')) {
      const r = /;\s*r=(\d+)/.exec(item);
      const t = /;\s*t=(\d+)/.exec(item);
      if (r && t && Number(r[1]) === 0) wait = Math.max(wait ?? 0, Number(t[1]) * 1000);
    }
    return wait;
  }
  const remaining = headers.get('ratelimit-remaining') ?? headers.get('x-ratelimit-remaining');
  const reset = headers.get('ratelimit-reset') ?? headers.get('x-ratelimit-reset');
  return remaining !== null && Number(remaining) === 0 && reset !== null ? Number(reset) * 1000 : undefined;
}

/** The wait before attempt `attempt + 1`: what the answer asks for, or 0.5 s doubling (with jitter) up to 8 s. */
export function retryDelayMs(headers: Headers | undefined, attempt: number, now = Date.now()): number {
  const asked = headers && (retryAfterMs(headers, now) ?? exhaustedForMs(headers));
  if (asked !== undefined) return asked;
  const backoff = Math.min(8000, 500 * 2 ** (attempt - 1));
  return backoff / 2 + Math.random() * (backoff / 2);
}

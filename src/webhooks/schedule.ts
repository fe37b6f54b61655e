/**
 * The retry schedule. With the default base of 5 s, the delays after each failed attempt are
 * 5 s, 20 s, 80 s, 5 min 20 s, 21 min 20 s, 1 h 25 min, 5 h 41 min, 8 h and 8 h (×4 each time,
 * at most 8 h), each stretched or shrunk by up to 20% at random (jitter), so endpoints that
 * failed together are not all retried together. That is 10 attempts over about 23.6 hours.
 * WEBHOOKS_RETRY_BASE_MS scales the whole schedule (tests use milliseconds).
 */
export const MAX_ATTEMPTS = 10;
const FACTOR = 4;
/** The longest delay, as a multiple of the base: 8 h for a 5 s base. */
const CAP_MULTIPLE = 5760;
const JITTER = 0.2;
/** A Retry-After longer than this is not waited for (the next attempt comes at the schedule's delay or this). */
export const MAX_RETRY_AFTER_MS = 8 * 3600_000;

/** The delay before the next attempt after `attempt` (1-based) failed, without jitter; null when none is left. */
export function baseDelayMs(attempt: number, baseMs: number): number | null {
  if (attempt >= MAX_ATTEMPTS) return null;
  return Math.min(baseMs * FACTOR ** (attempt - 1), baseMs * CAP_MULTIPLE);
}

/** The delay before the next attempt, with jitter and the endpoint's Retry-After (when it asks for longer). */
export function nextDelayMs(
  attempt: number,
  baseMs: number,
  retryAfterMs: number | null,
  random = Math.random,
): number | null {
  const base = baseDelayMs(attempt, baseMs);
  if (base === null) return null;
  const jittered = Math.round(base * (1 - JITTER + 2 * JITTER * random()));
  return retryAfterMs === null ? jittered : Math.max(jittered, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}

/** Retry-After in milliseconds: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

import { baseDelayMs, MAX_ATTEMPTS, nextDelayMs, parseRetryAfter } from './schedule';

describe('webhook retry schedule', () => {
  it('retries for about a day with the default 5 s base (the schedule docs/webhooks.md documents)', () => {
    const delays: number[] = [];
    for (let a = 1; a < MAX_ATTEMPTS; a++) delays.push(baseDelayMs(a, 5000)!);
    expect(delays.map((d) => d / 1000)).toEqual([5, 20, 80, 320, 1280, 5120, 20480, 28800, 28800]);
    const hours = delays.reduce((s, d) => s + d, 0) / 3600_000;
    expect(hours).toBeGreaterThan(20);
    expect(hours).toBeLessThan(28);
    expect(baseDelayMs(MAX_ATTEMPTS, 5000)).toBeNull();
  });

  it('adds up to 20% of jitter either way', () => {
    expect(nextDelayMs(2, 5000, null, () => 0)).toBe(16000);
    expect(nextDelayMs(2, 5000, null, () => 1)).toBe(24000);
  });

  it('waits at least what Retry-After asks, up to 8 hours', () => {
    expect(nextDelayMs(1, 5000, 120_000, () => 0.5)).toBe(120_000);
    expect(nextDelayMs(1, 5000, 1000, () => 0.5)).toBe(5000);
    expect(nextDelayMs(1, 5000, 48 * 3600_000, () => 0.5)).toBe(8 * 3600_000);
  });

  it('reads Retry-After as seconds or as an HTTP-date', () => {
    expect(parseRetryAfter('120')).toBe(120_000);
    expect(parseRetryAfter('Wed, 21 Oct 2026 07:28:00 GMT', Date.parse('Wed, 21 Oct 2026 07:27:00 GMT'))).toBe(60_000);
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(undefined)).toBeNull();
  });
});

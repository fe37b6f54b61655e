import { solveChallenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import type { AppConfig } from '../../config/config';
import type { FormRecord } from '../../forms/forms.service';
import type { RateLimitService } from '../../rate-limit/rate-limit.service';
import type { SessionsService } from '../../settings/sessions.service';
import { SpamGate } from './spam-gate.service';

/** The gate with its keys in memory, a rate that passes when told, and an in-memory once-store. */
function gate(opts: { minFillMs?: number; passes?: boolean } = {}) {
  const used = new Set<string>();
  const sessions = { useNonce: async (n: string) => !used.has(n) && !!used.add(n) } as unknown as SessionsService;
  const rateLimit = { passesEither: async () => opts.passes ?? false } as unknown as RateLimitService;
  const config = { spam: { minFillMs: opts.minFillMs ?? 1000, formPostsPerMin: 1, ipPostsPerMin: 1 } } as AppConfig;
  const g = new SpamGate(undefined as never, rateLimit, sessions, config);
  (g as unknown as { keys: unknown }).keys = Promise.resolve({ challenge: 'k1'.repeat(16), key: 'k2'.repeat(16) });
  return g;
}
const form = (spamProtection: FormRecord['spamProtection'], id = '0190b6f2-7c1e-7a00-8000-000000000001') =>
  ({ id, spamProtection }) as FormRecord;
const long = Date.now() - 60_000;

async function solvedFor(g: SpamGate, f: FormRecord): Promise<string> {
  const challenge = await g.challenge(f);
  const solution = await solveChallenge({ challenge, deriveKey });
  return Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
}

describe('SpamGate', () => {
  it('asks for the challenge always under always, never under off, under auto when a rate passes', async () => {
    expect(await gate().needsChallenge(form('always'), '1.2.3.4')).toBe(true);
    expect(await gate({ passes: true }).needsChallenge(form('off'), '1.2.3.4')).toBe(false);
    expect(await gate().needsChallenge(form('auto'), '1.2.3.4')).toBe(false);
    expect(await gate({ passes: true }).needsChallenge(form('auto'), '1.2.3.4')).toBe(true);
  });

  it('judges the honeypot, then the time, then the challenge; off judges nothing', async () => {
    const g = gate();
    const post = { honeypot: '', startedAt: long, payload: undefined, challenge: false };
    expect(await g.judge(form('auto'), post)).toBeUndefined();
    expect(await g.judge(form('auto'), { ...post, honeypot: ['', 'http://x'] })).toBe('honeypot');
    expect(await g.judge(form('auto'), { ...post, startedAt: Date.now() })).toBe('too_fast');
    expect(await g.judge(form('auto'), { ...post, startedAt: undefined })).toBe('too_fast');
    expect(await g.judge(form('auto'), { ...post, earlier: 'honeypot' })).toBe('honeypot');
    expect(await g.judge(form('auto'), { ...post, challenge: true })).toBe('no_challenge');
    expect(await g.judge(form('auto'), { ...post, challenge: true, payload: 'e30=' })).toBe('bad_challenge');
    expect(
      await g.judge(form('off'), { ...post, honeypot: 'x', startedAt: undefined, challenge: true }),
    ).toBeUndefined();
    expect(await gate({ minFillMs: 0 }).judge(form('auto'), { ...post, startedAt: undefined })).toBeUndefined();
  });

  it('takes a solution once, for its own form only, and not once it expired', async () => {
    const g = gate();
    const f = form('always');
    const payload = await solvedFor(g, f);
    const post = { honeypot: '', startedAt: long, payload, challenge: true };
    expect(await g.judge(form('always', '0190b6f2-7c1e-7a00-8000-000000000002'), post)).toBe('bad_challenge');
    expect(await g.judge(f, post)).toBeUndefined();
    expect(await g.judge(f, post)).toBe('replayed');

    const later = await solvedFor(g, f);
    jest.useFakeTimers({ now: Date.now() + 21 * 60_000 });
    try {
      expect(await g.verify(f, later)).toBeUndefined();
    } finally {
      jest.useRealTimers();
    }
    expect(await g.verify(f, later)).toBeDefined();
  });
});

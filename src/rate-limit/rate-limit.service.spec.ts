import type { AppConfig } from '../config/config';
import { FixedWindowThrottlerStorage } from './fixed-window.storage';
import { BudgetState, HeaderTarget, RateLimitService, tighter } from './rate-limit.service';

const config = { rateLimit: { credentialPerMin: 2, ipPerMin: 3, enabled: true } } as AppConfig;

function budget(partial: Partial<BudgetState>): BudgetState {
  return { name: 'ip', limit: 10, remaining: 5, resetSeconds: 30, exceeded: false, ...partial };
}

/** A response that records the headers set on it. */
function fakeResponse() {
  const headers: Record<string, string> = {};
  const res = { setHeader: jest.fn((name: string, value: string) => void (headers[name] = value)) };
  return { res: res as HeaderTarget, headers, setHeader: res.setHeader };
}

describe('RateLimitService', () => {
  let storage: FixedWindowThrottlerStorage;
  let service: RateLimitService;

  beforeEach(() => {
    jest.useFakeTimers().setSystemTime(new Date('2026-05-01T12:00:00.000Z'));
    storage = new FixedWindowThrottlerStorage();
    service = new RateLimitService(storage, config);
  });

  afterEach(() => {
    storage.onModuleDestroy();
    jest.useRealTimers();
  });

  describe("passesEither (the spam gate's rates, issue 47)", () => {
    it('says when either key passes its limit, counting even with budgets off, windows per key', async () => {
      const off = new RateLimitService(storage, { rateLimit: { ...config.rateLimit, enabled: false } } as AppConfig);
      const seen = [];
      for (let i = 0; i < 3; i++) seen.push(await off.passesEither(['form:a', 2], ['ip:x', 5]));
      expect(seen).toEqual([false, false, true]); // the form's third post in the minute
      // ip:x's third counted hit: the form's refusal above did not spend it.
      expect(await off.passesEither(['form:b', 2], ['ip:x', 2])).toBe(true);
      expect(await off.passesEither(['form:b', 2], ['ip:y', 3])).toBe(false);
      jest.advanceTimersByTime(60_000);
      expect(await off.passesEither(['form:a', 2], ['ip:x', 3])).toBe(false); // a new minute
    });
  });

  describe('consume', () => {
    it('counts down the credential budget and marks it exceeded past its limit', async () => {
      const states = [];
      for (let i = 0; i < 4; i++) states.push(await service.consume('credential', 'tok_1'));
      expect(states.map((s) => [s!.limit, s!.remaining, s!.exceeded])).toEqual([
        [2, 1, false],
        [2, 0, false],
        [2, 0, true],
        [2, 0, true],
      ]);
      expect(states[0]!.name).toBe('credential');
      expect(states[0]!.resetSeconds).toBe(60);
    });

    it('uses the IP limit for the ip budget', async () => {
      const state = await service.consume('ip', '203.0.113.9');
      expect(state).toMatchObject({ name: 'ip', limit: 3, remaining: 2, exceeded: false });
    });

    it('keeps the ip and credential budgets of the same key apart, and keys apart', async () => {
      await service.consume('credential', 'k');
      await service.consume('credential', 'k');
      expect((await service.consume('ip', 'k'))!.remaining).toBe(2);
      expect((await service.consume('credential', 'other'))!.remaining).toBe(1);
    });

    it('gives the full budget back after a minute', async () => {
      for (let i = 0; i < 3; i++) await service.consume('credential', 'tok_1');
      jest.advanceTimersByTime(60_000);
      expect(await service.consume('credential', 'tok_1')).toMatchObject({ remaining: 1, exceeded: false });
    });
  });

  describe('when turned off (RATE_LIMIT_ENABLED=false)', () => {
    it('counts nothing and reports the counting as off', async () => {
      const off = new RateLimitService(storage, {
        rateLimit: { credentialPerMin: 2, ipPerMin: 3, enabled: false },
      } as AppConfig);
      const increment = jest.spyOn(storage, 'increment');
      expect(await off.consume('ip', '203.0.113.9')).toBeUndefined();
      expect(increment).not.toHaveBeenCalled();
      expect(await off.storeHealth()).toEqual({ counting: 'off', redis: 'not configured' });
    });
  });

  describe('storeHealth', () => {
    it('is per instance without Redis', async () => {
      expect(await service.storeHealth()).toEqual({ counting: 'per instance', redis: 'not configured' });
    });
  });

  describe('writeHeaders', () => {
    it('sets RateLimit-* and X-RateLimit-* to the same values', () => {
      const { res, headers } = fakeResponse();
      service.writeHeaders(res, [budget({ limit: 120, remaining: 7, resetSeconds: 42 })]);
      expect(headers).toEqual({
        'RateLimit-Policy': '"ip";q=120;w=60',
        RateLimit: '"ip";r=7;t=42',
        'RateLimit-Limit': '120',
        'RateLimit-Remaining': '7',
        'RateLimit-Reset': '42',
        'X-RateLimit-Limit': '120',
        'X-RateLimit-Remaining': '7',
        'X-RateLimit-Reset': '42',
      });
    });

    it('shows the tighter of the two budgets', () => {
      const { res, headers } = fakeResponse();
      const ip = budget({ name: 'ip', limit: 240, remaining: 200, resetSeconds: 10 });
      const credential = budget({ name: 'credential', limit: 120, remaining: 3, resetSeconds: 50 });
      service.writeHeaders(res, [ip, credential]);
      expect(headers['RateLimit-Limit']).toBe('120');
      expect(headers['RateLimit-Remaining']).toBe('3');
      expect(headers['X-RateLimit-Reset']).toBe('50');
    });

    it('lists both budgets in RateLimit-Policy and RateLimit, one item each', () => {
      const { res, headers } = fakeResponse();
      const ip = budget({ name: 'ip', limit: 240, remaining: 200, resetSeconds: 10 });
      const credential = budget({ name: 'credential', limit: 120, remaining: 3, resetSeconds: 50 });
      service.writeHeaders(res, [ip, credential]);
      expect(headers['RateLimit-Policy']).toBe('"ip";q=240;w=60, "cred";q=120;w=60');
      expect(headers.RateLimit).toBe('"ip";r=200;t=10, "cred";r=3;t=50');
    });

    it('sets nothing when there is no budget', () => {
      const { res, setHeader } = fakeResponse();
      service.writeHeaders(res, [undefined, undefined]);
      expect(setHeader).not.toHaveBeenCalled();
    });
  });

  describe('rateLimited', () => {
    it('is a 429 rate_limited error with Retry-After set to the seconds until reset', () => {
      const e = service.rateLimited(budget({ name: 'credential', limit: 120, resetSeconds: 17, exceeded: true }));
      expect(e.code).toBe('rate_limited');
      expect(e.status).toBe(429);
      expect(e.headers).toEqual({ 'Retry-After': '17' });
      expect(e.message).toContain('120');
    });
  });
});

describe('tighter', () => {
  it('picks the budget with fewer requests remaining, in either order', () => {
    const a = budget({ name: 'ip', remaining: 9 });
    const b = budget({ name: 'credential', remaining: 2 });
    expect(tighter([a, b])).toBe(b);
    expect(tighter([b, a])).toBe(b);
  });

  it('on a tie, picks the one that resets later', () => {
    const soon = budget({ name: 'ip', remaining: 0, resetSeconds: 5 });
    const late = budget({ name: 'credential', remaining: 0, resetSeconds: 55 });
    expect(tighter([soon, late])).toBe(late);
    expect(tighter([late, soon])).toBe(late);
  });

  it('ignores missing budgets and gives undefined when there are none', () => {
    const only = budget({});
    expect(tighter([undefined, only])).toBe(only);
    expect(tighter([])).toBeUndefined();
    expect(tighter([undefined])).toBeUndefined();
  });
});

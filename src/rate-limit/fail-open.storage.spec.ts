import { Logger } from '@nestjs/common';
import { FailOpenThrottlerStorage, SharedThrottlerStorage } from './fail-open.storage';
import { FixedWindowThrottlerStorage } from './fixed-window.storage';

/** A shared store that can be switched off, counting calls. */
class FakeShared implements SharedThrottlerStorage {
  up = true;
  hits = 0;
  pings = 0;
  private readonly local = new FixedWindowThrottlerStorage();

  async increment(key: string, ttl: number, limit: number, block: number, name: string) {
    if (!this.up) throw new Error('connect ECONNREFUSED');
    this.hits++;
    return this.local.increment(`shared:${key}`, ttl, limit, block, name);
  }

  async incrementPair(first: string, second: string, ttl: number, firstLimit: number, secondLimit: number) {
    if (!this.up) throw new Error('connect ECONNREFUSED');
    this.hits++;
    return this.local.incrementPair(`shared:${first}`, `shared:${second}`, ttl, firstLimit, secondLimit);
  }

  async ping() {
    this.pings++;
    if (!this.up) throw new Error('connect ECONNREFUSED');
  }

  stop() {
    this.local.onModuleDestroy();
  }
}

describe('FailOpenThrottlerStorage', () => {
  let shared: FakeShared;
  let local: FixedWindowThrottlerStorage;
  let storage: FailOpenThrottlerStorage;
  let warn: jest.SpyInstance;
  let log: jest.SpyInstance;
  const hit = (key = 'k') => storage.increment(key, 60_000, 5, 0, 'ip');

  beforeEach(() => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] }).setSystemTime(new Date('2026-05-01T12:00:00Z'));
    shared = new FakeShared();
    local = new FixedWindowThrottlerStorage();
    storage = new FailOpenThrottlerStorage(shared, local, 1_000);
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });

  afterEach(() => {
    shared.stop();
    local.onModuleDestroy();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('counts in the shared store while it answers', async () => {
    await hit();
    await hit();
    expect(shared.hits).toBe(2);
    expect(storage.health()).toEqual({ store: 'redis', state: 'ok' });
  });

  it('keeps answering from per-instance counters when the shared store fails, and says so once', async () => {
    await hit();
    shared.up = false;
    const records = [await hit(), await hit(), await hit()];
    expect(records.map((r) => r.totalHits)).toEqual([1, 2, 3]); // a fresh local window
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][0]).toContain('ECONNREFUSED');
    expect(storage.health()).toMatchObject({
      store: 'in-process',
      state: 'degraded',
      since: '2026-05-01T12:00:00.000Z',
    });
  });

  it('counts both budgets of a request in one call to the shared store, and locally while it is down', async () => {
    const pair = () => storage.incrementPair('ip', 'cred', 60_000, 5, 2);
    expect((await pair()).second?.totalHits).toBe(1);
    expect(shared.hits).toBe(1);
    shared.up = false;
    const local1 = await pair();
    expect([local1.first.totalHits, local1.second?.totalHits]).toEqual([1, 1]); // fresh local windows
    expect(storage.health().state).toBe('degraded');
  });

  it('does not make requests wait on a store it knows is down: at most one probe a second', async () => {
    shared.up = false;
    await hit();
    for (let i = 0; i < 50; i++) await hit();
    expect(shared.pings).toBe(0);
    jest.advanceTimersByTime(1_000);
    for (let i = 0; i < 50; i++) await hit();
    expect(shared.pings).toBe(1);
  });

  it('goes back to the shared store when a probe succeeds, and logs it', async () => {
    shared.up = false;
    await hit();
    shared.up = true;
    jest.advanceTimersByTime(1_500);
    await hit(); // starts the probe; this hit is still counted locally
    await Promise.resolve();
    await Promise.resolve();
    expect(storage.health().state).toBe('ok');
    expect(log.mock.calls.some(([m]) => String(m).includes('back'))).toBe(true);
    const before = shared.hits;
    await hit();
    expect(shared.hits).toBe(before + 1);
  });

  it('probe() switches either way at once (start-up, readiness checks)', async () => {
    shared.up = false;
    await storage.probe();
    expect(storage.health().state).toBe('degraded');
    shared.up = true;
    await storage.probe();
    expect(storage.health().state).toBe('ok');
  });
});

import { FixedWindowThrottlerStorage } from './fixed-window.storage';

const MINUTE = 60_000;
const START = new Date('2026-05-01T12:00:00.000Z');

describe('FixedWindowThrottlerStorage', () => {
  let storage: FixedWindowThrottlerStorage;

  beforeEach(() => {
    jest.useFakeTimers().setSystemTime(START);
    storage = new FixedWindowThrottlerStorage();
  });

  afterEach(() => {
    storage.onModuleDestroy();
    jest.useRealTimers();
  });

  const hit = (key: string, limit = 3, ttl = MINUTE) => storage.increment(key, ttl, limit, 0, 'test');

  it('counts hits per key', async () => {
    expect((await hit('a')).totalHits).toBe(1);
    expect((await hit('a')).totalHits).toBe(2);
    expect((await hit('a')).totalHits).toBe(3);
  });

  it('is not blocked up to the limit and blocked after it', async () => {
    const records = [];
    for (let i = 0; i < 5; i++) records.push(await hit('a', 3));
    expect(records.map((r) => r.isBlocked)).toEqual([false, false, false, true, true]);
    expect(records[3].timeToBlockExpire).toBeGreaterThan(0);
    expect(records[0].timeToBlockExpire).toBe(0);
  });

  it('keeps keys independent', async () => {
    for (let i = 0; i < 4; i++) await hit('a', 3);
    const b = await hit('b', 3);
    expect(b.totalHits).toBe(1);
    expect(b.isBlocked).toBe(false);
    expect((await hit('a', 3)).isBlocked).toBe(true);
  });

  it('reports the seconds left in the window', async () => {
    expect((await hit('a')).timeToExpire).toBe(60);
    jest.setSystemTime(START.getTime() + 20_500);
    expect((await hit('a')).timeToExpire).toBe(40);
    jest.setSystemTime(START.getTime() + MINUTE - 1);
    expect((await hit('a')).timeToExpire).toBe(1);
  });

  it('is a fixed window: hits later in the window do not extend it', async () => {
    await hit('a');
    jest.setSystemTime(START.getTime() + 59_000);
    await hit('a');
    jest.setSystemTime(START.getTime() + MINUTE);
    expect((await hit('a')).totalHits).toBe(1);
  });

  it('starts a fresh count once the window has passed, lifting the block', async () => {
    for (let i = 0; i < 4; i++) await hit('a', 3);
    jest.setSystemTime(START.getTime() + MINUTE - 1);
    expect((await hit('a', 3)).isBlocked).toBe(true);
    jest.setSystemTime(START.getTime() + MINUTE);
    const fresh = await hit('a', 3);
    expect(fresh.totalHits).toBe(1);
    expect(fresh.isBlocked).toBe(false);
    expect(fresh.timeToExpire).toBe(60);
  });

  it('the periodic sweep forgets finished windows but keeps running ones', async () => {
    await hit('old'); // window ends at START + 60s
    jest.advanceTimersByTime(30_000);
    await hit('live'); // window ends at START + 90s
    await hit('live');
    jest.advanceTimersByTime(30_000); // START + 60s: the sweep (every 60s) runs
    expect((await hit('old')).totalHits).toBe(1);
    expect((await hit('live')).totalHits).toBe(3);
  });
});

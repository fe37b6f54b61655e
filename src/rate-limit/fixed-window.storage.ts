/** Budgets counted per instance, in memory. */
import { OnModuleDestroy } from '@nestjs/common';
import type { BudgetStorage, PairRecord, ThrottlerStorageRecord } from './budget-storage';

/**
 * In-process counters behind @nestjs/throttler's storage contract: a fixed window per key, O(1) per
 * hit, the same semantics as the Redis storage (INCR + PEXPIRE) that replaces it when instances
 * share budgets. (Throttler's own in-memory store keeps a timestamp per hit and scans them on every
 * request, which costs too much at the rates the benchmarks run.)
 */
export class FixedWindowThrottlerStorage implements BudgetStorage, OnModuleDestroy {
  private readonly windows = new Map<string, { hits: number; resetAt: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(sweepEveryMs = 60_000) {
    this.sweeper = setInterval(() => this.sweep(), sweepEveryMs);
    this.sweeper.unref();
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    _blockDuration: number,
    _throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    const now = Date.now();
    let window = this.windows.get(key);
    if (!window || window.resetAt <= now) {
      window = { hits: 0, resetAt: now + ttl };
      this.windows.set(key, window);
    }
    window.hits += 1;
    const timeToExpire = Math.max(1, Math.ceil((window.resetAt - now) / 1000));
    const isBlocked = window.hits > limit;
    return { totalHits: window.hits, timeToExpire, isBlocked, timeToBlockExpire: isBlocked ? timeToExpire : 0 };
  }

  async incrementPair(
    firstKey: string,
    secondKey: string,
    ttl: number,
    firstLimit: number,
    secondLimit: number,
  ): Promise<PairRecord> {
    const first = await this.increment(firstKey, ttl, firstLimit, 0, '');
    if (first.isBlocked) return { first };
    return { first, second: await this.increment(secondKey, ttl, secondLimit, 0, '') };
  }

  private sweep(now = Date.now()) {
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
  }

  onModuleDestroy() {
    clearInterval(this.sweeper);
  }
}

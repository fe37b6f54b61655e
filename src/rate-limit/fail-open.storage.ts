/** Budgets counted in Redis, falling back to per-instance counters while Redis is unreachable. */
import { Logger } from '@nestjs/common';
import type { BudgetStorage, PairRecord, ThrottlerStorageRecord } from './budget-storage';
import { metrics } from '../observability/metrics';

/** A shared store (Redis) as FailOpenThrottlerStorage needs it: hits, and a cheap liveness probe. */
export interface SharedThrottlerStorage extends BudgetStorage {
  ping(timeoutMs: number): Promise<void>;
}

export interface RateLimitStoreHealth {
  /** Where budgets are counted now. */
  store: 'redis' | 'in-process';
  /** `degraded`: Redis is configured but unreachable, so each instance counts on its own. */
  state: 'ok' | 'degraded';
  /** Since when Redis has been unreachable (ISO date), while degraded. */
  since?: string;
}

/**
 * Counts in the shared store and, when it fails, keeps serving on per-instance counters (fail
 * open: a Redis outage must not take the API down; during it, each instance grants a full budget).
 * The switch is logged both ways. While degraded, requests do not wait on Redis: a probe, at most
 * one every `probeEveryMs`, finds out when it is back.
 */
export class FailOpenThrottlerStorage implements BudgetStorage {
  private readonly logger = new Logger('RateLimit');
  private degradedSince: number | undefined;
  private lastProbe = 0;
  private probing = false;

  constructor(
    private readonly shared: SharedThrottlerStorage,
    private readonly local: BudgetStorage,
    private readonly probeEveryMs = 1_000,
    private readonly probeTimeoutMs = 500,
  ) {}

  increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    return this.count((store) => store.increment(key, ttl, limit, blockDuration, throttlerName));
  }

  incrementPair(
    firstKey: string,
    secondKey: string,
    ttl: number,
    firstLimit: number,
    secondLimit: number,
  ): Promise<PairRecord> {
    return this.count((store) => store.incrementPair(firstKey, secondKey, ttl, firstLimit, secondLimit));
  }

  /** One hit, in the shared store while it answers, else (and while degraded) in the local one. */
  private async count<T>(hit: (store: BudgetStorage) => Promise<T>): Promise<T> {
    if (this.degradedSince === undefined) {
      try {
        return await hit(this.shared);
      } catch (err) {
        metrics.redisErrors.inc();
        this.degrade(err);
      }
    } else {
      this.probeSoon();
    }
    return hit(this.local);
  }

  health(): RateLimitStoreHealth {
    if (this.degradedSince === undefined) return { store: 'redis', state: 'ok' };
    return { store: 'in-process', state: 'degraded', since: new Date(this.degradedSince).toISOString() };
  }

  /** Checks Redis now (at start, and for readiness probes): switches to it or away from it. */
  async probe(): Promise<void> {
    try {
      await this.shared.ping(this.probeTimeoutMs);
      this.recover();
    } catch (err) {
      this.degrade(err);
    }
  }

  private degrade(err: unknown) {
    if (this.degradedSince !== undefined) return;
    this.degradedSince = Date.now();
    this.lastProbe = this.degradedSince;
    const why = err instanceof Error ? err.message : String(err);
    this.logger.warn(`Redis is unreachable (${why}): counting rate limits per instance until it is back`);
  }

  private recover() {
    if (this.degradedSince === undefined) return;
    const seconds = Math.round((Date.now() - this.degradedSince) / 1000);
    this.degradedSince = undefined;
    this.logger.log(`Redis is back after ${seconds} s: rate limits are shared by all instances again`);
  }

  private probeSoon() {
    const now = Date.now();
    if (this.probing || now - this.lastProbe < this.probeEveryMs) return;
    this.probing = true;
    this.lastProbe = now;
    this.shared
      .ping(this.probeTimeoutMs)
      .then(
        () => this.recover(),
        () => undefined,
      )
      .finally(() => (this.probing = false));
  }
}

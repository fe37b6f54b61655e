/** Budgets counted in Redis, shared by every instance. */
import Redis from 'ioredis';
import type { BudgetStorage, PairRecord, ThrottlerStorageRecord } from './budget-storage';

/**
 * One hit on a fixed window, atomically: the first hit of a window sets its expiry, and every hit
 * reads the time left. The same semantics as FixedWindowThrottlerStorage, shared by all instances.
 * (@nest-lab/throttler-storage-redis does not fit: it sends the script text with every call and
 * its block key cannot be set with our blockDuration of 0.)
 */
const HIT_SCRIPT = `
local hits = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return { hits, ttl }
`;

/**
 * Two budgets in one round trip (KEYS[1] the IP's, KEYS[2] the credential's): the first is counted
 * as above; the second only when the first is within its limit ARGV[2], so that a refusal by the
 * first does not spend the second. Returns { hits1, ttl1 } or { hits1, ttl1, hits2, ttl2 }.
 */
const HIT_PAIR_SCRIPT = `
local function hit(key)
  local hits = redis.call('INCR', key)
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then
    redis.call('PEXPIRE', key, ARGV[1])
    ttl = tonumber(ARGV[1])
  end
  return hits, ttl
end
local hits1, ttl1 = hit(KEYS[1])
if hits1 > tonumber(ARGV[2]) then
  return { hits1, ttl1 }
end
local hits2, ttl2 = hit(KEYS[2])
return { hits1, ttl1, hits2, ttl2 }
`;

type RedisWithHit = Redis & {
  formworkHit(key: string, ttlMs: number): Promise<[number, number]>;
  formworkHitPair(first: string, second: string, ttlMs: number, firstLimit: number): Promise<number[]>;
};

function record(hits: number, ttlMs: number, limit: number): ThrottlerStorageRecord {
  const timeToExpire = Math.max(1, Math.ceil(ttlMs / 1000));
  const isBlocked = hits > limit;
  return { totalHits: hits, timeToExpire, isBlocked, timeToBlockExpire: isBlocked ? timeToExpire : 0 };
}

/** Prefix of every key Formwork writes, so that a shared Redis stays readable. */
export const REDIS_KEY_PREFIX = 'formwork:';

/**
 * Budgets counted in Redis, so that every instance spends the same ones. Throws when Redis does
 * not answer; FailOpenThrottlerStorage decides what happens then.
 */
export class RedisThrottlerStorage implements BudgetStorage {
  private readonly redis: RedisWithHit;
  private lastError = 'not connected yet';

  constructor(redis: Redis) {
    // defineCommand sends EVALSHA (the script's text only once per connection, on NOSCRIPT).
    redis.defineCommand('formworkHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    redis.defineCommand('formworkHitPair', { numberOfKeys: 2, lua: HIT_PAIR_SCRIPT });
    // The client retries on its own and reports every failed attempt; the last one says why Redis is unreachable.
    redis.on('error', (err: Error) => (this.lastError = err.message));
    this.redis = redis as RedisWithHit;
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    _blockDuration: number,
    _throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    this.assertConnected();
    const [hits, ttlMs] = await this.redis.formworkHit(REDIS_KEY_PREFIX + key, ttl);
    return record(hits, ttlMs, limit);
  }

  async incrementPair(
    firstKey: string,
    secondKey: string,
    ttl: number,
    firstLimit: number,
    secondLimit: number,
  ): Promise<PairRecord> {
    this.assertConnected();
    const [hits1, ttl1, hits2, ttl2] = await this.redis.formworkHitPair(
      REDIS_KEY_PREFIX + firstKey,
      REDIS_KEY_PREFIX + secondKey,
      ttl,
      firstLimit,
    );
    const first = record(hits1, ttl1, firstLimit);
    return hits2 === undefined ? { first } : { first, second: record(hits2, ttl2, secondLimit) };
  }

  /** Resolves when Redis answers a PING within `timeoutMs`. */
  async ping(timeoutMs: number): Promise<void> {
    this.assertConnected();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.redis.ping(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private assertConnected() {
    if (this.redis.status !== 'ready') throw new Error(`${this.redis.status}: ${this.lastError}`);
  }
}

/**
 * The client for the budgets: it never queues commands while disconnected and gives up on a
 * command after `commandTimeoutMs`, so that a Redis outage costs a request a few milliseconds,
 * not a hang; it keeps reconnecting in the background (at most every 2 s).
 */
export function createRedisClient(url: string, commandTimeoutMs = 500): Redis {
  return new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    connectTimeout: 2_000,
    disconnectTimeout: 200,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    enableAutoPipelining: true,
  });
}

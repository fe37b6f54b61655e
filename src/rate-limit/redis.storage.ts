/** Budgets counted in Redis, shared by every instance. */
import Redis, { Cluster } from 'ioredis';
import type { RedisClusterSettings } from '../config/config';
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
 * Takes back a hit counted on a budget that the request's other budget refused (see incrementPair):
 * only while its window lives, so an expired one is not recreated at -1.
 */
const REFUND_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('DECR', KEYS[1])
end
return 0
`;

/** One Redis, or a Redis Cluster (REDIS_CLUSTER_NODES): both take the same commands here. */
export type BudgetRedis = Redis | Cluster;

type RedisWithHit = BudgetRedis & {
  formworkHit(key: string, ttlMs: number): Promise<[number, number]>;
  formworkRefund(key: string): Promise<number>;
};

function record(hits: number, ttlMs: number, limit: number): ThrottlerStorageRecord {
  const timeToExpire = Math.max(1, Math.ceil(ttlMs / 1000));
  const isBlocked = hits > limit;
  return { totalHits: hits, timeToExpire, isBlocked, timeToBlockExpire: isBlocked ? timeToExpire : 0 };
}

/** Prefix of every key Formwork writes, so that a shared Redis stays readable. */
export const REDIS_KEY_PREFIX = 'formwork:';

/**
 * A budget's key in Redis: the budget's name is its hash tag (`formwork:{rl:credential:<key>}`), so
 * each budget's counter has one slot on a Redis Cluster and different budgets spread over the nodes.
 */
export function budgetRedisKey(key: string): string {
  return `${REDIS_KEY_PREFIX}{${key}}`;
}

/**
 * Budgets counted in Redis, so that every instance spends the same ones. Throws when Redis does
 * not answer; FailOpenThrottlerStorage decides what happens then.
 */
export class RedisThrottlerStorage implements BudgetStorage {
  private readonly redis: RedisWithHit;
  private lastError = 'not connected yet';

  constructor(redis: BudgetRedis) {
    // defineCommand sends EVALSHA (the script's text only once per connection, on NOSCRIPT).
    redis.defineCommand('formworkHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    redis.defineCommand('formworkRefund', { numberOfKeys: 1, lua: REFUND_SCRIPT });
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
    const [hits, ttlMs] = await this.redis.formworkHit(budgetRedisKey(key), ttl);
    return record(hits, ttlMs, limit);
  }

  /**
   * Both budgets at once, one script call per budget (their keys live on different slots of a
   * cluster), sent together (auto-pipelining: one write per node). When the first refuses, the
   * second's hit is taken back, so that an IP refusal does not spend the credential's budget.
   */
  async incrementPair(
    firstKey: string,
    secondKey: string,
    ttl: number,
    firstLimit: number,
    secondLimit: number,
  ): Promise<PairRecord> {
    const [first, second] = await Promise.all([
      this.increment(firstKey, ttl, firstLimit, 0, ''),
      this.increment(secondKey, ttl, secondLimit, 0, ''),
    ]);
    if (!first.isBlocked) return { first, second };
    // Best effort: the refusal stands whatever happens to the refund.
    await this.redis.formworkRefund(budgetRedisKey(secondKey)).catch(() => undefined);
    return { first };
  }

  /** Resolves when Redis answers a PING within `timeoutMs`. */
  async ping(timeoutMs: number): Promise<void> {
    this.assertConnected();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      // On a cluster every master must answer: budgets are back only when all their slots are.
      const nodes = this.redis instanceof Cluster ? this.redis.nodes('master') : [this.redis];
      if (nodes.length === 0) throw new Error('no master known');
      await Promise.race([Promise.all(nodes.map((n) => n.ping())), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private assertConnected() {
    if (this.redis.status !== 'ready') throw new Error(`${this.redis.status}: ${this.lastError}`);
  }
}

/** How the budgets' client behaves, single or cluster: fail fast, never queue, never resend. */
function clientOptions(commandTimeoutMs: number) {
  return {
    enableOfflineQueue: false,
    // A command is sent once: one that may have run (a connection lost after sending) is not
    // retried, so that a hit is never counted twice.
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    connectTimeout: 2_000,
    disconnectTimeout: 200,
  };
}

/**
 * The client for the budgets: it never queues commands while disconnected and gives up on a
 * command after `commandTimeoutMs`, so that a Redis outage costs a request a few milliseconds,
 * not a hang; it keeps reconnecting in the background (at most every 2 s).
 */
export function createRedisClient(url: string, commandTimeoutMs = 500): Redis {
  return new Redis(url, {
    ...clientOptions(commandTimeoutMs),
    lazyConnect: true,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    enableAutoPipelining: true,
  });
}

/**
 * The same on a Redis Cluster (REDIS_CLUSTER_NODES). A command on a slot whose master is down
 * fails at once (the budgets fail open); the slots are refreshed every second, so a promoted
 * replica takes its master's slots within a second of the failover. Redirections (MOVED, ASK) and
 * TRYAGAIN are followed: the command did not run (not so in an auto-pipelined batch, ioredis #2075,
 * hence none). A lost connection or CLUSTERDOWN is not retried.
 */
export function createRedisClusterClient(settings: RedisClusterSettings, commandTimeoutMs = 500): Cluster {
  return new Cluster(settings.nodes, {
    lazyConnect: true,
    enableOfflineQueue: false,
    // Each command written at once: a pair's two nodes answer 17% sooner than after auto-pipelining's
    // setImmediate (the same at 8 in flight), and a redirection is followed for every command.
    enableAutoPipelining: false,
    scaleReads: 'master',
    retryDelayOnFailover: 0,
    retryDelayOnClusterDown: 0,
    slotsRefreshInterval: 1_000,
    slotsRefreshTimeout: 1_000,
    clusterRetryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    // Managed clusters with TLS (ElastiCache) give certificates for their host names, not addresses.
    dnsLookup: settings.tls ? (address, callback) => callback(null, address) : undefined,
    redisOptions: {
      ...clientOptions(commandTimeoutMs),
      username: settings.username,
      password: settings.password,
      tls: settings.tls ? {} : undefined,
    },
  });
}

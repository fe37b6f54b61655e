/**
 * Request budgets per IP and per credential: counted in Redis when configured (shared by every instance),
 * per instance otherwise or while Redis is down; the credential budget's guard and the Redis connection.
 */
import { Inject, Injectable, Logger, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import { APP_CONFIG, AppConfig } from '../config/config';
import { CredentialRateLimitGuard } from './credential-rate-limit.guard';
import { FailOpenThrottlerStorage } from './fail-open.storage';
import { FixedWindowThrottlerStorage } from './fixed-window.storage';
import { RateLimitService } from './rate-limit.service';
import { BudgetRedis, createRedisClient, createRedisClusterClient, RedisThrottlerStorage } from './redis.storage';

/** The Redis client of the budgets (one Redis or a cluster), or null when neither REDIS_URL nor REDIS_CLUSTER_NODES is set (in-process counters). */
export const RATE_LIMIT_REDIS = Symbol('RATE_LIMIT_REDIS');
const LOCAL_STORAGE = Symbol('LOCAL_STORAGE');

/** Connects to Redis at start (without failing start-up when it is down) and disconnects last at shutdown. */
@Injectable()
class RedisConnection implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('RateLimit');

  constructor(
    @Inject(RATE_LIMIT_REDIS) private readonly redis: BudgetRedis | null,
    @Inject(ThrottlerStorage) private readonly storage: ThrottlerStorage,
  ) {}

  async onModuleInit() {
    if (!this.redis) return;
    // Outages are reported once by the storage when it switches; the client's own errors repeat on every retry.
    this.redis.on('error', (err: Error) => this.logger.debug(`Redis client: ${err.message}`));
    const storage = this.storage instanceof FailOpenThrottlerStorage ? this.storage : undefined;
    this.redis.on('ready', () => void storage?.probe());
    await this.redis.connect().catch(() => undefined); // keeps reconnecting in the background
    await storage?.probe();
  }

  async onApplicationShutdown() {
    if (!this.redis) return;
    await this.redis.quit().catch(() => this.redis?.disconnect());
  }
}

@Module({
  providers: [
    {
      provide: RATE_LIMIT_REDIS,
      useFactory: (config: AppConfig): BudgetRedis | null => {
        if (!config.rateLimit.enabled) return null;
        if (config.redisCluster) return createRedisClusterClient(config.redisCluster);
        return config.redisUrl ? createRedisClient(config.redisUrl) : null;
      },
      inject: [APP_CONFIG],
    },
    { provide: LOCAL_STORAGE, useFactory: () => new FixedWindowThrottlerStorage() },
    {
      provide: ThrottlerStorage,
      useFactory: (redis: BudgetRedis | null, local: FixedWindowThrottlerStorage) =>
        redis ? new FailOpenThrottlerStorage(new RedisThrottlerStorage(redis), local) : local,
      inject: [RATE_LIMIT_REDIS, LOCAL_STORAGE],
    },
    RedisConnection,
    RateLimitService,
    CredentialRateLimitGuard,
  ],
  exports: [RateLimitService, CredentialRateLimitGuard],
})
export class RateLimitModule {}

/** Liveness and readiness for the load balancer: /healthz, and /readyz (the database, and where rate limits are counted). */
import { Module } from '@nestjs/common';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { HealthController } from './health.controller';

@Module({
  imports: [RateLimitModule],
  controllers: [HealthController],
})
export class HealthModule {}

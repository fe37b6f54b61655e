/** Liveness and readiness for the load balancer: /healthz, and /readyz (the database, and where rate limits are counted). */
import { EmailModule } from '../email/email.module';
import { Module } from '@nestjs/common';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { HealthController } from './health.controller';

@Module({
  imports: [RateLimitModule, EmailModule],
  controllers: [HealthController],
})
export class HealthModule {}

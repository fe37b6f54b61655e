import { Module } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import { FixedWindowThrottlerStorage } from './fixed-window.storage';
import { CredentialRateLimitGuard } from './credential-rate-limit.guard';
import { RateLimitService } from './rate-limit.service';

@Module({
  providers: [{ provide: ThrottlerStorage, useFactory: () => new FixedWindowThrottlerStorage() }, RateLimitService, CredentialRateLimitGuard],
  exports: [RateLimitService, CredentialRateLimitGuard],
})
export class RateLimitModule {}

/**
 * Who may answer, how many, and when (issue 47): a form's schedule (opensAt, closesAt) and the spam
 * defence of its page. AccessService is the one way in for responses/, respondent/ and the tools;
 * SpamGate judges page posts, SpamResponses keeps those judged as spam.
 */
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { FormsModule } from '../forms/forms.module';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module';
import { AccessService } from './access.service';
import { SpamResponseEntity } from './entities/spam-response.entity';
import { SpamGate } from './spam/spam-gate.service';
import { SpamResponses } from './spam/spam-responses';

@Module({
  imports: [TypeOrmModule.forFeature([SpamResponseEntity]), FormsModule, WebhookOutboxModule, RateLimitModule],
  providers: [AccessService, SpamGate, SpamResponses],
  exports: [AccessService, SpamGate, SpamResponses],
})
export class AccessModule {}

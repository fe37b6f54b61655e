/**
 * Who may answer, how many, and when (issue 47): a form's schedule (opensAt, closesAt), its cap
 * and quotas (counted in response_limits).
 * AccessService is the one way in for responses/, respondent/ and the tools.
 */
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { FormsModule } from '../forms/forms.module';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module';
import { AccessService } from './access.service';
import { ResponseLimitEntity } from './entities/response-limit.entity';

@Module({
  imports: [TypeOrmModule.forFeature([ResponseLimitEntity]), FormsModule, WebhookOutboxModule],
  providers: [AccessService],
  exports: [AccessService],
})
export class AccessModule {}

/**
 * Who may answer, how many, and when (issue 47): today a form's schedule (opensAt, closesAt).
 * AccessService is the one way in for responses/, respondent/ and the tools.
 */
import { Module } from '@nestjs/common';
import { FormsModule } from '../forms/forms.module';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module';
import { AccessService } from './access.service';

@Module({
  imports: [FormsModule, WebhookOutboxModule],
  providers: [AccessService],
  exports: [AccessService],
})
export class AccessModule {}

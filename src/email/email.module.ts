/** Email (issue 48) on the request side: notification settings, the outbox log, unsubscribes, readiness. */
import { Module } from '@nestjs/common';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { EmailRepository } from './email.repository';
import { EmailService } from './email.service';

@Module({
  imports: [WebhooksModule],
  providers: [EmailRepository, EmailService],
  exports: [EmailService],
})
export class EmailModule {}

/** Email (issue 48) on the request side: notification settings, the outbox log, unsubscribes, readiness. */
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { EmailOutboxEntity } from './entities/email-outbox.entity';
import { EmailSubscriptionEntity } from './entities/email-subscription.entity';
import { EmailRepository } from './email.repository';
import { EmailService } from './email.service';

@Module({
  imports: [TypeOrmModule.forFeature([EmailOutboxEntity, EmailSubscriptionEntity]), WebhooksModule],
  providers: [EmailRepository, EmailService],
  exports: [EmailService],
})
export class EmailModule {}

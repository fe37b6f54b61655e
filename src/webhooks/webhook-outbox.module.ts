/**
 * The outbox and the webhooks' SQL (WebhooksRepository), so that forms and responses can emit
 * events without depending on the webhook tools (WebhooksModule imports this for the repository).
 */
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WebhookAttemptEntity } from './entities/webhook-attempt.entity';
import { WebhookDeliveryEntity } from './entities/webhook-delivery.entity';
import { WebhookEndpointEntity } from './entities/webhook-endpoint.entity';
import { WebhookOutbox } from './webhook-outbox.service';
import { WebhooksRepository } from './webhooks.repository';

@Module({
  imports: [TypeOrmModule.forFeature([WebhookEndpointEntity, WebhookDeliveryEntity, WebhookAttemptEntity])],
  providers: [WebhookOutbox, WebhooksRepository],
  exports: [WebhookOutbox, WebhooksRepository],
})
export class WebhookOutboxModule {}

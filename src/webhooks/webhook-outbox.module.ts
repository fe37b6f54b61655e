import { Module } from '@nestjs/common';
import { WebhookOutbox } from './webhook-outbox.service';
import { WebhooksRepository } from './webhooks.repository';

/**
 * The outbox and the webhooks' SQL, so that forms and responses can emit events without depending
 * on the webhook tools (WebhooksModule imports this for the repository).
 */
@Module({ providers: [WebhookOutbox, WebhooksRepository], exports: [WebhookOutbox, WebhooksRepository] })
export class WebhookOutboxModule {}

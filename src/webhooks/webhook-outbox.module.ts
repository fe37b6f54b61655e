/** The outbox alone, so that forms and responses can emit events without depending on the webhook tools. */
import { Module } from '@nestjs/common';
import { WebhookOutbox } from './webhook-outbox.service';

@Module({ providers: [WebhookOutbox], exports: [WebhookOutbox] })
export class WebhookOutboxModule {}

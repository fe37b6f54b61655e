import { Module } from '@nestjs/common';
import { WebhookOutbox } from './webhook-outbox.service';

/** The outbox alone, so that forms and responses can emit events without depending on the webhook tools. */
@Module({ providers: [WebhookOutbox], exports: [WebhookOutbox] })
export class WebhookOutboxModule {}

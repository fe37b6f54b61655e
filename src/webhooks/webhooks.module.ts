/** The webhook tools and the delivery loop. Events are written by WebhookOutboxModule, which forms and responses use. */
import { Module } from '@nestjs/common';
import { APP_CONFIG } from '../config/config';
import { FormsModule } from '../forms/forms.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { ResponsesModule } from '../responses/responses.module';
import { CreateWebhookTool } from './create-webhook.tool';
import { WebhookDeliveryWorker } from './delivery.worker';
import { DeleteWebhookTool } from './delete-webhook.tool';
import { ListWebhookDeliveriesTool } from './list-webhook-deliveries.tool';
import { ListWebhooksTool } from './list-webhooks.tool';
import { RedeliverWebhookTool } from './redeliver-webhook.tool';
import { RotateWebhookSecretTool } from './rotate-webhook-secret.tool';
import { WebhookSecretBox, webhookSecretBox } from './secret-box';
import { SendTestWebhookTool } from './send-test-webhook.tool';
import { UpdateWebhookTool } from './update-webhook.tool';
import { WebhookOutboxModule } from './webhook-outbox.module';
import { WebhooksService } from './webhooks.service';

@Module({
  imports: [FormsModule, ResponsesModule, WebhookOutboxModule, IdempotencyModule],
  providers: [
    { provide: WebhookSecretBox, useFactory: webhookSecretBox, inject: [APP_CONFIG] },
    WebhooksService,
    WebhookDeliveryWorker,
    CreateWebhookTool,
    ListWebhooksTool,
    UpdateWebhookTool,
    DeleteWebhookTool,
    RotateWebhookSecretTool,
    ListWebhookDeliveriesTool,
    RedeliverWebhookTool,
    SendTestWebhookTool,
  ],
  exports: [WebhookDeliveryWorker, WebhooksService, WebhookSecretBox],
})
export class WebhooksModule {}

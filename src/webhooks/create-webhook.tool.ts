import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { EventList, WEBHOOK_WRITE, WebhookDescription, WebhookUrl, WebhookWithSecretSchema } from './webhook.schemas';
import { WebhooksService } from './webhooks.service';

const input = Type.Object(
  { url: WebhookUrl, events: EventList, description: Type.Optional(WebhookDescription) },
  { additionalProperties: false },
);
const output = WebhookWithSecretSchema;

@Tool({
  name: 'create_webhook',
  title: 'Create a webhook endpoint',
  description:
    'Subscribes a URL to events of the workspace. Each event is POSTed as JSON { type, timestamp, data }, signed per Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature) with the secret in the answer.',
  ...WEBHOOK_WRITE,
  input,
  output,
  annotations: { openWorldHint: true },
})
export class CreateWebhookTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly webhooks: WebhooksService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.webhooks.create(ctx.principal, args);
  }
}

import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { EventList, WEBHOOK_WRITE, WebhookDescription, WebhookId, WebhookSchema, WebhookUrl } from './webhook.schemas';
import { WebhooksService } from './webhooks.service';

const input = Type.Object(
  {
    webhookId: WebhookId,
    url: Type.Optional(WebhookUrl),
    events: Type.Optional(EventList),
    enabled: Type.Optional(
      Type.Boolean({
        description:
          'false stops sending (events are no longer recorded for it); true resumes and clears the reason it was disabled.',
      }),
    ),
    description: Type.Optional(WebhookDescription),
  },
  { additionalProperties: false },
);
const output = WebhookSchema;

@Tool({
  name: 'update_webhook',
  title: 'Update a webhook endpoint',
  description:
    "Changes an endpoint's URL, events or description, or enables or disables it. Enabling an endpoint that Formwork disabled resumes its pending deliveries.",
  ...WEBHOOK_WRITE,
  input,
  output,
  annotations: { idempotentHint: true, openWorldHint: true },
})
export class UpdateWebhookTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly webhooks: WebhooksService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.webhooks.update(ctx.principal, args);
  }
}

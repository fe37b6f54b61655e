import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { DeliverySchema, EventType, WEBHOOK_WRITE, WebhookId } from './webhook.schemas';
import { WebhooksService } from './webhooks.service';

const input = Type.Object(
  {
    webhookId: WebhookId,
    event: Type.Optional(EventType),
    publicId: Type.Optional(PublicId),
  },
  { additionalProperties: false },
);
const output = DeliverySchema;

@Tool({
  name: 'send_test_webhook',
  title: 'Send a test webhook',
  description:
    'Sends one event (default response.created) to an endpoint, whatever it subscribes to, built from a form of the workspace (publicId, or the one changed last; its latest response or a sample) and marked "test": true. list_webhook_deliveries shows how the endpoint answered.',
  ...WEBHOOK_WRITE,
  input,
  output,
  annotations: { openWorldHint: true },
})
export class SendTestWebhookTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly webhooks: WebhooksService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return (await this.webhooks.sendTest(ctx.principal, args)) as Static<typeof output>;
  }
}

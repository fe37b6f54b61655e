import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { DeliveryId, DeliverySchema, WEBHOOK_WRITE } from './webhook.schemas';
import { WebhooksService } from './webhooks.service';

const input = Type.Object({ deliveryId: DeliveryId }, { additionalProperties: false });
const output = DeliverySchema;

@Tool({
  name: 'redeliver_webhook',
  title: 'Send a webhook delivery again',
  description:
    "Sends a delivery's event again with the same webhook-id (a receiver that has it can tell), on a fresh retry schedule, within a second or so; list_webhook_deliveries shows the attempt.",
  ...WEBHOOK_WRITE,
  input,
  output,
  annotations: { openWorldHint: true },
})
export class RedeliverWebhookTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly webhooks: WebhooksService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return (await this.webhooks.redeliver(ctx.principal, args.deliveryId)) as Static<typeof output>;
  }
}

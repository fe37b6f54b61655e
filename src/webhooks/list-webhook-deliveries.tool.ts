import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { pageArguments, pageFields } from '../tools/paging';
import { DeliverySchema, WEBHOOK_READ, WebhookId } from './webhook.schemas';
import { WebhooksService } from './webhooks.service';

const input = Type.Object(
  {
    webhookId: Type.Optional(WebhookId),
    status: Type.Optional(
      Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')], {
        description: 'Only deliveries in this state.',
      }),
    ),
    ...pageArguments(100, 20),
  },
  { additionalProperties: false },
);
const output = Type.Object({ ...pageFields, deliveries: Type.Array(DeliverySchema) }, { additionalProperties: false });

@Tool({
  name: 'list_webhook_deliveries',
  title: 'List webhook deliveries',
  description:
    'The delivery log of the last 30 days, newest first, for one endpoint or all: each delivery (one event for one endpoint) with its status, payload and every attempt.',
  ...WEBHOOK_READ,
  input,
  output,
})
export class ListWebhookDeliveriesTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly webhooks: WebhooksService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    const offset = args.offset ?? 0;
    const { total, deliveries } = await this.webhooks.deliveries(ctx.principal.workspace.id, {
      ...args,
      limit: args.limit ?? 20,
      offset,
    });
    return { total, offset, count: deliveries.length, deliveries: deliveries as Static<typeof output>['deliveries'] };
  }
}

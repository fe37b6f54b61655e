import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { DeliverySchema, WebhookId, webhookPageFields } from './webhook.schemas';
import { WebhooksService } from './webhooks.service';

const input = Type.Object(
  {
    webhookId: Type.Optional(WebhookId),
    status: Type.Optional(
      Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')], {
        description: 'Only deliveries in this state.',
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size, 1 to 100.' })),
    offset: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 1_000_000_000, default: 0, description: 'Start position of the page.' }),
    ),
  },
  { additionalProperties: false },
);
const output = Type.Object(
  { ...webhookPageFields, deliveries: Type.Array(DeliverySchema) },
  { additionalProperties: false },
);

@Tool({
  name: 'list_webhook_deliveries',
  title: 'List webhook deliveries',
  description:
    'The delivery log of the last 30 days, newest first, for one endpoint or all: each delivery (one event for one endpoint) with its status, payload and every attempt (time, HTTP status, duration, error, first 2 KB of the answer, next retry).',
  scope: 'webhooks:read',
  write: false,
  minRole: 'admin',
  input,
  output,
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
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

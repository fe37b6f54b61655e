import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { pageArguments, pageFields } from '../tools/paging';
import { WEBHOOK_READ, WebhookSchema } from './webhook.schemas';
import { WebhooksService } from './webhooks.service';

const input = Type.Object(pageArguments(100, 100), { additionalProperties: false });
const output = Type.Object(
  {
    ...pageFields,
    deliveriesPaused: Type.Boolean({
      description: 'True while the workspace is on the Free plan: events are kept and sent once it is Pro again.',
    }),
    webhooks: Type.Array(WebhookSchema),
  },
  { additionalProperties: false },
);

@Tool({
  name: 'list_webhooks',
  title: 'List webhook endpoints',
  description:
    'Lists the webhook endpoints of the workspace, oldest first, with their events and state; a disabled one says why (disabledReason). Secrets are never shown here.',
  ...WEBHOOK_READ,
  input,
  output,
})
export class ListWebhooksTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly webhooks: WebhooksService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    const offset = args.offset ?? 0;
    const { total, deliveriesPaused, webhooks } = await this.webhooks.list(ctx.principal.workspace.id, {
      limit: args.limit ?? 100,
      offset,
    });
    return { total, offset, count: webhooks.length, deliveriesPaused, webhooks };
  }
}

import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { WEBHOOK_WRITE, WebhookRef } from './webhook.schemas';
import { WebhooksService } from './webhooks.service';

const input = WebhookRef;
const output = Type.Object({ id: Type.String(), deleted: Type.Literal(true) }, { additionalProperties: false });

@Tool({
  name: 'delete_webhook',
  title: 'Delete a webhook endpoint',
  description: 'Deletes an endpoint with its delivery log; events not yet delivered to it are dropped.',
  ...WEBHOOK_WRITE,
  input,
  output,
  annotations: { destructiveHint: true },
})
export class DeleteWebhookTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly webhooks: WebhooksService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.webhooks.remove(ctx.principal, args.webhookId);
  }
}

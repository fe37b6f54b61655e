import { Static } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { WEBHOOK_WRITE, WebhookRef, WebhookWithSecretSchema } from './webhook.schemas';
import { WebhooksService } from './webhooks.service';

const input = WebhookRef;
const output = WebhookWithSecretSchema;

@Tool({
  name: 'rotate_webhook_secret',
  title: 'Rotate a webhook signing secret',
  description:
    'Gives the endpoint a new signing secret. For 24 hours the old secret signs too (webhook-signature carries both, space-separated), so the receiver can switch without losing an event.',
  ...WEBHOOK_WRITE,
  input,
  output,
})
export class RotateWebhookSecretTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly webhooks: WebhooksService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.webhooks.rotateSecret(ctx.principal, args.webhookId);
  }
}

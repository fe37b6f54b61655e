import { Injectable } from '@nestjs/common';
import type { Principal } from '../common/access/principal';
import { SCOPES } from '../common/access/roles';
import { ApiError } from '../common/errors/api-error';
import { ToolCallService } from '../tools/tool-call.service';
import type { WebhookEvent } from '../webhooks/events';
import { WebhookInput, WebhooksService, WebhookUpdate } from '../webhooks/webhooks.service';
import { Access, notFound, PageError } from './settings.service';

/** The fields of the page's "New endpoint" form, by the argument they fill. */
export const CREATE_FIELDS = ['url', 'events', 'description'] as const;

/**
 * What the settings Webhooks page does, as the signed-in person: each action passes the checks of
 * the tool that does the same over the API (plan, role and arguments: the same rules and
 * messages), then calls the WebhooksService method that tool calls, so the rules and the audit
 * records are the tools' own. The person acts with their role and every scope (a session is not
 * limited to scopes); audit records name them as a session, like the other settings actions.
 */
@Injectable()
export class WebhooksPageService {
  constructor(
    private readonly tools: ToolCallService,
    private readonly webhooks: WebhooksService,
  ) {}

  list(a: Access) {
    return this.asTool(a, 'list_webhooks', { limit: 100 }, (p, args: { limit: number; offset: number }) =>
      this.webhooks.list(p.workspace.id, args),
    );
  }

  /** One endpoint of the workspace (there are at most 20), or 404. */
  async endpoint(a: Access, webhookId: string) {
    const found = (await this.list(a)).webhooks.find((w) => w.id === webhookId);
    if (!found) throw notFound();
    return found;
  }

  deliveries(a: Access, webhookId: string, opts: { status?: string; limit: number; offset: number }) {
    return this.asTool(a, 'list_webhook_deliveries', { webhookId, ...opts }, (p, args: typeof opts) =>
      this.webhooks.deliveries(p.workspace.id, { webhookId, ...args }),
    );
  }

  /** Throws ApiError invalid_arguments (details at /url, /events, /description) for a form to show by its fields. */
  create(a: Access, input: { url: string; events: string[]; description?: string }) {
    return this.asTool(a, 'create_webhook', input, (p, args: WebhookInput) => this.webhooks.create(p, args), {
      fields: true,
    });
  }

  setEnabled(a: Access, webhookId: string, enabled: boolean) {
    return this.asTool(a, 'update_webhook', { webhookId, enabled }, (p, args: WebhookUpdate) =>
      this.webhooks.update(p, args),
    );
  }

  remove(a: Access, webhookId: string) {
    return this.asTool(a, 'delete_webhook', { webhookId }, (p) => this.webhooks.remove(p, webhookId));
  }

  rotate(a: Access, webhookId: string) {
    return this.asTool(a, 'rotate_webhook_secret', { webhookId }, (p) => this.webhooks.rotateSecret(p, webhookId));
  }

  sendTest(a: Access, webhookId: string, event: string) {
    return this.asTool(a, 'send_test_webhook', { webhookId, event }, (p, args: { event: WebhookEvent }) =>
      this.webhooks.sendTest(p, { webhookId, event: args.event }),
    );
  }

  redeliver(a: Access, deliveryId: string) {
    return this.asTool(a, 'redeliver_webhook', { deliveryId }, (p) => this.webhooks.redeliver(p, deliveryId));
  }

  /**
   * The tool's checks (plan, role, arguments, defaults filled in), then `run`. Refusals become
   * page errors with the tool's message: 403 (plan, role), 404 (not found, or an id in the path
   * that is not one), 400 (the tool refused). With `fields`, invalid_arguments is thrown as it is,
   * for the form to show by its fields.
   */
  private async asTool<A, T>(
    a: Access,
    name: string,
    args: object,
    run: (principal: Principal, args: A) => Promise<T>,
    opts: { fields?: boolean } = {},
  ): Promise<T> {
    const principal = principalOf(a);
    try {
      const tool = this.tools.resolve(name);
      this.tools.authorize(principal, tool);
      return await run(principal, this.tools.checkArguments(tool, args) as A);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (err.code === 'invalid_arguments') {
        const paths = (err.details ?? []).map((d) => d.path.split('/')[1]);
        if (paths.some((p) => p === 'webhookId' || p === 'deliveryId')) throw notFound();
        if (opts.fields) throw err;
      }
      if (err.code === 'not_found') throw notFound();
      if (err.status === 403) throw new PageError(403, 'Not allowed', err.message);
      throw new PageError(400, 'Not done', `${err.message}${err.hint ? ` ${err.hint}` : ''}`);
    }
  }
}

/** The signed-in person as the principal the webhook services take. */
function principalOf(a: Access): Principal {
  const { id, name, slug, plan } = a.workspace;
  return {
    credential: { kind: 'session', id: a.session.userId },
    credentialKey: `session:${a.session.userId}`,
    workspace: { id, name, slug, plan },
    role: a.role,
    scopes: SCOPES,
    userId: a.session.userId,
  };
}

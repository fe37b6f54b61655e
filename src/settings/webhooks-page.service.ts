import { Injectable } from '@nestjs/common';
import { assertMayCall } from '../common/access/access';
import type { Principal } from '../common/access/principal';
import { SCOPES } from '../common/access/roles';
import { ApiError } from '../common/errors/api-error';
import { WEBHOOK_EVENTS, WebhookEvent } from '../webhooks/events';
import { MAX_URL_LENGTH } from '../webhooks/url-safety';
import { MAX_DESCRIPTION_LENGTH } from '../webhooks/webhook.schemas';
import { WEBHOOK_READ, WEBHOOK_WRITE } from '../webhooks/webhook.schemas';
import { WebhooksService } from '../webhooks/webhooks.service';
import { Access, notFound, PageError } from './settings.service';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isEvent = (e: string): e is WebhookEvent => (WEBHOOK_EVENTS as readonly string[]).includes(e);

/** What the "New endpoint" form sends, and its problems by field (url, events, description). */
export interface NewEndpoint {
  url: string;
  events: string[];
  description: string;
}

/**
 * What the settings Webhooks page does, as the signed-in person: each action passes the plan and
 * role checks of the tool that does the same over the API (the tools' own requirements and
 * messages), then calls the WebhooksService method that tool calls, so the rules and the audit
 * records are the tools' own. The person acts with their role and every scope (a session is not
 * limited to scopes); audit records name them as a session, like the other settings actions.
 * The page's own input (a form, ids in the path) is checked here, by field.
 */
@Injectable()
export class WebhooksPageService {
  constructor(private readonly webhooks: WebhooksService) {}

  list(a: Access) {
    return this.as(a, 'list_webhooks', WEBHOOK_READ, (p) =>
      this.webhooks.list(p.workspace.id, { limit: 100, offset: 0 }),
    );
  }

  /** One endpoint of the workspace (there are at most 20), or 404. */
  async endpoint(a: Access, webhookId: string) {
    const found = (await this.list(a)).webhooks.find((w) => w.id === webhookId);
    if (!found) throw notFound();
    return found;
  }

  deliveries(a: Access, webhookId: string, opts: { status?: string; limit: number; offset: number }) {
    return this.as(a, 'list_webhook_deliveries', WEBHOOK_READ, (p) =>
      this.webhooks.deliveries(p.workspace.id, { webhookId: uuid(webhookId), ...opts }),
    );
  }

  /**
   * The form's problems by field (nothing stored), or the endpoint with its secret. The URL's own
   * rules (https, public addresses) are the tool's: its refusal comes back as the url field's problem.
   */
  async create(a: Access, input: NewEndpoint) {
    const errors: Record<string, string> = {};
    if (!input.url) errors.url = 'Enter the URL of your receiver.';
    else if (input.url.length > MAX_URL_LENGTH) errors.url = `Use a URL of at most ${MAX_URL_LENGTH} characters.`;
    if (!input.events.length) errors.events = 'Choose at least one event.';
    else if (!input.events.every(isEvent)) errors.events = 'Choose events from the list.';
    if (input.description.length > MAX_DESCRIPTION_LENGTH)
      errors.description = `Use at most ${MAX_DESCRIPTION_LENGTH} characters.`;
    if (Object.keys(errors).length) return { errors };
    try {
      const created = await this.as(a, 'create_webhook', WEBHOOK_WRITE, (p) =>
        this.webhooks.create(p, {
          url: input.url,
          events: [...new Set(input.events as WebhookEvent[])],
          description: input.description || undefined,
        }),
      );
      return { created };
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== 'invalid_arguments') throw err;
      return { errors: { url: err.details?.[0]?.message ?? err.message } };
    }
  }

  setEnabled(a: Access, webhookId: string, enabled: boolean) {
    return this.as(a, 'update_webhook', WEBHOOK_WRITE, (p) =>
      this.webhooks.update(p, { webhookId: uuid(webhookId), enabled }),
    );
  }

  remove(a: Access, webhookId: string) {
    return this.as(a, 'delete_webhook', WEBHOOK_WRITE, (p) => this.webhooks.remove(p, uuid(webhookId)));
  }

  rotate(a: Access, webhookId: string) {
    return this.as(a, 'rotate_webhook_secret', WEBHOOK_WRITE, (p) => this.webhooks.rotateSecret(p, uuid(webhookId)));
  }

  sendTest(a: Access, webhookId: string, event: string) {
    if (!isEvent(event)) throw notFound();
    return this.as(a, 'send_test_webhook', WEBHOOK_WRITE, (p) =>
      this.webhooks.sendTest(p, { webhookId: uuid(webhookId), event }),
    );
  }

  redeliver(a: Access, deliveryId: string) {
    return this.as(a, 'redeliver_webhook', WEBHOOK_WRITE, (p) => this.webhooks.redeliver(p, uuid(deliveryId)));
  }

  /**
   * The plan and role checks of the tool `name` (its requirement), then `run`. Refusals become
   * page errors with the tool's message: 403 (plan, role), 404 (not found), 400 (the tool refused).
   */
  private async as<T>(
    a: Access,
    name: string,
    requirement: typeof WEBHOOK_READ | typeof WEBHOOK_WRITE,
    run: (principal: Principal) => Promise<T>,
  ): Promise<T> {
    const principal = principalOf(a);
    try {
      // As the tools declare it (webhook.schemas.ts), a write needing Pro as every write tool does.
      // The scope check passes (a session has every scope), so no resource metadata is named.
      const { scope, minRole, write } = requirement;
      assertMayCall(principal, { name, scope, minRole, plan: write ? 'pro' : 'any' }, '');
      return await run(principal);
    } catch (err) {
      if (!(err instanceof ApiError) || err.code === 'invalid_arguments') throw err;
      if (err.code === 'not_found') throw notFound();
      if (err.status === 403) throw new PageError(403, 'Not allowed', err.message);
      throw new PageError(400, 'Not done', `${err.message} ${err.hint}`);
    }
  }
}

/** An id from the path, or 404 when it is not one (as for another workspace's). */
function uuid(id: string): string {
  if (!UUID.test(id)) throw notFound();
  return id;
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

import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../common/access/principal';
import { ApiError } from '../common/errors/api-error';
import { APP_CONFIG, AppConfig } from '../config/config';
import { inTransaction } from '../database/transaction';
import { Block, scaleBounds } from '../forms/blocks';
import { FormRecord, formView, FormsService } from '../forms/forms.service';
import { ResponsesService, ResponseView } from '../responses/responses.service';
import { eventBody, newEventId, WebhookEvent } from './events';
import { DeliveryRow, EndpointRow, Redacted, WebhooksRepository } from './webhooks.repository';
import { IdempotencyService } from '../idempotency/idempotency.service';
import { isSealed, SealedSecretError, WebhookSecretBox } from './secret-box';
import { newSecret } from './signing';
import { hostOf, hostProblem, urlProblem } from './url-safety';

/** Endpoints per workspace. */
export const MAX_ENDPOINTS = 20;
/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_HOURS = 24;

export interface WebhookInput {
  url: string;
  events: WebhookEvent[];
  description?: string | null;
}

export interface WebhookUpdate {
  webhookId: string;
  url?: string;
  events?: WebhookEvent[];
  enabled?: boolean;
  description?: string | null;
}

/** Webhook endpoints and their deliveries: the rules of the webhook tools (the outbox and the loop live beside). */
@Injectable()
export class WebhooksService implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger('Webhooks');

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly audit: AuditService,
    private readonly forms: FormsService,
    private readonly responses: ResponsesService,
    private readonly repository: WebhooksRepository,
    private readonly box: WebhookSecretBox,
    private readonly idempotency: IdempotencyService,
  ) {}

  /**
   * The answers that show a secret are stored for Idempotency-Key replays sealed, as the secret
   * itself is: a webhook's signing secret, and the links that serve without a token for 15 minutes
   * (an export's, a file answer's) in the answers of the reads that make them; invitation links. This key is the
   * service's one key at rest that every instance shares.
   */
  onModuleInit() {
    const secretAnswers = [
      'create_webhook',
      'rotate_webhook_secret',
      'export_responses',
      'get_response',
      'list_responses',
      'create_invites',
    ];
    this.idempotency.sealAnswersOf(secretAnswers, {
      seal: (body) => this.box.seal(body),
      open: (stored) => (isSealed(stored) ? this.box.open(stored) : stored),
    });
  }

  /** Each start seals what is not under the current key yet: secrets stored before encryption, or under an older key. */
  async onApplicationBootstrap() {
    const { resealed, unreadable } = await this.resealSecrets();
    if (resealed) this.logger.log(`sealed ${resealed} webhook signing secret(s) under WEBHOOK_SECRET_KEY`);
    if (unreadable.length)
      this.logger.warn(
        `no configured key opens the signing secret of webhook(s) ${unreadable.join(', ')}: put the key they were sealed under in WEBHOOK_SECRET_KEY_PREVIOUS, or rotate each one's secret (rotate_webhook_secret)`,
      );
  }

  /** Reseals every endpoint's secrets under the current key; how many it resealed, and which endpoints no key opens. */
  async resealSecrets(): Promise<{ resealed: number; unreadable: string[] }> {
    let resealed = 0;
    const unreadable: string[] = [];
    for (let after: string | null = null; ;) {
      const page = await this.repository.secretsNotUnder(this.box.currentPrefix, after, 500);
      if (!page.length) return { resealed, unreadable };
      for (const row of page) {
        let now;
        try {
          now = {
            secret: this.box.seal(this.box.open(row.secret)),
            previous_secret: row.previous_secret === null ? null : this.box.seal(this.box.open(row.previous_secret)),
          };
        } catch (err) {
          if (!(err instanceof SealedSecretError)) throw err;
          unreadable.push(row.id);
          continue;
        }
        // A row rotated meanwhile was sealed by its rotation: nothing lost when this one is skipped.
        if (await this.repository.replaceSecrets(row.id, row, now)) resealed++;
      }
      after = page[page.length - 1].id;
    }
  }

  async create(actor: Principal, input: WebhookInput): Promise<ReturnType<typeof endpointView> & { secret: string }> {
    const url = await this.checkUrl(input.url);
    return inTransaction(this.db, async (tx) => {
      // Serialises creations in the workspace, so the limit holds under concurrent calls.
      const n = await this.repository.lockWorkspaceAndCountEndpoints(tx, actor.workspace.id);
      if (n >= MAX_ENDPOINTS) {
        throw new ApiError('tool_error', {
          message: `A workspace has at most ${MAX_ENDPOINTS} webhook endpoints, and this one has ${n}.`,
          hint: 'Delete one with delete_webhook, or subscribe an existing endpoint to more events with update_webhook.',
        });
      }
      const secret = newSecret();
      const row = await this.repository.insertEndpoint(tx, {
        workspaceId: actor.workspace.id,
        url,
        description: input.description ?? null,
        events: input.events,
        secret: this.box.seal(secret),
      });
      await this.audit.record(tx, actor, 'webhook.create', row.id, {
        host: hostOf(new URL(url)),
        events: input.events,
      });
      return { ...endpointView(row), secret };
    });
  }

  async list(workspaceId: string, opts: { limit: number; offset: number }) {
    const { total, plan, rows } = await this.repository.listEndpoints(workspaceId, opts);
    return { total, deliveriesPaused: plan !== 'pro', webhooks: rows.map(endpointView) };
  }

  async update(actor: Principal, input: WebhookUpdate) {
    const url = input.url !== undefined ? await this.checkUrl(input.url) : undefined;
    return inTransaction(this.db, async (tx) => {
      await this.lock(tx, actor.workspace.id, input.webhookId);
      const row = await this.repository.updateEndpoint(tx, actor.workspace.id, input.webhookId, {
        url,
        events: input.events,
        description: input.description,
        enabled: input.enabled,
      });
      const changed = Object.keys(input).filter((k) => k !== 'webhookId');
      await this.audit.record(tx, actor, 'webhook.update', input.webhookId, {
        changed,
        ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      });
      return endpointView(row);
    });
  }

  async remove(actor: Principal, webhookId: string): Promise<{ id: string; deleted: true }> {
    return inTransaction(this.db, async (tx) => {
      const endpoint = await this.lock(tx, actor.workspace.id, webhookId);
      await this.repository.deleteEndpoint(tx, webhookId);
      await this.audit.record(tx, actor, 'webhook.delete', webhookId, { host: hostOf(new URL(endpoint.url)) });
      return { id: webhookId, deleted: true as const };
    });
  }

  /** A new secret; the old one keeps signing beside it for 24 hours (a second rotation ends that overlap). */
  async rotateSecret(actor: Principal, webhookId: string) {
    return inTransaction(this.db, async (tx) => {
      await this.lock(tx, actor.workspace.id, webhookId);
      const secret = newSecret();
      const row = await this.repository.rotateSecret(tx, webhookId, this.box.seal(secret), ROTATION_OVERLAP_HOURS);
      await this.audit.record(tx, actor, 'webhook.rotate_secret', webhookId);
      return { ...endpointView(row), secret };
    });
  }

  async deliveries(workspaceId: string, opts: { webhookId?: string; status?: string; limit: number; offset: number }) {
    if (opts.webhookId) await this.lock(undefined, workspaceId, opts.webhookId, false);
    const { total, rows } = await this.repository.listDeliveries(workspaceId, opts);
    return { total, deliveries: rows.map(deliveryView) };
  }

  /** Sends a delivery's event again, with the same webhook-id, on a fresh retry schedule. */
  async redeliver(actor: Principal, deliveryId: string) {
    return inTransaction(this.db, async (tx) => {
      const found = await this.repository.lockDelivery(tx, actor.workspace.id, deliveryId);
      if (!found) throw notFoundDelivery(deliveryId);
      if (found.redacted) throw redactedDelivery(deliveryId, found.redacted);
      if (!found.enabled) throw disabledEndpoint();
      await this.repository.resetDelivery(tx, deliveryId);
      await this.audit.record(tx, actor, 'webhook.redeliver', deliveryId);
      return this.delivery(tx, deliveryId);
    });
  }

  /**
   * A test event sent to one endpoint: built from a real form of the workspace (the one named, or
   * the one changed last), marked `"test": true`. For response events, the form's latest
   * response, or a sample one when it has none.
   */
  async sendTest(actor: Principal, input: { webhookId: string; event?: WebhookEvent; publicId?: string }) {
    const type = input.event ?? 'response.created';
    return inTransaction(this.db, async (tx) => {
      const endpoint = await this.lock(tx, actor.workspace.id, input.webhookId);
      if (!endpoint.enabled) throw disabledEndpoint();
      const form = await this.sampleForm(tx, actor.workspace.id, input.publicId);
      const data = type.startsWith('form.')
        ? formView(form, true, this.config.publicUrl)
        : { form: { publicId: form.publicId, title: form.title }, response: await this.sampleResponse(form) };
      const id = await this.repository.insertDelivery(tx, {
        workspaceId: actor.workspace.id,
        endpointId: endpoint.id,
        eventId: newEventId(),
        type,
        payload: eventBody(type, data, { test: true }),
      });
      await this.audit.record(tx, actor, 'webhook.test', endpoint.id, { event: type, form: form.publicId });
      return this.delivery(tx, id);
    });
  }

  private async sampleForm(tx: EntityManager, workspaceId: string, publicId?: string): Promise<FormRecord> {
    if (publicId) return this.forms.get(workspaceId, publicId, tx);
    const latest = await this.repository.latestFormPublicId(tx, workspaceId);
    if (!latest) {
      throw new ApiError('tool_error', {
        message: 'A test event is built from a form of the workspace, and this workspace has none.',
        hint: 'Create a form with create_form, then send the test again.',
      });
    }
    return this.forms.get(workspaceId, latest, tx);
  }

  private async sampleResponse(form: FormRecord): Promise<ResponseView> {
    const { responses } = await this.responses.list(form.workspaceId, form.publicId, {
      limit: 1,
      offset: 0,
      order: 'newest',
    });
    if (responses[0]) return responses[0];
    const answers: Record<string, unknown> = {};
    for (const b of form.blocks) {
      const value = sampleAnswer(b);
      if (value !== undefined) answers[b.id] = value;
    }
    const at = new Date().toISOString();
    return {
      id: randomUUID(),
      submittedAt: at,
      answers,
      status: 'completed',
      startedAt: at,
      updatedAt: at,
      lastPage: '',
    };
  }

  private async delivery(manager: EntityManager, id: string) {
    return deliveryView(await this.repository.delivery(manager, id));
  }

  /** The endpoint (row-locked when `forUpdate`), or 404: another workspace's endpoint is not found either. */
  private async lock(
    manager: EntityManager | undefined,
    workspaceId: string,
    webhookId: string,
    forUpdate = true,
  ): Promise<EndpointRow> {
    const row = await this.repository.findEndpoint(manager, workspaceId, webhookId, forUpdate);
    if (!row) {
      throw new ApiError('not_found', {
        message: `No webhook endpoint "${webhookId}" in this workspace.`,
        hint: 'list_webhooks shows the endpoints of the workspace this credential acts on.',
      });
    }
    return row;
  }

  /** The URL, or 400 invalid_arguments at /url: not https (unless private URLs are allowed), or a host that resolves to a private address. */
  private async checkUrl(raw: string): Promise<string> {
    const allow = this.config.webhooks.allowPrivateUrls;
    const parsed = urlProblem(raw, allow);
    const problem = 'problem' in parsed ? parsed.problem : await hostProblem(hostOf(parsed.url), allow);
    if (problem) {
      throw new ApiError('invalid_arguments', {
        message: `The webhook URL ${problem}.`,
        hint: 'Give a public https:// URL of your receiver.',
        details: [{ path: '/url', message: problem }],
      });
    }
    return (parsed as { url: URL }).url.toString();
  }
}

function iso(d: Date | string | null): string | null {
  return d === null ? null : new Date(d).toISOString();
}

export function endpointView(row: EndpointRow) {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    disabledAt: iso(row.disabled_at),
    failingSince: iso(row.failing_since),
    previousSecretExpiresAt: iso(row.previous_secret_expires_at),
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
  };
}

function deliveryView(row: DeliveryRow) {
  return {
    id: row.id,
    webhookId: row.endpoint_id,
    eventId: row.event_id,
    type: row.event_type,
    status: row.status,
    createdAt: iso(row.created_at)!,
    attemptCount: row.attempt_count,
    nextAttemptAt: row.status === 'pending' ? iso(row.next_attempt_at) : null,
    payload: JSON.parse(row.payload) as unknown,
    redacted: row.redacted,
    attempts: row.attempts.map((a) => ({
      ...a,
      attemptedAt: iso(a.attemptedAt)!,
      nextAttemptAt: iso(a.nextAttemptAt),
    })),
  };
}

function notFoundDelivery(id: string): ApiError {
  return new ApiError('not_found', {
    message: `No webhook delivery "${id}" in this workspace.`,
    hint: 'list_webhook_deliveries shows the deliveries of the last 30 days.',
  });
}

/** A delivery whose answers were deleted: not sent again (a replay of deleted data), so not found. */
function redactedDelivery(id: string, why: Redacted): ApiError {
  const what = why === 'form_deleted' ? 'its form was deleted' : 'its response was deleted';
  return new ApiError('not_found', {
    message: `Webhook delivery "${id}" carried answers that no longer exist: ${what}.`,
    hint: `Deleted answers are not sent again, so this delivery cannot be redelivered (list_webhook_deliveries shows it redacted). Nothing needs doing: the receiver was sent a response.deleted${why === 'form_deleted' ? ' or form.deleted' : ''} event where it subscribes to one.`,
  });
}

function disabledEndpoint(): ApiError {
  return new ApiError('tool_error', {
    message: 'This webhook endpoint is disabled, so nothing is sent to it.',
    hint: 'list_webhooks says why; enable it with update_webhook (enabled: true), then try again.',
  });
}

/** A plausible answer for a block, for a test event of a form that has no response yet. */
function sampleAnswer(b: Block): unknown {
  const choices = (b as { choices?: Array<{ label: string }> }).choices ?? [];
  const s = b as { min?: number; max?: number };
  switch (b.type) {
    case 'short_text':
    case 'long_text':
      return 'A sample answer';
    case 'email':
      return 'someone@example.com';
    case 'url':
      return 'https://example.com';
    case 'phone':
      return '+1 555 0100';
    case 'number':
      return s.min ?? s.max ?? 42;
    case 'multiple_choice':
    case 'dropdown':
      return choices[0]?.label;
    case 'checkboxes':
      return choices.length ? [choices[0].label] : undefined;
    case 'ranking':
      return choices.slice(0, b.rankTop ?? choices.length).map((c) => c.label);
    case 'matrix': {
      const first = b.columns?.[0]?.label ?? '';
      return Object.fromEntries((b.rows ?? []).map((r) => [r.label, b.multiple ? [first] : first]));
    }
    case 'rating':
    case 'linear_scale':
    case 'nps':
      return scaleBounds(b).max;
    case 'date':
      return new Date().toISOString().slice(0, 10);
    case 'yes_no':
      return true;
    default:
      return undefined;
  }
}

import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../common/access/principal';
import { ApiError } from '../common/errors/api-error';
import { APP_CONFIG, AppConfig } from '../config/config';
import { inTransaction } from '../database/transaction';
import { Block } from '../forms/blocks';
import { FormRecord, formView, FormsService } from '../forms/forms.service';
import { ResponsesService, ResponseView } from '../responses/responses.service';
import { eventBody, newEventId, WebhookEvent } from './events';
import { newSecret } from './signing';
import { hostOf, hostProblem, urlProblem } from './url-safety';

/** Endpoints per workspace. */
export const MAX_ENDPOINTS = 20;
/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_HOURS = 24;

interface EndpointRow {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  enabled: boolean;
  disabled_reason: string | null;
  disabled_at: Date | null;
  failing_since: Date | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const ENDPOINT_COLUMNS = `id, url, description, events, enabled, disabled_reason, disabled_at, failing_since,
  CASE WHEN previous_secret_expires_at > now() THEN previous_secret_expires_at END AS previous_secret_expires_at, created_at, updated_at`;

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  created_at: Date;
  attempt_count: number;
  next_attempt_at: Date | null;
  payload: string;
  attempts: Array<{
    attemptedAt: string;
    statusCode: number | null;
    durationMs: number;
    error: string | null;
    responseBody: string | null;
    nextAttemptAt: string | null;
  }>;
}

const DELIVERY_SELECT = `
SELECT d.id, d.endpoint_id, d.event_id, d.event_type, d.status, d.created_at, d.attempt_count, d.next_attempt_at, d.payload,
       COALESCE((SELECT json_agg(json_build_object('attemptedAt', a.attempted_at, 'statusCode', a.status_code, 'durationMs', a.duration_ms,
                   'error', a.error, 'responseBody', a.response_body, 'nextAttemptAt', a.next_attempt_at) ORDER BY a.attempted_at)
                   FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]') AS attempts
  FROM webhook_deliveries d`;

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
export class WebhooksService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly audit: AuditService,
    private readonly forms: FormsService,
    private readonly responses: ResponsesService,
  ) {}

  async create(actor: Principal, input: WebhookInput): Promise<ReturnType<typeof endpointView> & { secret: string }> {
    const url = await this.checkUrl(input.url);
    return inTransaction(this.db, async (tx) => {
      // Serialises creations in the workspace, so the limit holds under concurrent calls.
      await tx.query('SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE', [actor.workspace.id]);
      const [{ n }] = await tx.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE workspace_id = $1', [
        actor.workspace.id,
      ]);
      if (n >= MAX_ENDPOINTS) {
        throw new ApiError('tool_error', {
          message: `A workspace has at most ${MAX_ENDPOINTS} webhook endpoints, and this one has ${n}.`,
          hint: 'Delete one with delete_webhook, or subscribe an existing endpoint to more events with update_webhook.',
        });
      }
      const secret = newSecret();
      const [row]: EndpointRow[] = await tx.query(
        `INSERT INTO webhook_endpoints (workspace_id, url, description, events, secret) VALUES ($1, $2, $3, $4, $5) RETURNING ${ENDPOINT_COLUMNS}`,
        [actor.workspace.id, url, input.description ?? null, input.events, secret],
      );
      await this.audit.record(tx, actor, 'webhook.create', row.id, {
        host: hostOf(new URL(url)),
        events: input.events,
      });
      return { ...endpointView(row), secret };
    });
  }

  async list(workspaceId: string, opts: { limit: number; offset: number }) {
    const [{ total, plan }] = await this.db.query(
      'SELECT (SELECT count(*)::int FROM webhook_endpoints WHERE workspace_id = $1) AS total, (SELECT plan FROM workspaces WHERE id = $1) AS plan',
      [workspaceId],
    );
    const rows: EndpointRow[] = await this.db.query(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE workspace_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`,
      [workspaceId, opts.limit, opts.offset],
    );
    return { total: total as number, deliveriesPaused: plan !== 'pro', webhooks: rows.map(endpointView) };
  }

  async update(actor: Principal, input: WebhookUpdate) {
    const url = input.url !== undefined ? await this.checkUrl(input.url) : undefined;
    return inTransaction(this.db, async (tx) => {
      await this.lock(tx, actor.workspace.id, input.webhookId);
      // Enabling again starts afresh: no disabled reason, no failure streak.
      const [rows] = await tx.query(
        `UPDATE webhook_endpoints SET
           url = COALESCE($3, url),
           events = COALESCE($4, events),
           description = CASE WHEN $5 THEN $6 ELSE description END,
           enabled = COALESCE($7, enabled),
           disabled_reason = CASE WHEN $7 IS NULL THEN disabled_reason ELSE NULL END,
           disabled_at = CASE WHEN $7 IS NULL THEN disabled_at WHEN $7 THEN NULL ELSE now() END,
           failing_since = CASE WHEN $7 THEN NULL ELSE failing_since END,
           updated_at = now()
         WHERE workspace_id = $1 AND id = $2 RETURNING ${ENDPOINT_COLUMNS}`,
        [
          actor.workspace.id,
          input.webhookId,
          url ?? null,
          input.events ?? null,
          input.description !== undefined,
          input.description ?? null,
          input.enabled ?? null,
        ],
      );
      const changed = Object.keys(input).filter((k) => k !== 'webhookId');
      await this.audit.record(tx, actor, 'webhook.update', input.webhookId, {
        changed,
        ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      });
      return endpointView(rows[0]);
    });
  }

  async remove(actor: Principal, webhookId: string): Promise<{ id: string; deleted: true }> {
    return inTransaction(this.db, async (tx) => {
      const endpoint = await this.lock(tx, actor.workspace.id, webhookId);
      await tx.query('DELETE FROM webhook_endpoints WHERE id = $1', [webhookId]);
      await this.audit.record(tx, actor, 'webhook.delete', webhookId, { host: hostOf(new URL(endpoint.url)) });
      return { id: webhookId, deleted: true as const };
    });
  }

  /** A new secret; the old one keeps signing beside it for 24 hours (a second rotation ends that overlap). */
  async rotateSecret(actor: Principal, webhookId: string) {
    return inTransaction(this.db, async (tx) => {
      await this.lock(tx, actor.workspace.id, webhookId);
      const secret = newSecret();
      const [rows] = await tx.query(
        `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = now() + interval '${ROTATION_OVERLAP_HOURS} hours',
                secret = $2, updated_at = now()
          WHERE id = $1 RETURNING ${ENDPOINT_COLUMNS}`,
        [webhookId, secret],
      );
      await this.audit.record(tx, actor, 'webhook.rotate_secret', webhookId);
      return { ...endpointView(rows[0]), secret };
    });
  }

  async deliveries(workspaceId: string, opts: { webhookId?: string; status?: string; limit: number; offset: number }) {
    if (opts.webhookId) await this.lock(this.db.manager, workspaceId, opts.webhookId, false);
    // Through the endpoints (at most 20 per workspace): every index on deliveries costs each delivery's writes.
    const where = `d.endpoint_id IN (SELECT id FROM webhook_endpoints WHERE workspace_id = $1 AND ($2::uuid IS NULL OR id = $2)) AND ($3::text IS NULL OR d.status = $3)`;
    const params = [workspaceId, opts.webhookId ?? null, opts.status ?? null];
    const [{ total }] = await this.db.query(
      `SELECT count(*)::int AS total FROM webhook_deliveries d WHERE ${where}`,
      params,
    );
    const rows: DeliveryRow[] = await this.db.query(
      `${DELIVERY_SELECT} WHERE ${where} ORDER BY d.created_at DESC, d.id DESC LIMIT $4 OFFSET $5`,
      [...params, opts.limit, opts.offset],
    );
    return { total: total as number, deliveries: rows.map(deliveryView) };
  }

  /** Sends a delivery's event again, with the same webhook-id, on a fresh retry schedule. */
  async redeliver(actor: Principal, deliveryId: string) {
    return inTransaction(this.db, async (tx) => {
      const [found] = await tx.query(
        `SELECT d.id, e.enabled FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE d.id = $1 AND d.workspace_id = $2 FOR UPDATE OF d`,
        [deliveryId, actor.workspace.id],
      );
      if (!found) throw notFoundDelivery(deliveryId);
      if (!found.enabled) throw disabledEndpoint();
      // A claim in flight loses its hold (its result is still logged as an attempt).
      await tx.query(
        `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), attempt_count = 0, claim_token = NULL, claimed_until = NULL WHERE id = $1`,
        [deliveryId],
      );
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
        ? formView(form, true)
        : { form: { publicId: form.publicId, title: form.title }, response: await this.sampleResponse(form) };
      const [row]: Array<{ id: string }> = await tx.query(
        `INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
         VALUES ($1, $2, $3, $4, $5, now()) RETURNING id`,
        [actor.workspace.id, endpoint.id, newEventId(), type, eventBody(type, data, { test: true })],
      );
      await this.audit.record(tx, actor, 'webhook.test', endpoint.id, { event: type, form: form.publicId });
      return this.delivery(tx, row.id);
    });
  }

  private async sampleForm(tx: EntityManager, workspaceId: string, publicId?: string): Promise<FormRecord> {
    if (publicId) return this.forms.get(workspaceId, publicId, tx);
    const [latest] = await tx.query(
      'SELECT public_id FROM forms WHERE workspace_id = $1 ORDER BY updated_at DESC, id LIMIT 1',
      [workspaceId],
    );
    if (!latest) {
      throw new ApiError('tool_error', {
        message: 'A test event is built from a form of the workspace, and this workspace has none.',
        hint: 'Create a form with create_form, then send the test again.',
      });
    }
    return this.forms.get(workspaceId, latest.public_id, tx);
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
    return { id: randomUUID(), submittedAt: new Date().toISOString(), answers };
  }

  private async delivery(manager: EntityManager, id: string) {
    const [row]: DeliveryRow[] = await manager.query(`${DELIVERY_SELECT} WHERE d.id = $1`, [id]);
    return deliveryView(row);
  }

  /** The endpoint (row-locked when `forUpdate`), or 404: another workspace's endpoint is not found either. */
  private async lock(
    manager: EntityManager,
    workspaceId: string,
    webhookId: string,
    forUpdate = true,
  ): Promise<EndpointRow & { url: string }> {
    const [row] = await manager.query(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE workspace_id = $1 AND id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
      [workspaceId, webhookId],
    );
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
    case 'rating':
    case 'linear_scale':
      return s.max ?? 5;
    case 'date':
      return new Date().toISOString().slice(0, 10);
    case 'yes_no':
      return true;
    default:
      return undefined;
  }
}

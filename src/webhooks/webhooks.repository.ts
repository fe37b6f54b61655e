import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { currentManager } from '../database/transaction';
import { currentTraceparent } from '../observability/tracing';

/**
 * The SQL of webhooks the requests run: endpoints, deliveries (the outbox rows), the delivery log.
 * The services (WebhooksService, WebhookOutbox) keep the rules; a method that takes a manager runs
 * in the caller's transaction. The response.created rows of a submission are written by the
 * submission's own statement (responses), and the delivery loop's claims and records by
 * DeliveryLoopRepository, on connections of its own.
 */

export interface EndpointRow {
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

/** Why a delivery's payload was redacted (see WebhookDeliveryEntity.redacted). */
export type Redacted = 'response_deleted' | 'form_deleted';

export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  created_at: Date;
  attempt_count: number;
  next_attempt_at: Date | null;
  payload: string;
  redacted: Redacted | null;
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
SELECT d.id, d.endpoint_id, d.event_id, d.event_type, CASE d.status WHEN 'paused' THEN 'pending' ELSE d.status END AS status, d.created_at, d.attempt_count, d.next_attempt_at, d.payload, d.redacted,
       COALESCE((SELECT json_agg(json_build_object('attemptedAt', a.attempted_at, 'statusCode', a.status_code, 'durationMs', a.duration_ms,
                   'error', a.error, 'responseBody', a.response_body, 'nextAttemptAt', a.next_attempt_at) ORDER BY a.attempted_at)
                   FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]') AS attempts
  FROM webhook_deliveries d`;

/**
 * The redaction of the deliveries that carry deleted answers (WebhooksRepository.redactAnswers),
 * for one response or for the responses of one form: `since` bounds the search, `match` finds the
 * deliveries, `reason` is stored in `redacted`. Each found delivery keeps the response's id and
 * submittedAt, not its answers. Of those not yet delivered, a response.created is not sent at all
 * (failed, with an attempt saying why: the receiver would get answers that no longer exist, and
 * has nothing of the response to delete); a response.deleted is sent, redacted (the receiver must
 * still hear of the deletion to delete its own copy). One whose attempt is under way (claimed) is
 * left to its attempt, which records what came of it; should it be retried, it is sent redacted.
 *
 * They are found through the workspace's endpoints (at most 20) and IDX_webhook_deliveries_endpoint
 * (endpoint_id, created_at) from the time of the response or form on: no index on what a payload
 * holds (each one costs every delivery's writes), so a delete reads the deliveries written since
 * that time (at most the 30 days kept), text-searched first (strpos) and parsed only on a match.
 */
function redactSql(since: string, match: string, reason: string): string {
  return `WITH found AS (
  SELECT d.id, d.event_type IN ('response.created', 'response.partial_saved') AND d.status IN ('pending', 'paused')
              AND (d.claimed_until IS NULL OR d.claimed_until <= now()) AS cancel
    FROM webhook_endpoints e CROSS JOIN LATERAL (
      SELECT d.id, d.event_type, d.status, d.claimed_until FROM webhook_deliveries d
       WHERE d.endpoint_id = e.id
         AND d.created_at >= COALESCE(${since} - interval '1 minute', '-infinity')
         AND d.event_type IN ('response.created', 'response.deleted', 'response.partial_saved') AND d.redacted IS NULL
         AND strpos(d.payload, $2::text) > 0 AND ${match}) d
   WHERE e.workspace_id = $1),
redacted AS (
  UPDATE webhook_deliveries d
     SET payload = jsonb_set(d.payload::jsonb, '{data,response}', jsonb_build_object(
                     'id', d.payload::jsonb #> '{data,response,id}', 'submittedAt', d.payload::jsonb #> '{data,response,submittedAt}'))::text,
         redacted = '${reason}',
         status = CASE WHEN found.cancel THEN 'failed' ELSE d.status END,
         next_attempt_at = CASE WHEN found.cancel THEN NULL ELSE d.next_attempt_at END,
         claim_token = CASE WHEN found.cancel THEN NULL ELSE d.claim_token END,
         claimed_until = CASE WHEN found.cancel THEN NULL ELSE d.claimed_until END
    FROM found WHERE d.id = found.id
  RETURNING d.id, found.cancel),
noted AS (
  INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, duration_ms, error)
  SELECT id, now(), NULL, 0, ${reason === 'response_deleted' ? `'not sent: the response was deleted before it was delivered'` : `'not sent: its form was deleted before it was delivered'`}
    FROM redacted WHERE cancel)
SELECT count(*)::int AS n FROM redacted`;
}
const REDACT_RESPONSE_SQL = redactSql(
  // A response that started as a partial (issue 36) has deliveries (response.partial_saved) from its start on.
  `COALESCE((SELECT COALESCE(started_at, submitted_at) FROM responses WHERE id = $2::text::uuid),
            (SELECT started_at FROM partial_responses WHERE id = $2::text::uuid))`,
  `d.payload::jsonb #>> '{data,response,id}' = $2::text`,
  'response_deleted',
);
const REDACT_FORM_SQL = redactSql(
  '(SELECT created_at FROM forms WHERE workspace_id = $1 AND public_id = $2)',
  `d.payload::jsonb #>> '{data,form,publicId}' = $2::text`,
  'form_deleted',
);

@Injectable()
export class WebhooksRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  // --- endpoints -----------------------------------------------------------------------------------

  /** Locks the workspace row (serialises endpoint creations in it) and counts its endpoints. */
  async lockWorkspaceAndCountEndpoints(tx: EntityManager, workspaceId: string): Promise<number> {
    await tx.query('SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE', [workspaceId]);
    const [{ n }] = await tx.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE workspace_id = $1', [
      workspaceId,
    ]);
    return n;
  }

  async insertEndpoint(
    tx: EntityManager,
    e: { workspaceId: string; url: string; description: string | null; events: string[]; secret: string },
  ): Promise<EndpointRow> {
    const [row]: EndpointRow[] = await tx.query(
      `INSERT INTO webhook_endpoints (workspace_id, url, description, events, secret) VALUES ($1, $2, $3, $4, $5) RETURNING ${ENDPOINT_COLUMNS}`,
      [e.workspaceId, e.url, e.description, e.events, e.secret],
    );
    return row;
  }

  /** A page of the workspace's endpoints, their total, and the workspace's plan. */
  async listEndpoints(workspaceId: string, opts: { limit: number; offset: number }) {
    const [{ total, plan }] = await currentManager(this.db).query(
      'SELECT (SELECT count(*)::int FROM webhook_endpoints WHERE workspace_id = $1) AS total, (SELECT plan FROM workspaces WHERE id = $1) AS plan',
      [workspaceId],
    );
    const rows: EndpointRow[] = await currentManager(this.db).query(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE workspace_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`,
      [workspaceId, opts.limit, opts.offset],
    );
    return { total: total as number, plan: plan as string, rows };
  }

  /** The endpoint of the workspace (row-locked when `forUpdate`), if there is one. */
  async findEndpoint(
    manager: EntityManager | undefined,
    workspaceId: string,
    webhookId: string,
    forUpdate: boolean,
  ): Promise<EndpointRow | undefined> {
    const [row] = await (manager ?? currentManager(this.db)).query(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE workspace_id = $1 AND id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
      [workspaceId, webhookId],
    );
    return row;
  }

  /**
   * Changes what is given (undefined: kept). Enabling again starts afresh: no disabled reason, no
   * failure streak; disabling records when.
   */
  async updateEndpoint(
    tx: EntityManager,
    workspaceId: string,
    webhookId: string,
    change: { url?: string; events?: string[]; description?: string | null; enabled?: boolean },
  ): Promise<EndpointRow> {
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
        workspaceId,
        webhookId,
        change.url ?? null,
        change.events ?? null,
        change.description !== undefined,
        change.description ?? null,
        change.enabled ?? null,
      ],
    );
    return rows[0];
  }

  /**
   * Deletes the endpoint and its deliveries (their attempts with them). Deliveries have no foreign
   * key to their endpoint (see WebhookDeliveryEntity): a submission that read the endpoint before
   * this commits may still write one, and the delivery loop's claim deletes it.
   */
  async deleteEndpoint(tx: EntityManager, webhookId: string): Promise<void> {
    await tx.query(
      `WITH e AS (DELETE FROM webhook_endpoints WHERE id = $1) DELETE FROM webhook_deliveries WHERE endpoint_id = $1`,
      [webhookId],
    );
  }

  /** The new secret signs from now; the current one becomes the previous, signing for `overlapHours` more. */
  async rotateSecret(tx: EntityManager, webhookId: string, secret: string, overlapHours: number): Promise<EndpointRow> {
    const [rows] = await tx.query(
      `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = now() + make_interval(hours => $3),
              secret = $2, updated_at = now()
        WHERE id = $1 RETURNING ${ENDPOINT_COLUMNS}`,
      [webhookId, secret, overlapHours],
    );
    return rows[0];
  }

  /** A page of endpoints (by id, after `afterId`) whose secrets are not all stored under `prefix` (the current key's). */
  async secretsNotUnder(
    prefix: string,
    afterId: string | null,
    limit: number,
  ): Promise<Array<{ id: string; secret: string; previous_secret: string | null }>> {
    return currentManager(this.db).query(
      `SELECT id, secret, previous_secret FROM webhook_endpoints
        WHERE ($2::uuid IS NULL OR id > $2) AND NOT (starts_with(secret, $1) AND starts_with(coalesce(previous_secret, $1), $1))
        ORDER BY id LIMIT $3`,
      [prefix, afterId, limit],
    );
  }

  /** Stores an endpoint's secrets anew unless they changed meanwhile (a rotation): whether it did. */
  async replaceSecrets(
    id: string,
    was: { secret: string; previous_secret: string | null },
    now: { secret: string; previous_secret: string | null },
  ): Promise<boolean> {
    const [, affected] = await currentManager(this.db).query(
      `UPDATE webhook_endpoints SET secret = $4, previous_secret = $5
        WHERE id = $1 AND secret = $2 AND previous_secret IS NOT DISTINCT FROM $3`,
      [id, was.secret, was.previous_secret, now.secret, now.previous_secret],
    );
    return affected === 1;
  }

  // --- deliveries ----------------------------------------------------------------------------------

  /** A page of the workspace's deliveries, newest first, with their attempts, and their total. */
  async listDeliveries(
    workspaceId: string,
    opts: { webhookId?: string; status?: string; limit: number; offset: number },
  ): Promise<{ total: number; rows: DeliveryRow[] }> {
    // Through the endpoints (at most 20 per workspace): every index on deliveries costs each delivery's writes.
    // A paused delivery (endpoint disabled, workspace on Free) is pending as far as users are concerned.
    const where = `d.endpoint_id IN (SELECT id FROM webhook_endpoints WHERE workspace_id = $1 AND ($2::uuid IS NULL OR id = $2)) AND ($3::text IS NULL OR d.status = $3 OR ($3 = 'pending' AND d.status = 'paused'))`;
    const params = [workspaceId, opts.webhookId ?? null, opts.status ?? null];
    const [{ total }] = await currentManager(this.db).query(
      `SELECT count(*)::int AS total FROM webhook_deliveries d WHERE ${where}`,
      params,
    );
    const rows: DeliveryRow[] = await currentManager(this.db).query(
      `${DELIVERY_SELECT} WHERE ${where} ORDER BY d.created_at DESC, d.id DESC LIMIT $4 OFFSET $5`,
      [...params, opts.limit, opts.offset],
    );
    return { total, rows };
  }

  async delivery(manager: EntityManager, id: string): Promise<DeliveryRow> {
    const [row]: DeliveryRow[] = await manager.query(`${DELIVERY_SELECT} WHERE d.id = $1`, [id]);
    return row;
  }

  /** The workspace's delivery, row-locked, with whether its endpoint is enabled; undefined when there is none. */
  async lockDelivery(
    tx: EntityManager,
    workspaceId: string,
    deliveryId: string,
  ): Promise<{ id: string; enabled: boolean; redacted: Redacted | null } | undefined> {
    const [found] = await tx.query(
      `SELECT d.id, e.enabled, d.redacted FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.id = $1 AND d.workspace_id = $2 FOR UPDATE OF d`,
      [deliveryId, workspaceId],
    );
    return found;
  }

  /** Due again now, on a fresh schedule; a claim in flight loses its hold (its result is still logged as an attempt). */
  async resetDelivery(tx: EntityManager, deliveryId: string): Promise<void> {
    await tx.query(
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), attempt_count = 0, claim_token = NULL, claimed_until = NULL WHERE id = $1`,
      [deliveryId],
    );
  }

  /** One delivery of an event to one endpoint, due now; its id. */
  async insertDelivery(
    tx: EntityManager,
    d: { workspaceId: string; endpointId: string; eventId: string; type: string; payload: string },
  ): Promise<string> {
    const [row]: Array<{ id: string }> = await tx.query(
      `INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at, traceparent)
       VALUES ($1, $2, $3, $4, $5, now(), $6) RETURNING id`,
      [d.workspaceId, d.endpointId, d.eventId, d.type, d.payload, currentTraceparent()],
    );
    return row.id;
  }

  /**
   * Redacts, in the delete's transaction `tx`, the deliveries of the workspace that carry the
   * answers of one response (`responseId`: delete_response) or of every response of a form
   * (`formPublicId`: delete_form), see REDACT_SQL. Call it before the response or form is deleted:
   * its time bounds the search. How many deliveries were redacted.
   */
  async redactAnswers(
    tx: EntityManager,
    workspaceId: string,
    of: { responseId: string } | { formPublicId: string },
  ): Promise<number> {
    const [{ n }]: Array<{ n: number }> =
      'responseId' in of
        ? await tx.query(REDACT_RESPONSE_SQL, [workspaceId, of.responseId])
        : await tx.query(REDACT_FORM_SQL, [workspaceId, of.formPublicId]);
    return n;
  }

  /** The public id of the workspace's form changed last, if it has one. */
  async latestFormPublicId(tx: EntityManager, workspaceId: string): Promise<string | undefined> {
    const [latest] = await tx.query(
      'SELECT public_id FROM forms WHERE workspace_id = $1 ORDER BY updated_at DESC, id LIMIT 1',
      [workspaceId],
    );
    return latest?.public_id;
  }

  // --- the outbox ----------------------------------------------------------------------------------

  /** For the metrics: the deliveries pending, and how long the oldest due one has waited (seconds, 0 if none). */
  async outboxStats(): Promise<{ pending: number; oldestAgeSeconds: number }> {
    const [row]: Array<{ pending: number; age: number }> = await currentManager(this.db).query(
      `SELECT count(*)::int AS pending, COALESCE(GREATEST(0, EXTRACT(EPOCH FROM now() - min(next_attempt_at))), 0)::float8 AS age
         FROM webhook_deliveries WHERE status = 'pending'`,
    );
    return { pending: row.pending, oldestAgeSeconds: row.age };
  }

  /** Whether an enabled endpoint of the workspace subscribes to the event. */
  async subscribed(tx: EntityManager, workspaceId: string, type: string): Promise<boolean> {
    const rows: unknown[] = await tx.query(
      `SELECT 1 FROM webhook_endpoints e WHERE e.workspace_id = $1 AND e.enabled AND $2 = ANY (e.events) LIMIT 1`,
      [workspaceId, type],
    );
    return rows.length > 0;
  }

  /**
   * One delivery per enabled endpoint of the workspace subscribed to the event, and nothing when
   * there is none, in ONE statement, in the change's transaction `tx`.
   */
  async insertEvent(tx: EntityManager, workspaceId: string, type: string, eventId: string, body: string) {
    await tx.query(
      `INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at, traceparent)
       SELECT e.workspace_id, e.id, $3, $2, $4, now(), $5
         FROM webhook_endpoints e
        WHERE e.workspace_id = $1 AND e.enabled AND $2 = ANY (e.events)`,
      [workspaceId, type, eventId, body, currentTraceparent()],
    );
  }
}

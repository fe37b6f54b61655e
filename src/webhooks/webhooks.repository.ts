import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Pool } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import { SHARED_SESSION_MARK } from '../database/embedded-postgres';

/**
 * The SQL of webhooks: endpoints, deliveries (the outbox rows) and the delivery loop's claims and
 * records. The services (WebhooksService, WebhookOutbox, WebhookDeliveryWorker) keep the rules;
 * a method that takes a manager runs in the caller's transaction. The response.created rows of a
 * submission are written by the submission's own statement (responses), not here.
 *
 * The loop's statements run on a pool of two connections of its own: the loop never holds a
 * connection a request is waiting for, nor waits behind requests for one.
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

/** A delivery the loop claimed, with what sending it takes. */
export interface ClaimedDelivery {
  id: string;
  event_id: string;
  payload: string;
  attempt_count: number;
  claim_token: string;
  endpoint_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
}

/** What an attempt came to: delivered, retry, failed (no attempt left) or gone (410). */
export type AttemptOutcome = 'delivered' | 'retry' | 'failed' | 'gone';

export interface AttemptRecord {
  attemptedAt: Date;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
}

/** The loop's own connections. */
const LOOP_POOL_SIZE = 2;

@Injectable()
export class WebhooksRepository {
  private readonly logger = new Logger('Webhooks');
  private loopPool?: Pool;
  private loopSharesSession = false;

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
    const [{ total, plan }] = await this.db.query(
      'SELECT (SELECT count(*)::int FROM webhook_endpoints WHERE workspace_id = $1) AS total, (SELECT plan FROM workspaces WHERE id = $1) AS plan',
      [workspaceId],
    );
    const rows: EndpointRow[] = await this.db.query(
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
    const [row] = await (manager ?? this.db.manager).query(
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

  async deleteEndpoint(tx: EntityManager, webhookId: string): Promise<void> {
    await tx.query('DELETE FROM webhook_endpoints WHERE id = $1', [webhookId]);
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

  // --- deliveries ----------------------------------------------------------------------------------

  /** A page of the workspace's deliveries, newest first, with their attempts, and their total. */
  async listDeliveries(
    workspaceId: string,
    opts: { webhookId?: string; status?: string; limit: number; offset: number },
  ): Promise<{ total: number; rows: DeliveryRow[] }> {
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
  ): Promise<{ id: string; enabled: boolean } | undefined> {
    const [found] = await tx.query(
      `SELECT d.id, e.enabled FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
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
      `INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
       VALUES ($1, $2, $3, $4, $5, now()) RETURNING id`,
      [d.workspaceId, d.endpointId, d.eventId, d.type, d.payload],
    );
    return row.id;
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
      `INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
       SELECT e.workspace_id, e.id, $3, $2, $4, now()
         FROM webhook_endpoints e
        WHERE e.workspace_id = $1 AND e.enabled AND $2 = ANY (e.events)`,
      [workspaceId, type, eventId, body],
    );
  }

  // --- the delivery loop (its own connections) -----------------------------------------------------

  /**
   * Claims up to `limit` due deliveries for `leaseSeconds`. Paused: deliveries of a Free workspace
   * (kept, sent when it is Pro again) and of a disabled endpoint. SKIP LOCKED lets every instance
   * claim at once without waiting on each other; the claim holds the row until claimed_until (a lease).
   */
  async claim(limit: number, leaseSeconds: number): Promise<ClaimedDelivery[]> {
    const { rows } = await this.loopQuery(
      'claim',
      `WITH due AS (
         SELECT d.id FROM webhook_deliveries d
           JOIN webhook_endpoints e ON e.id = d.endpoint_id
           JOIN workspaces w ON w.id = d.workspace_id
          WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.claimed_until IS NULL OR d.claimed_until <= now())
            AND e.enabled AND w.plan = 'pro'
          ORDER BY d.next_attempt_at
          LIMIT $1
          FOR UPDATE OF d SKIP LOCKED)
       UPDATE webhook_deliveries d
          SET claimed_until = now() + make_interval(secs => $2), claim_token = gen_random_uuid(), attempt_count = d.attempt_count + 1
         FROM due, webhook_endpoints e
        WHERE d.id = due.id AND e.id = d.endpoint_id
       RETURNING d.id, d.event_id, d.payload, d.attempt_count, d.claim_token, e.id AS endpoint_id, e.url, e.secret,
                 CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret END AS previous_secret`,
      [limit, leaseSeconds],
    );
    return rows;
  }

  /**
   * Records one attempt that did not deliver, and its outcome, in one statement: the attempt row;
   * the delivery (only if this instance's claim still holds: a redelivery may have reset it); and
   * the endpoint, only when its state changes (a first failure, 410, `disableAfterDays` of failures).
   */
  async recordAttempt(
    claimed: ClaimedDelivery,
    attempt: AttemptRecord,
    outcome: Exclude<AttemptOutcome, 'delivered'>,
    next: Date | null,
    disableAfterDays: number,
  ): Promise<void> {
    await this.loopQuery(
      'record_attempt',
      `WITH a AS (
         INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, duration_ms, error, response_body, next_attempt_at)
         VALUES ($1, $3::timestamptz, $4, $5, $6::text, $7, $9::timestamptz)),
       d AS (
         UPDATE webhook_deliveries
            SET status = CASE $8 WHEN 'retry' THEN 'pending' ELSE 'failed' END,
                next_attempt_at = $9, claim_token = NULL, claimed_until = NULL
          WHERE id = $1 AND claim_token = $2)
       UPDATE webhook_endpoints e
          SET failing_since = COALESCE(e.failing_since, $3),
              enabled = NOT disable.now,
              disabled_at = CASE WHEN disable.now THEN $3 END,
              disabled_reason = CASE
                WHEN $8 = 'gone' THEN 'The endpoint answered 410 Gone on ' || to_char($3 AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC: it asked not to be sent anything more.'
                WHEN disable.now THEN 'Every delivery attempt failed for ' || $11::int || ' days (since '
                     || to_char(e.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC); the last one: ' || COALESCE($6, 'failed') || '.'
              END
         FROM (SELECT COALESCE($8::text = 'gone' OR failing_since <= $3::timestamptz - make_interval(days => $11::int), false) AS now
                 FROM webhook_endpoints WHERE id = $10) disable
        WHERE e.id = $10 AND e.enabled AND (disable.now OR e.failing_since IS NULL)`,
      [
        claimed.id,
        claimed.claim_token,
        attempt.attemptedAt,
        attempt.statusCode,
        attempt.durationMs,
        attempt.error,
        attempt.responseBody,
        outcome,
        next,
        claimed.endpoint_id,
        disableAfterDays,
      ],
    );
  }

  /**
   * Records a batch of successful attempts in one statement (most attempts succeed: one round trip
   * per batch instead of one per delivery). Clears the failure streak of their endpoints, if any.
   */
  async recordDelivered(items: Array<{ claimed: ClaimedDelivery; attempt: AttemptRecord }>): Promise<void> {
    await this.loopQuery(
      'record_delivered',
      `WITH r AS (
         SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::uuid[])
                  AS r(id, token, attempted_at, status_code, duration_ms, response_body, endpoint_id)),
       a AS (
         INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, duration_ms, response_body)
         SELECT id, attempted_at, status_code, duration_ms, response_body FROM r),
       d AS (
         UPDATE webhook_deliveries d SET status = 'delivered', next_attempt_at = NULL, claim_token = NULL, claimed_until = NULL
           FROM r WHERE d.id = r.id AND d.claim_token = r.token)
       UPDATE webhook_endpoints e SET failing_since = NULL
        WHERE e.id IN (SELECT endpoint_id FROM r) AND e.failing_since IS NOT NULL`,
      [
        items.map((i) => i.claimed.id),
        items.map((i) => i.claimed.claim_token),
        items.map((i) => i.attempt.attemptedAt),
        items.map((i) => i.attempt.statusCode),
        items.map((i) => i.attempt.durationMs),
        items.map((i) => i.attempt.responseBody),
        items.map((i) => i.claimed.endpoint_id),
      ],
    );
  }

  /** A claim given up when the instance stops mid-attempt: due again at once, the attempt not counted. */
  async release(claimed: ClaimedDelivery): Promise<void> {
    await this.loop().query(
      `UPDATE webhook_deliveries SET claimed_until = NULL, claim_token = NULL, attempt_count = attempt_count - 1 WHERE id = $1 AND claim_token = $2`,
      [claimed.id, claimed.claim_token],
    );
  }

  /**
   * Deletes up to `batch` deliveries (their attempts with them) older than `days`; how many. Found
   * endpoint by endpoint through (endpoint_id, created_at): deliveries have no index on created_at
   * alone (see the migration WebhookDeliveriesFewerIndexes), and every delivery has an endpoint (FK).
   */
  async purgeDeliveries(days: number, batch: number): Promise<number> {
    const { rowCount } = await this.loop().query(
      `DELETE FROM webhook_deliveries WHERE id = ANY (ARRAY(
         SELECT old.id FROM webhook_endpoints e CROSS JOIN LATERAL (
           SELECT d.id FROM webhook_deliveries d
            WHERE d.endpoint_id = e.id AND d.created_at < now() - make_interval(days => $1) LIMIT $2) old
          LIMIT $2))`,
      [days, batch],
    );
    return rowCount ?? 0;
  }

  /** Closes the loop's connections (when the loop has stopped). */
  async endLoop(): Promise<void> {
    const pool = this.loopPool;
    this.loopPool = undefined;
    await pool?.end();
  }

  /**
   * One of the loop's hot statements (a claim, a record), as a named prepared statement: each of
   * the loop's connections parses and plans it once, not on every batch. The embedded database
   * gets the plain text (its connections share one session, see database/prepared.ts).
   */
  private loopQuery(name: string, text: string, values: unknown[]) {
    const pool = this.loop();
    if (this.loopSharesSession) return pool.query(text, values);
    return pool.query({ name: `formwork_webhooks_${name}`, text, values });
  }

  /** The loop's pool, made on first use: an instance that does not deliver opens none. */
  private loop(): Pool {
    if (!this.loopPool) {
      const url = String((this.db.options as { url?: string }).url);
      this.loopSharesSession = url.includes(SHARED_SESSION_MARK);
      this.loopPool = new Pool({
        connectionString: loopConnectionString(url),
        max: LOOP_POOL_SIZE,
        connectionTimeoutMillis: 10_000,
      });
      // An idle connection that breaks (a database restart) is replaced by the next query.
      this.loopPool.on('error', (err) => this.logger.warn(`a webhook delivery connection broke: ${err.message}`));
    }
    return this.loopPool;
  }
}

/**
 * The loop's connections plan without bitmap scans. The claim must walk the due index in order (an
 * index scan): that stops after a batch, and marks the entries of rows delivered since the last
 * claim as dead, so that the next claim skips them. A bitmap scan, the planner's choice once
 * thousands of delivered rows await vacuum, visits every one of them on every claim (measured: 17 ms
 * instead of 0.3 ms a claim with 30,000 delivered rows not yet vacuumed). Not on the embedded
 * database, whose connections share one session with the requests'.
 */
export function loopConnectionString(url: string): string {
  if (url.includes(SHARED_SESSION_MARK)) return url;
  const u = new URL(url);
  u.searchParams.set('options', `${u.searchParams.get('options') ?? ''} -c enable_bitmapscan=off`.trim());
  return u.toString();
}

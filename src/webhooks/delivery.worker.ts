import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/config';
import { nextDelayMs, parseRetryAfter } from './schedule';
import { SendResult, TIMEOUT_MS, WebhookSender } from './sender';
import { signedHeaders } from './signing';

/** At most this many attempts run at once on one instance. */
const MAX_IN_FLIGHT = 64;
/** Rows claimed per statement. */
const CLAIM_BATCH = 32;
/**
 * How often the loop looks for due deliveries when its last claim found less than a batch. Events
 * are not pushed to it one by one: claiming what is due every half second (or as soon as a batch
 * is done) takes a batch per statement under load, instead of a statement per event.
 */
const POLL_MS = 500;
/**
 * The loop's own connections (claims and records): it never holds one a request is waiting for,
 * nor waits behind requests for one.
 */
const POOL_SIZE = 2;
/**
 * A claim holds a row this long: past the 10 s timeout, with room to record the result. If the
 * instance dies mid-attempt, the row is due again after this and any instance takes it.
 */
const LEASE_SECONDS = TIMEOUT_MS / 1000 + 10;
/** An endpoint whose every attempt failed for this long is disabled. */
export const DISABLE_AFTER_DAYS = 5;
/** Deliveries (and their attempts) are kept this long, then purged in batches. */
export const RETENTION_DAYS = 30;
const PURGE_EVERY_MS = 10 * 60_000;
const PURGE_BATCH = 1000;
const PURGE_MAX_BATCHES = 20;

/**
 * Claims due deliveries for this instance. Paused: deliveries of a Free workspace (kept, sent
 * when it is Pro again) and of a disabled endpoint. SKIP LOCKED lets every instance claim at once
 * without waiting on each other; the claim holds the row until claimed_until (a lease).
 */
const CLAIM_SQL = `
WITH due AS (
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
          CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret END AS previous_secret`;

/**
 * Records one attempt and its outcome in one statement: the attempt row; the delivery (only if
 * this instance's claim still holds: a redelivery may have reset it); and the endpoint, only when
 * its state changes (a first failure, a success after failures, 410, 5 days of failures).
 * $8 is the outcome: delivered, retry, failed (no attempt left) or gone (410).
 */
const RECORD_SQL = `
WITH a AS (
  INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, duration_ms, error, response_body, next_attempt_at)
  VALUES ($1, $3::timestamptz, $4, $5, $6::text, $7, $9::timestamptz)),
d AS (
  UPDATE webhook_deliveries
     SET status = CASE $8 WHEN 'delivered' THEN 'delivered' WHEN 'retry' THEN 'pending' ELSE 'failed' END,
         next_attempt_at = $9, claim_token = NULL, claimed_until = NULL
   WHERE id = $1 AND claim_token = $2)
UPDATE webhook_endpoints e
   SET failing_since = CASE WHEN $8 = 'delivered' THEN NULL ELSE COALESCE(e.failing_since, $3) END,
       enabled = NOT disable.now,
       disabled_at = CASE WHEN disable.now THEN $3 END,
       disabled_reason = CASE
         WHEN $8 = 'gone' THEN 'The endpoint answered 410 Gone on ' || to_char($3 AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC: it asked not to be sent anything more.'
         WHEN disable.now THEN 'Every delivery attempt failed for ${DISABLE_AFTER_DAYS} days (since '
              || to_char(e.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC); the last one: ' || COALESCE($6, 'failed') || '.'
       END
  FROM (SELECT COALESCE($8::text = 'gone' OR ($8::text <> 'delivered' AND failing_since <= $3::timestamptz - interval '${DISABLE_AFTER_DAYS} days'), false) AS now
          FROM webhook_endpoints WHERE id = $10) disable
 WHERE e.id = $10 AND e.enabled
   AND (disable.now OR CASE WHEN $8 = 'delivered' THEN e.failing_since IS NOT NULL ELSE e.failing_since IS NULL END)`;

/**
 * Records a batch of successful attempts in one statement (most attempts succeed: one round trip
 * per batch instead of one per delivery keeps the loop cheap beside the request path). Clears the
 * failure streak of their endpoints, if any.
 */
const RECORD_DELIVERED_SQL = `
WITH r AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::uuid[])
           AS r(id, token, attempted_at, status_code, duration_ms, response_body, endpoint_id)),
a AS (
  INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, duration_ms, response_body)
  SELECT id, attempted_at, status_code, duration_ms, response_body FROM r),
d AS (
  UPDATE webhook_deliveries d SET status = 'delivered', next_attempt_at = NULL, claim_token = NULL, claimed_until = NULL
    FROM r WHERE d.id = r.id AND d.claim_token = r.token)
UPDATE webhook_endpoints e SET failing_since = NULL
 WHERE e.id IN (SELECT endpoint_id FROM r) AND e.failing_since IS NOT NULL`;

/** Successful attempts wait at most this long (or for this many) to be recorded together. */
const RECORD_BATCH = 64;
const RECORD_WAIT_MS = 10;

/** A claim given up when the instance stops mid-attempt: due again at once, the attempt not counted. */
const RELEASE_SQL = `UPDATE webhook_deliveries SET claimed_until = NULL, claim_token = NULL, attempt_count = attempt_count - 1 WHERE id = $1 AND claim_token = $2`;

const PURGE_SQL = `
DELETE FROM webhook_deliveries WHERE id = ANY (ARRAY(
  SELECT id FROM webhook_deliveries WHERE created_at < now() - interval '${RETENTION_DAYS} days' LIMIT ${PURGE_BATCH}))`;

interface Claimed {
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

interface DeliveredBatch {
  items: Array<{ row: Claimed; at: Date; result: SendResult }>;
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * The delivery loop every instance runs, off the request path: it claims due deliveries, sends
 * each (signed, 10 s, no redirects), and records the attempt and what comes next (see schedule.ts).
 * At least once: a delivery whose instance died mid-attempt is claimed again after its lease.
 */
@Injectable()
export class WebhookDeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  private readonly sender: WebhookSender;
  private running = false;
  private loopDone?: Promise<void>;
  private readonly inFlight = new Map<string, { abort: AbortController; done: Promise<void> }>();
  private wake?: () => void;
  private purgeTimer?: NodeJS.Timeout;
  private batch?: DeliveredBatch;
  private readonly pool: Pool;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.sender = new WebhookSender(config.webhooks.allowPrivateUrls);
    // Connects on first use only: an instance that does not deliver opens none.
    this.pool = new Pool({
      connectionString: (db.options as { url?: string }).url,
      max: POOL_SIZE,
      connectionTimeoutMillis: 10_000,
    });
    // An idle connection that breaks (a database restart) is replaced by the next query.
    this.pool.on('error', (err) => this.logger.warn(`a webhook delivery connection broke: ${err.message}`));
  }

  onApplicationBootstrap() {
    if (!this.config.webhooks.deliver) return;
    this.running = true;
    this.loopDone = this.loop();
    this.purgeTimer = setInterval(() => void this.purge(), PURGE_EVERY_MS);
    this.purgeTimer.unref();
  }

  /** Stops claiming, abandons attempts in flight (their rows are released, due again at once) and waits for them. */
  async onModuleDestroy() {
    this.running = false;
    clearInterval(this.purgeTimer);
    this.wake?.();
    await this.loopDone;
    for (const { abort } of this.inFlight.values()) abort.abort();
    await Promise.all([...this.inFlight.values()].map((f) => f.done));
    this.sender.close();
    await this.pool.end();
  }

  /** A statement on the loop's own connections. */
  private async query<T>(sql: string, params: unknown[] = []): Promise<{ rows: T[]; rowCount: number }> {
    const { rows, rowCount } = await this.pool.query(sql, params);
    return { rows: rows as T[], rowCount: rowCount ?? 0 };
  }

  /** Asks the loop to look for due deliveries now (after a redelivery or a test event). */
  poke(): void {
    this.wake?.();
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let claimed = 0;
      const room = MAX_IN_FLIGHT - this.inFlight.size;
      if (room > 0) {
        try {
          claimed = await this.claimAndStart(Math.min(room, CLAIM_BATCH));
        } catch (err) {
          this.logger.warn(`could not claim webhook deliveries: ${(err as Error).message}`);
        }
      }
      // A full batch means more may be due: claim again at once while there is room.
      if (claimed === CLAIM_BATCH && this.inFlight.size < MAX_IN_FLIGHT) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  /** Claims up to `limit` due deliveries and starts their attempts; the number claimed. */
  async claimAndStart(limit: number): Promise<number> {
    const { rows } = await this.query<Claimed>(CLAIM_SQL, [limit, LEASE_SECONDS]);
    for (const row of rows) {
      const abort = new AbortController();
      const done = this.attempt(row, abort.signal)
        .catch((err: Error) => this.logger.warn(`could not record a webhook attempt: ${err.message}`))
        .finally(() => {
          this.inFlight.delete(row.id);
          // Room for a whole batch again: claim now rather than at the next poll (not once per attempt).
          if (this.inFlight.size === MAX_IN_FLIGHT - CLAIM_BATCH) this.wake?.();
        });
      this.inFlight.set(row.id, { abort, done });
    }
    return rows.length;
  }

  private async attempt(row: Claimed, signal: AbortSignal): Promise<void> {
    const attemptedAt = new Date();
    const secrets = row.previous_secret ? [row.secret, row.previous_secret] : [row.secret];
    const result = await this.sender.send(
      row.url,
      signedHeaders(secrets, row.event_id, row.payload, attemptedAt),
      row.payload,
      signal,
    );
    if (signal.aborted) {
      await this.query(RELEASE_SQL, [row.id, row.claim_token]);
      return;
    }
    const { outcome, next } = this.outcomeOf(result, row.attempt_count, attemptedAt);
    if (outcome === 'delivered') return this.recordDelivered(row, attemptedAt, result);
    await this.query(RECORD_SQL, [
      row.id,
      row.claim_token,
      attemptedAt,
      result.statusCode,
      result.durationMs,
      result.error,
      result.responseBody,
      outcome,
      next,
      row.endpoint_id,
    ]);
  }

  /** Queues a success for the next batch; resolves once the batch is recorded. */
  private recordDelivered(row: Claimed, at: Date, result: SendResult): Promise<void> {
    let batch = this.batch;
    if (!batch) {
      let settle!: { resolve: () => void; reject: (e: Error) => void };
      const promise = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
      const created: DeliveredBatch = {
        items: [],
        promise,
        ...settle,
        timer: setTimeout(() => this.flush(created), RECORD_WAIT_MS),
      };
      this.batch = batch = created;
    }
    batch.items.push({ row, at, result });
    if (batch.items.length >= RECORD_BATCH) {
      clearTimeout(batch.timer);
      this.flush(batch);
    }
    return batch.promise;
  }

  private flush(batch: DeliveredBatch): void {
    if (this.batch === batch) this.batch = undefined;
    const items = batch.items;
    this.query(RECORD_DELIVERED_SQL, [
      items.map((b) => b.row.id),
      items.map((b) => b.row.claim_token),
      items.map((b) => b.at),
      items.map((b) => b.result.statusCode),
      items.map((b) => b.result.durationMs),
      items.map((b) => b.result.responseBody),
      items.map((b) => b.row.endpoint_id),
    ]).then(() => batch.resolve(), batch.reject);
  }

  private outcomeOf(
    result: SendResult,
    attempt: number,
    at: Date,
  ): { outcome: 'delivered' | 'retry' | 'failed' | 'gone'; next: Date | null } {
    if (result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300)
      return { outcome: 'delivered', next: null };
    if (result.statusCode === 410) return { outcome: 'gone', next: null };
    const delay = nextDelayMs(attempt, this.config.webhooks.retryBaseMs, parseRetryAfter(result.retryAfter));
    return delay === null
      ? { outcome: 'failed', next: null }
      : { outcome: 'retry', next: new Date(at.getTime() + result.durationMs + delay) };
  }

  /** Deletes deliveries older than 30 days (their attempts with them), in batches. */
  async purge(): Promise<number> {
    let deleted = 0;
    try {
      for (let i = 0; i < PURGE_MAX_BATCHES; i++) {
        const { rowCount: count } = await this.query(PURGE_SQL);
        deleted += count;
        if (count < PURGE_BATCH) break;
      }
    } catch (err) {
      this.logger.warn(`could not purge old webhook deliveries: ${(err as Error).message}`);
    }
    return deleted;
  }
}

import { Pool } from 'pg';
import { SHARED_SESSION_MARK } from '../database/embedded-postgres';

/**
 * The delivery loop's SQL (DeliveryLoop): claims of due deliveries, the record of each attempt,
 * releases and the 30-day purge. It runs where the loop runs (a worker thread, see
 * delivery.worker.ts), on a pool of two connections of its own: the loop never holds a connection
 * a request is waiting for, nor waits behind requests for one.
 */

/** What the loop reads of any claimed row (a webhook delivery, an email). */
export interface Claimed {
  id: string;
  /** False: taken off the due index by the claim without being held (not to be sent). */
  active: boolean;
  /** The attempts made before this one (recorded ones: a claim does not count). */
  attempt_count: number;
  claim_token: string;
  /** What its share of the instance's attempts is counted by besides its workspace: its endpoint, the mail server. */
  endpoint_id: string;
  workspace_id: string;
}

/** A delivery the loop claimed, with what sending it takes. */
export interface ClaimedDelivery extends Claimed {
  id: string;
  /**
   * False: not to be sent, set aside as paused by the claim (endpoint disabled or workspace on
   * Free), or deleted (endpoint gone); it then comes without payload, claim token or secrets.
   */
  active: boolean;
  event_id: string;
  payload: string;
  /** The attempts made before this one (recorded ones: a claim does not count). */
  attempt_count: number;
  claim_token: string;
  endpoint_id: string;
  workspace_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  /** The W3C traceparent of the request that queued it (tracing on), or null. */
  traceparent?: string | null;
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

/**
 * The claim of up to $1 due deliveries, oldest due first, fairly: at most $10 attempts in flight
 * per endpoint and $11 per workspace on this instance (DeliveryLoop's caps; what each has taken of
 * them is $6/$7 and $8/$9, see InFlight). Deliveries of the
 * endpoints ($4) and workspaces ($5) already at their cap are passed over where the due index is
 * read (they cost a look at the row, and do not count towards the window); of the first $3 others,
 * each endpoint's oldest ones are taken up to its room (its cap less what it has in flight, $6/$7),
 * then each workspace's up to its room ($8/$9). So one endpoint's backlog (or one workspace's)
 * never fills a batch, and the event of another that became due later is claimed meanwhile
 * (test/e2e/webhook-fairness.e2e-spec.ts).
 *
 * Of the rows taken, those whose endpoint is enabled and whose workspace is on Pro are held for $2
 * seconds (active; the caps count only these); the others are set aside as 'paused', out of the due
 * index, until RESUME_SQL finds their endpoint and workspace ready again; and those whose endpoint
 * is gone are deleted (deliveries have no foreign key to their endpoint, see WebhookDeliveryEntity:
 * a submission that raced delete_webhook may have written one). All three count towards the batch,
 * and come back (the last two as not active), so a full batch means more may be due.
 *
 * A claim does not count an attempt: the record of the attempt does (attempt_count), so an attempt
 * cut off by a crash between the claim and its record uses up none of the 10 (the lease ends and
 * the row is claimed again, its schedule unchanged).
 *
 * The check is a subquery per row, not a join, on purpose: the planner then always walks the due
 * index in order and stops after the window. With joins, it estimates from the statistics of
 * workspaces and webhook_endpoints, and those small tables are often never analysed (autovacuum
 * analyses a table after 50 changes): with a backlog of a few thousand rows it then read and
 * sorted every pending row for each claim (measured: 53 ms instead of 0.4 ms a claim with 20,000
 * pending; test/e2e/webhook-claims.e2e-spec.ts). Likewise the batch's rows are updated by their
 * keys (= ANY of an array), not found by a join with the batch: the prepared claim's generic
 * plan, which cannot know the batch size, otherwise hashed every row of webhook_deliveries. The
 * window's rows are locked only once chosen (FOR UPDATE cannot go with a window function); a row
 * another instance claimed meanwhile is skipped (SKIP LOCKED, and its lease is checked again).
 */
export const CLAIM_SQL = `WITH seen AS (
  SELECT d.id, d.endpoint_id, d.workspace_id, d.next_attempt_at,
         (SELECT e.enabled AND w.plan = 'pro' FROM webhook_endpoints e, workspaces w
           WHERE e.id = d.endpoint_id AND w.id = d.workspace_id) AS active
    FROM webhook_deliveries d
   WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.claimed_until IS NULL OR d.claimed_until <= now())
     AND d.endpoint_id <> ALL ($4::uuid[]) AND d.workspace_id <> ALL ($5::uuid[])
   ORDER BY d.next_attempt_at
   LIMIT $3),
per_endpoint AS (
  SELECT s.*, row_number() OVER (PARTITION BY s.active IS TRUE, s.endpoint_id ORDER BY s.next_attempt_at)
              + COALESCE(b.n, 0) AS nth
    FROM seen s LEFT JOIN unnest($6::uuid[], $7::int[]) AS b(id, n) ON b.id = s.endpoint_id),
per_workspace AS (
  SELECT p.*, row_number() OVER (PARTITION BY p.active IS TRUE, p.workspace_id ORDER BY p.next_attempt_at)
              + COALESCE(b.n, 0) AS nth_in_workspace
    FROM per_endpoint p LEFT JOIN unnest($8::uuid[], $9::int[]) AS b(id, n) ON b.id = p.workspace_id
   WHERE p.active IS NOT TRUE OR p.nth <= $10),
chosen AS (
  SELECT id FROM per_workspace WHERE active IS NOT TRUE OR nth_in_workspace <= $11
   ORDER BY next_attempt_at LIMIT $1),
due AS (
  SELECT d.id,
         (SELECT e.enabled AND w.plan = 'pro' FROM webhook_endpoints e, workspaces w
           WHERE e.id = d.endpoint_id AND w.id = d.workspace_id) AS active
    FROM webhook_deliveries d
   WHERE d.id = ANY (ARRAY(SELECT id FROM chosen))
     AND d.status = 'pending' AND (d.claimed_until IS NULL OR d.claimed_until <= now())
   FOR UPDATE OF d SKIP LOCKED),
gone AS (
  DELETE FROM webhook_deliveries d WHERE d.id = ANY (ARRAY(SELECT id FROM due WHERE active IS NULL)) RETURNING d.id),
claimed AS (
  UPDATE webhook_deliveries d
     SET status = CASE WHEN due.active THEN 'pending' ELSE 'paused' END,
         claimed_until = CASE WHEN due.active THEN now() + make_interval(secs => $2) END,
         claim_token = CASE WHEN due.active THEN gen_random_uuid() END
    FROM due, webhook_endpoints e
   WHERE d.id = ANY (ARRAY(SELECT id FROM due WHERE active IS NOT NULL)) AND due.id = d.id AND e.id = d.endpoint_id
  RETURNING d.id, due.active, d.event_id, CASE WHEN due.active THEN d.payload END AS payload, d.attempt_count, d.claim_token,
            e.id AS endpoint_id, d.workspace_id, e.url, CASE WHEN due.active THEN e.secret END AS secret,
            CASE WHEN due.active AND e.previous_secret_expires_at > now() THEN e.previous_secret END AS previous_secret,
            d.traceparent)
SELECT * FROM claimed
UNION ALL
SELECT id, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM gone`;

/**
 * What a claim is told of this instance's attempts in flight, by endpoint and by workspace: how
 * much of its cap each has taken. Its attempts in flight, as a rule; DeliveryLoop tells less (below
 * 0 too) for one that may have more than its cap (it answers fast), and the cap for one to pass
 * over; one not named has taken none.
 */
export interface InFlight {
  byEndpoint: ReadonlyMap<string, number>;
  byWorkspace: ReadonlyMap<string, number>;
}

/** The caps a claim keeps to, and how many due rows it looks at past those already at theirs. */
export interface ClaimCaps {
  perEndpoint: number;
  perWorkspace: number;
  window: number;
}

/** CLAIM_SQL's parameters. */
export function claimParameters(limit: number, leaseSeconds: number, inFlight: InFlight, caps: ClaimCaps): unknown[] {
  const full = (m: ReadonlyMap<string, number>, cap: number) => [...m].filter(([, n]) => n >= cap).map(([id]) => id);
  return [
    limit,
    leaseSeconds,
    caps.window,
    full(inFlight.byEndpoint, caps.perEndpoint),
    full(inFlight.byWorkspace, caps.perWorkspace),
    [...inFlight.byEndpoint.keys()],
    [...inFlight.byEndpoint.values()],
    [...inFlight.byWorkspace.keys()],
    [...inFlight.byWorkspace.values()],
    caps.perEndpoint,
    caps.perWorkspace,
  ];
}

/**
 * Makes up to $1 paused deliveries pending again (due at once: they were due when paused), oldest
 * first for each endpoint, those of endpoints that are enabled in a workspace on Pro. The paused
 * rows are found through IDX_webhook_deliveries_paused, one probe per enabled endpoint. The outer
 * status test is checked again on rows another instance changed meanwhile (resumed, claimed and
 * recorded): only a row still paused is made pending.
 */
export const RESUME_SQL = `UPDATE webhook_deliveries SET status = 'pending'
 WHERE status = 'paused' AND id = ANY (ARRAY(
   SELECT p.id FROM webhook_endpoints e
     JOIN workspaces w ON w.id = e.workspace_id AND w.plan = 'pro'
     CROSS JOIN LATERAL (
       SELECT d.id FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'paused'
        ORDER BY d.next_attempt_at LIMIT $1) p
    WHERE e.enabled
    LIMIT $1))`;

/**
 * The connections of one channel's loop (DeliveryLoop): a pool of its own, and its hot statements
 * prepared once per connection (loopQuery).
 */
export class LoopConnections {
  protected readonly pool: Pool;
  private readonly sharesSession: boolean;

  /** `databaseUrl`: the application's; `warn` hears of a connection that broke; `noun` names the channel. */
  constructor(
    databaseUrl: string,
    warn: (message: string) => void,
    private readonly noun: string,
  ) {
    this.sharesSession = databaseUrl.includes(SHARED_SESSION_MARK);
    this.pool = new Pool({
      connectionString: loopConnectionString(databaseUrl),
      max: LOOP_POOL_SIZE,
      connectionTimeoutMillis: 10_000,
    });
    // An idle connection that breaks (a database restart) is replaced by the next query.
    this.pool.on('error', (err) => warn(`a ${noun} delivery connection broke: ${err.message}`));
  }

  /** Closes the loop's connections (when the loop has stopped). */
  async end(): Promise<void> {
    await this.pool.end();
  }

  /**
   * One of the loop's hot statements (a claim, a record), as a named prepared statement: each of
   * the loop's connections parses and plans it once, not on every batch. The embedded database
   * gets the plain text (its connections share one session, see database/prepared.ts).
   */
  protected loopQuery(name: string, text: string, values: unknown[]) {
    if (this.sharesSession) return this.pool.query(text, values);
    return this.pool.query({ name: `formwork_${this.noun}_${name}`, text, values });
  }
}

export class DeliveryLoopRepository extends LoopConnections {
  constructor(databaseUrl: string, warn: (message: string) => void) {
    super(databaseUrl, warn, 'webhook');
  }

  /**
   * Takes up to `limit` due deliveries off the due index (CLAIM_SQL), within the caps given what
   * this instance has in flight: claimed for `leaseSeconds` (`active`), paused, or deleted
   * (endpoint gone). SKIP LOCKED lets every instance claim at once without waiting on each other;
   * the claim holds the row until claimed_until (a lease).
   */
  async claim(limit: number, leaseSeconds: number, inFlight: InFlight, caps: ClaimCaps): Promise<ClaimedDelivery[]> {
    const { rows } = await this.loopQuery('claim', CLAIM_SQL, claimParameters(limit, leaseSeconds, inFlight, caps));
    return rows;
  }

  /** Makes up to `limit` paused deliveries pending again where they may be sent now (RESUME_SQL); how many. */
  async resumePaused(limit: number): Promise<number> {
    const { rowCount } = await this.loopQuery('resume', RESUME_SQL, [limit]);
    return rowCount ?? 0;
  }

  /**
   * Records one attempt that did not deliver, and its outcome, in one statement: the attempt row
   * (none when the delivery was deleted meanwhile: delete_webhook);
   * the delivery, its attempt counted (only if this instance's claim still holds: a redelivery may
   * have reset it); and
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
         SELECT $1, $3::timestamptz, $4, $5, $6::text, $7, $9::timestamptz
          WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = $1)),
       d AS (
         UPDATE webhook_deliveries
            SET status = CASE $8 WHEN 'retry' THEN 'pending' ELSE 'failed' END,
                next_attempt_at = $9, claim_token = NULL, claimed_until = NULL, attempt_count = attempt_count + 1
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
   * per batch instead of one per delivery), each counted. Clears the failure streak of their
   * endpoints, if any. DeliveryLoop records row by row when the batch fails (see recordDelivered there).
   * A delivery deleted during its attempt (delete_webhook) is skipped: its attempt would break the
   * attempts' foreign key, fail the whole statement, and every other delivery of the batch would be
   * sent again once its lease ended.
   */
  async recordDelivered(items: Array<{ claimed: ClaimedDelivery; attempt: AttemptRecord }>): Promise<void> {
    await this.loopQuery(
      'record_delivered',
      `WITH r AS (
         SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::uuid[])
                  AS r(id, token, attempted_at, status_code, duration_ms, response_body, endpoint_id)),
       a AS (
         INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, duration_ms, response_body)
         SELECT id, attempted_at, status_code, duration_ms, response_body FROM r
          WHERE EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = r.id)),
       d AS (
         UPDATE webhook_deliveries d SET status = 'delivered', next_attempt_at = NULL, claim_token = NULL, claimed_until = NULL,
                attempt_count = d.attempt_count + 1
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

  /** A claim given up when the instance stops mid-attempt: due again at once (the attempt is not counted: it was not recorded). */
  async release(claimed: ClaimedDelivery): Promise<void> {
    await this.pool.query(
      `UPDATE webhook_deliveries SET claimed_until = NULL, claim_token = NULL WHERE id = $1 AND claim_token = $2`,
      [claimed.id, claimed.claim_token],
    );
  }

  /**
   * Deletes up to `batch` deliveries (their attempts with them) older than `days`; how many. Found
   * endpoint by endpoint through (endpoint_id, created_at): deliveries have no index on created_at
   * alone (see the migration WebhookDeliveriesFewerIndexes). A delivery whose endpoint is gone is
   * never this old: delete_webhook deletes its endpoint's deliveries, and the first claim deletes
   * one a racing submission wrote (it is written pending, so due at once).
   */
  async purgeDeliveries(days: number, batch: number): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM webhook_deliveries WHERE id = ANY (ARRAY(
         SELECT old.id FROM webhook_endpoints e CROSS JOIN LATERAL (
           SELECT d.id FROM webhook_deliveries d
            WHERE d.endpoint_id = e.id AND d.created_at < now() - make_interval(days => $1) LIMIT $2) old
          LIMIT $2))`,
      [days, batch],
    );
    return rowCount ?? 0;
  }
}

/**
 * The loop's connections commit without waiting for the WAL flush (synchronous_commit=off): what a
 * crash of the database could lose is a claim (the row is due again) or the record of an attempt
 * (the event is sent again once the lease ends, with the same webhook-id): at least once holds,
 * and the loop's commits stop adding flush waits to the requests'. The changes of requests keep
 * the server's setting.
 *
 * They plan without bitmap scans and without sequential scans: every statement of the loop finds
 * its rows through an index. The claim must walk the due index in order (an index scan): that
 * stops after a batch, and marks the entries of rows delivered since the last claim as dead, so
 * that the next claim skips them. A bitmap scan, the planner's choice once thousands of delivered
 * rows await vacuum, visits every one of them on every claim (measured: 17 ms instead of 0.3 ms a
 * claim with 30,000 delivered rows not yet vacuumed). And the claim's check of each row's endpoint
 * and workspace (CLAIM_SQL) is two primary-key lookups; the planner would rather read a table of a
 * few pages whole, once per row (measured with 300 workspaces: 15 us a row instead of 2 us).
 * Not on the embedded database, whose connections share one session with the requests'.
 */
export function loopConnectionString(url: string): string {
  if (url.includes(SHARED_SESSION_MARK)) return url;
  const u = new URL(url);
  u.searchParams.set(
    'options',
    `${u.searchParams.get('options') ?? ''} -c enable_bitmapscan=off -c enable_seqscan=off -c synchronous_commit=off`.trim(),
  );
  return u.toString();
}

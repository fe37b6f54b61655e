import {
  AttemptOutcome,
  AttemptRecord,
  Claimed,
  ClaimCaps,
  InFlight,
  LoopConnections,
} from '../webhooks/delivery-loop.repository';

/** The mail server, as the one "target" every email's share is counted by (DeliveryLoop's per-endpoint share). */
export const MAIL_SERVER_TARGET = '00000000-0000-0000-0000-000000000000';

/** An email the loop claimed: what it is about, rendered when it is sent (EmailChannel). */
export interface ClaimedEmail extends Claimed {
  kind: 'notification' | 'digest' | 'test' | 'receipt' | 'resume';
  to_address: string;
  subscription_id: string | null;
  form_id: string | null;
  response_id: string | null;
  since: Date | null;
  until: Date | null;
  /** A secret the message carries (a resume link's), sealed (see WebhookSecretBox). */
  sealed: string | null;
}

/**
 * The claim of up to $1 due emails, oldest due first, at most $7 in flight per workspace on this
 * instance ($5/$6: what each has taken of it; $4: those at it, passed over where the due index is
 * read): one workspace's backlog never fills a batch (the webhooks' CLAIM_SQL, with the workspace as
 * the only share besides the mail server). Held for $2 seconds (the lease); SKIP LOCKED lets
 * instances claim at once.
 */
const CLAIM_SQL = `WITH seen AS (
  SELECT o.id, o.workspace_id, o.next_attempt_at FROM email_outbox o
   WHERE o.status = 'pending' AND o.next_attempt_at <= now() AND (o.claimed_until IS NULL OR o.claimed_until <= now())
     AND o.workspace_id <> ALL ($4::uuid[])
   ORDER BY o.next_attempt_at
   LIMIT $3),
ranked AS (
  SELECT s.id, s.next_attempt_at,
         row_number() OVER (PARTITION BY s.workspace_id ORDER BY s.next_attempt_at) + COALESCE(b.n, 0) AS nth
    FROM seen s LEFT JOIN unnest($5::uuid[], $6::int[]) AS b(id, n) ON b.id = s.workspace_id),
chosen AS (SELECT id FROM ranked WHERE nth <= $7 ORDER BY next_attempt_at LIMIT $1),
due AS (
  SELECT o.id FROM email_outbox o
   WHERE o.id = ANY (ARRAY(SELECT id FROM chosen))
     AND o.status = 'pending' AND (o.claimed_until IS NULL OR o.claimed_until <= now())
   FOR UPDATE OF o SKIP LOCKED)
UPDATE email_outbox o SET claimed_until = now() + make_interval(secs => $2), claim_token = gen_random_uuid()
  FROM due WHERE o.id = due.id
RETURNING o.id, true AS active, o.attempt_count, o.claim_token, '${MAIL_SERVER_TARGET}'::uuid AS endpoint_id, o.workspace_id,
          o.kind, o.to_address, o.subscription_id, o.form_id, o.response_id, o.since, o.until, o.sealed`;

/**
 * Digests due (hourly or daily subscriptions whose window has passed), up to 500 a statement: each
 * window moves on, and a message is queued where the window holds a response and the person is
 * still a member. SKIP LOCKED: two instances never queue one window twice.
 */
const DIGEST_SQL = `WITH due AS (
  SELECT s.id, s.digest_from FROM email_subscriptions s
   WHERE s.mode <> 'each'
     AND s.digest_from <= now() - CASE s.mode WHEN 'hourly' THEN interval '1 hour' ELSE interval '1 day' END
   ORDER BY s.digest_from LIMIT 500 FOR UPDATE SKIP LOCKED),
moved AS (
  UPDATE email_subscriptions s SET digest_from = now() FROM due WHERE s.id = due.id
  RETURNING s.id, s.workspace_id, s.form_id, s.user_id, due.digest_from AS since, s.digest_from AS until),
queued AS (
  INSERT INTO email_outbox (workspace_id, kind, to_address, subscription_id, form_id, since, until)
  SELECT m.workspace_id, 'digest', u.email, m.id, m.form_id, m.since, m.until FROM moved m
    JOIN memberships ms ON ms.workspace_id = m.workspace_id AND ms.user_id = m.user_id
    JOIN users u ON u.id = m.user_id
   WHERE EXISTS (SELECT 1 FROM responses r WHERE r.form_id = m.form_id AND r.submitted_at >= m.since AND r.submitted_at < m.until))
SELECT count(*)::int AS moved FROM moved`;

/** The email loop's SQL (DeliveryLoop through EmailChannel), on connections of its own. */
export class EmailLoopRepository extends LoopConnections {
  constructor(databaseUrl: string, warn: (message: string) => void) {
    super(databaseUrl, warn, 'email');
  }

  async claim(limit: number, leaseSeconds: number, inFlight: InFlight, caps: ClaimCaps): Promise<ClaimedEmail[]> {
    const byWorkspace = inFlight.byWorkspace;
    const { rows } = await this.loopQuery('claim', CLAIM_SQL, [
      limit,
      leaseSeconds,
      caps.window,
      [...byWorkspace].filter(([, n]) => n >= caps.perWorkspace).map(([id]) => id),
      [...byWorkspace.keys()],
      [...byWorkspace.values()],
      caps.perWorkspace,
    ]);
    return rows;
  }

  /** Emails are never paused. */
  resumePaused(): Promise<number> {
    return Promise.resolve(0);
  }

  /**
   * Records an attempt that did not deliver: retried (due at `next`), failed (a 5xx, or no attempt
   * left) or cancelled ('gone': what it was about is deleted, or its subscription ended), with the
   * server's answer; only while this instance's claim holds.
   */
  async recordAttempt(
    claimed: ClaimedEmail,
    attempt: AttemptRecord,
    outcome: Exclude<AttemptOutcome, 'delivered'>,
    next: Date | null,
  ): Promise<void> {
    await this.loopQuery(
      'record_attempt',
      `UPDATE email_outbox
          SET status = CASE $3::text WHEN 'retry' THEN 'pending' WHEN 'gone' THEN 'cancelled' ELSE 'failed' END,
              next_attempt_at = $4, claim_token = NULL, claimed_until = NULL,
              attempt_count = attempt_count + CASE $3::text WHEN 'gone' THEN 0 ELSE 1 END,
              last_attempt_at = $5, last_code = $6, last_answer = $7,
              sealed = CASE $3::text WHEN 'retry' THEN sealed END
        WHERE id = $1 AND claim_token = $2`,
      [
        claimed.id,
        claimed.claim_token,
        outcome,
        next,
        attempt.attemptedAt,
        attempt.statusCode,
        attempt.error ?? attempt.responseBody,
      ],
    );
  }

  /** Records sent emails in one statement, with the server's answer (its queue id, as a rule). */
  async recordDelivered(items: Array<{ claimed: ClaimedEmail; attempt: AttemptRecord }>): Promise<void> {
    await this.loopQuery(
      'record_delivered',
      `UPDATE email_outbox o
          SET status = 'sent', next_attempt_at = NULL, claim_token = NULL, claimed_until = NULL,
              attempt_count = o.attempt_count + 1, last_attempt_at = r.at, last_code = r.code, last_answer = r.answer,
              sealed = NULL
         FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::int[], $5::text[]) AS r(id, token, at, code, answer)
        WHERE o.id = r.id AND o.claim_token = r.token`,
      columns(
        items.map(({ claimed: c, attempt: a }) => [c.id, c.claim_token, a.attemptedAt, a.statusCode, a.responseBody]),
        5,
      ),
    );
  }

  async release(claimed: ClaimedEmail): Promise<void> {
    await this.pool.query(
      `UPDATE email_outbox SET claimed_until = NULL, claim_token = NULL WHERE id = $1 AND claim_token = $2`,
      [claimed.id, claimed.claim_token],
    );
  }

  /** Deletes up to `batch` emails older than `days` that are done with (sent, failed, cancelled). */
  async purgeDeliveries(days: number, batch: number): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM email_outbox WHERE id = ANY (ARRAY(
         SELECT id FROM email_outbox WHERE status <> 'pending' AND created_at < now() - make_interval(days => $1) LIMIT $2))`,
      [days, batch],
    );
    return rowCount ?? 0;
  }

  /** Queues the digests due (DIGEST_SQL); how many windows moved on. */
  async queueDigests(): Promise<number> {
    const { rows } = await this.pool.query(DIGEST_SQL);
    return (rows[0] as { moved: number }).moved;
  }

  /**
   * What each message is about, to render it, in one statement for a claim's batch: by email id;
   * the form, response, subscription (with its person still a member) or digest window missing
   * when gone.
   */
  async contentsOf(emails: ClaimedEmail[]): Promise<Map<string, EmailContent>> {
    const { rows } = await this.loopQuery(
      'contents',
      `SELECT e.id AS email_id, f.title, f.public_id, w.slug, w.name AS workspace,
              (SELECT json_agg(json_build_object('id', b.id, 'title', b.title, 'type', b.type, 'settings', b.settings) ORDER BY b.position)
                 FROM blocks b WHERE b.form_id = f.id) AS blocks,
              r.answers, r.submitted_at, r.hidden, r.variables, f.receipt,
              (SELECT s.mode FROM email_subscriptions s
                 JOIN memberships m ON m.workspace_id = s.workspace_id AND m.user_id = s.user_id
                WHERE s.id = e.subscription_id) AS mode,
              CASE WHEN e.since IS NOT NULL THEN (
                SELECT json_build_object('count', count(*), 'latest',
                         (SELECT json_agg(json_build_object('id', l.id, 'submittedAt', l.submitted_at))
                            FROM (SELECT id, submitted_at FROM responses
                                   WHERE form_id = f.id AND submitted_at >= e.since AND submitted_at < e.until
                                   ORDER BY submitted_at DESC LIMIT 20) l))
                  FROM responses d WHERE d.form_id = f.id AND d.submitted_at >= e.since AND d.submitted_at < e.until) END AS digest
         FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::uuid[], $6::timestamptz[], $7::timestamptz[])
              AS e(id, workspace_id, form_id, subscription_id, response_id, since, until)
         JOIN workspaces w ON w.id = e.workspace_id
         LEFT JOIN forms f ON f.id = e.form_id AND f.workspace_id = w.id
         LEFT JOIN responses r ON r.id = e.response_id AND r.form_id = f.id`,
      columns(
        emails.map((e) => [e.id, e.workspace_id, e.form_id, e.subscription_id, e.response_id, e.since, e.until]),
        7,
      ),
    );
    return new Map((rows as Array<EmailContent & { email_id: string }>).map((r) => [r.email_id, r]));
  }
}

/** Rows of `width` values as `width` arrays, one per column (the parameters of an unnest). */
function columns(rows: unknown[][], width: number): unknown[][] {
  return Array.from({ length: width }, (_, k) => rows.map((r) => r[k]));
}

export interface EmailContent {
  title: string | null;
  public_id: string | null;
  slug: string;
  workspace: string;
  blocks: Array<{ id: string; title: string; type: string; settings: Record<string, unknown> }> | null;
  answers: Record<string, unknown> | null;
  hidden: Record<string, string> | null;
  variables: Record<string, number | string> | null;
  receipt: { to: string; subject?: string; message?: string } | null;
  submitted_at: Date | null;
  mode: 'each' | 'hourly' | 'daily' | null;
  digest: { count: number; latest: Array<{ id: string; submittedAt: string }> | null } | null;
}

import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { currentManager, inTransaction } from '../database/transaction';

export type NotifyMode = 'off' | 'each' | 'hourly' | 'daily';
export const NOTIFY_MODES: readonly NotifyMode[] = ['off', 'each', 'hourly', 'daily'];
export const OUTBOX_STATUSES = ['pending', 'sent', 'failed', 'cancelled'] as const;

export interface OutboxRow {
  id: string;
  kind: string;
  toAddress: string;
  status: string;
  attemptCount: number;
  lastAttemptAt: Date | null;
  lastCode: number | null;
  lastAnswer: string | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
}

/** The email settings' SQL on the request side: subscriptions, the outbox log, test messages, unsubscribes. */
@Injectable()
export class EmailRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The workspace's forms (newest first, 200 at most) and this person's notification mode of each. */
  forms(workspaceId: string, userId: string): Promise<Array<{ publicId: string; title: string; mode: NotifyMode }>> {
    return currentManager(this.db).query(
      `SELECT f.public_id AS "publicId", f.title, COALESCE(s.mode, 'off') AS mode
         FROM forms f LEFT JOIN email_subscriptions s ON s.form_id = f.id AND s.user_id = $2
        WHERE f.workspace_id = $1 ORDER BY f.created_at DESC, f.id LIMIT 200`,
      [workspaceId, userId],
    );
  }

  /** Sets this member's mode of one form of the workspace ('off' deletes it); false when the form is not the workspace's. */
  async setMode(workspaceId: string, userId: string, publicId: string, mode: NotifyMode): Promise<boolean> {
    const m = currentManager(this.db);
    const [form] = await m.query(`SELECT id FROM forms WHERE public_id = $1 AND workspace_id = $2`, [
      publicId,
      workspaceId,
    ]);
    if (!form) return false;
    if (mode === 'off') {
      await m.query(`DELETE FROM email_subscriptions WHERE form_id = $1 AND user_id = $2`, [form.id, userId]);
      return true;
    }
    // Only a member: the subscription is written for one of the workspace's members or not at all.
    await m.query(
      `INSERT INTO email_subscriptions (workspace_id, form_id, user_id, mode)
       SELECT $1, $2, user_id, $4 FROM memberships WHERE workspace_id = $1 AND user_id = $3
       ON CONFLICT (form_id, user_id) DO UPDATE SET mode = EXCLUDED.mode`,
      [workspaceId, form.id, userId, mode],
    );
    return true;
  }

  async outbox(workspaceId: string, o: { status?: string; limit: number; offset: number }): Promise<OutboxRow[]> {
    return currentManager(this.db).query(
      `SELECT id, kind, to_address AS "toAddress", status, attempt_count AS "attemptCount", last_attempt_at AS "lastAttemptAt",
              last_code AS "lastCode", last_answer AS "lastAnswer", next_attempt_at AS "nextAttemptAt", created_at AS "createdAt"
         FROM email_outbox WHERE workspace_id = $1 AND ($2::text IS NULL OR status = $2)
        ORDER BY created_at DESC, id LIMIT $3 OFFSET $4`,
      [workspaceId, o.status ?? null, o.limit, o.offset],
    );
  }

  /** Makes a failed message of the workspace due again, its attempts counted afresh; whether there was one. */
  async retry(workspaceId: string, id: string): Promise<boolean> {
    const rows = await currentManager(this.db).query(
      // A SELECT of the CTE: TypeORM answers an UPDATE with [rows, count], a SELECT with its rows.
      `WITH u AS (
         UPDATE email_outbox SET status = 'pending', next_attempt_at = now(), attempt_count = 0
          WHERE id = $1 AND workspace_id = $2 AND status = 'failed' RETURNING id)
       SELECT id FROM u`,
      [id, workspaceId],
    );
    return rows.length > 0;
  }

  /** Messages waiting (on every workspace): what /readyz reports. */
  async pending(): Promise<number> {
    const [row] = await currentManager(this.db).query(
      `SELECT count(*)::int AS n FROM email_outbox WHERE status = 'pending'`,
    );
    return row.n;
  }

  /** Emails waiting on every workspace, and how long the oldest due one has waited (/metrics). */
  async outboxStats(): Promise<{ pending: number; oldestAgeSeconds: number }> {
    const [row] = await currentManager(this.db).query(
      `SELECT count(*)::int AS pending, COALESCE(GREATEST(0, EXTRACT(EPOCH FROM now() - min(next_attempt_at))), 0)::float8 AS age
         FROM email_outbox WHERE status = 'pending'`,
    );
    return { pending: row.pending, oldestAgeSeconds: row.age };
  }

  async queueTest(workspaceId: string, to: string): Promise<void> {
    await currentManager(this.db).query(
      `INSERT INTO email_outbox (workspace_id, kind, to_address) VALUES ($1, 'test', $2)`,
      [workspaceId, to],
    );
  }

  /**
   * Queues a message asked for on a form's page (a resume link), unless the recipient, the client or
   * the form has had its hour's share: the limit hit, or null when queued. A transaction-scoped
   * advisory lock per address makes the recipient's count exact under concurrency.
   */
  async queueForRespondent(m: {
    workspaceId: string;
    formId: string;
    kind: 'resume';
    to: string;
    clientIp: string;
    sealed: string;
    limits: { perAddress: number; perClient: number; perForm: number };
  }): Promise<'address' | 'client' | 'form' | null> {
    return inTransaction(this.db, async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('formwork.email:' || $1, 0))`, [m.to]);
      const [counts] = await tx.query(
        `SELECT (SELECT count(*)::int FROM email_outbox WHERE to_address = $1 AND form_id IS NOT NULL
                    AND subscription_id IS NULL AND created_at > now() - interval '1 hour') AS address,
                (SELECT count(*)::int FROM email_outbox WHERE client_ip = $2 AND created_at > now() - interval '1 hour') AS client,
                (SELECT count(*)::int FROM email_outbox WHERE form_id = $3 AND subscription_id IS NULL AND kind = $4
                    AND created_at > now() - interval '1 hour') AS form`,
        [m.to, m.clientIp, m.formId, m.kind],
      );
      if (counts.address >= m.limits.perAddress) return 'address';
      if (counts.client >= m.limits.perClient) return 'client';
      if (counts.form >= m.limits.perForm) return 'form';
      await tx.query(
        `INSERT INTO email_outbox (workspace_id, kind, to_address, form_id, client_ip, sealed) VALUES ($1, $2, $3, $4, $5, $6)`,
        [m.workspaceId, m.kind, m.to, m.formId, m.clientIp, m.sealed],
      );
      return null;
    });
  }

  /** Ends a subscription; the form's title when there was one. */
  async unsubscribe(subscriptionId: string): Promise<string | null> {
    const rows = await currentManager(this.db).query(
      `WITH d AS (DELETE FROM email_subscriptions WHERE id = $1 RETURNING form_id)
       SELECT f.title FROM d JOIN forms f ON f.id = d.form_id`,
      [subscriptionId],
    );
    return rows[0]?.title ?? null;
  }

  /** The form a subscription is about (for the unsubscribe page), or null when it ended. */
  async subscriptionTitle(subscriptionId: string): Promise<string | null> {
    const rows = await currentManager(this.db).query(
      `SELECT f.title FROM email_subscriptions s JOIN forms f ON f.id = s.form_id WHERE s.id = $1`,
      [subscriptionId],
    );
    return rows[0]?.title ?? null;
  }
}

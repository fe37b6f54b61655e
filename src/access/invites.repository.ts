/** The SQL of invitations (issue 47): form_invites. */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { FormInviteEntity } from './entities/form-invite.entity';

export type InviteRow = Omit<FormInviteEntity, 'form' | 'secretHash' | 'position'>;

const COLUMNS = `i.id, i.form_id AS "formId", i.hidden, i.email, i.expires_at AS "expiresAt", i.created_at AS "createdAt",
  i.revoked_at AS "revokedAt", i.completed_at AS "completedAt", i.response_id AS "responseId"`;

/** What the UPDATE statements answer: [rows, count]. */
type Updated<T> = [T[], number];

@Injectable()
export class InvitesRepository {
  /**
   * Inserts a create_invites call's invites, in order. Calls for one form take turns (a lock held
   * to the commit) and stamp their rows after taking it, so a later call's rows sort after every
   * committed one: new invites only append, and a walk of the pages by offset is exact.
   */
  async insertMany(
    tx: EntityManager,
    formId: string,
    rows: Array<{ id: string; hash: Buffer; hidden: Record<string, string>; email: string | null }>,
    expiresAt: Date | null,
  ): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('formwork.invites:' || $1, 0))`, [formId]);
    await tx.query(
      `INSERT INTO form_invites (id, form_id, secret_hash, hidden, email, expires_at, created_at, position)
         SELECT r.id, $1, r.hash, r.hidden, r.email, $3, t.at, r.n
           FROM unnest($2::uuid[], $4::bytea[], $5::jsonb[], $6::text[]) WITH ORDINALITY AS r(id, hash, hidden, email, n),
                (SELECT clock_timestamp() AS at) t`,
      [
        formId,
        rows.map((r) => r.id),
        expiresAt,
        rows.map((r) => r.hash),
        rows.map((r) => JSON.stringify(r.hidden)),
        rows.map((r) => r.email),
      ],
    );
  }

  /** A page of the form's invites, oldest first (new ones only append: a walk by offset is exact), and how many it has. */
  async page(m: EntityManager, formId: string, limit: number, offset: number) {
    const [{ total }] = (await m.query(`SELECT count(*)::int AS total FROM form_invites WHERE form_id = $1`, [
      formId,
    ])) as Array<{ total: number }>;
    const rows = (await m.query(
      `SELECT ${COLUMNS} FROM form_invites i WHERE i.form_id = $1 ORDER BY i.created_at, i.position LIMIT $2 OFFSET $3`,
      [formId, limit, offset],
    )) as InviteRow[];
    return { total, rows };
  }

  /** The invite of a secret's hash, any form's; `lock` holds it for this transaction (its one answer). */
  async findByHash(m: EntityManager, hash: Buffer, lock = false): Promise<InviteRow | undefined> {
    const rows = (await m.query(
      `SELECT ${COLUMNS} FROM form_invites i WHERE i.secret_hash = $1${lock ? ' FOR UPDATE' : ''}`,
      [hash],
    )) as InviteRow[];
    return rows[0];
  }

  /** The invite `id` (of `formId`, when given). */
  async findById(m: EntityManager, formId: string | null, id: string): Promise<InviteRow | undefined> {
    const rows = (await m.query(
      `SELECT ${COLUMNS} FROM form_invites i WHERE i.id = $1 AND ($2::uuid IS NULL OR i.form_id = $2)`,
      [id, formId],
    )) as InviteRow[];
    return rows[0];
  }

  /** The invite whose walk saved this partial (or that this response answered). */
  async findByResponse(m: EntityManager, formId: string, responseId: string): Promise<InviteRow | undefined> {
    const rows = (await m.query(`SELECT ${COLUMNS} FROM form_invites i WHERE i.response_id = $1 AND i.form_id = $2`, [
      responseId,
      formId,
    ])) as InviteRow[];
    return rows[0];
  }

  /** Records the partial an unused invite's walk saved first: the invite reads as started. */
  async start(m: EntityManager, id: string, responseId: string): Promise<void> {
    await m.query(
      `UPDATE form_invites SET response_id = $2 WHERE id = $1 AND response_id IS NULL AND completed_at IS NULL`,
      [id, responseId],
    );
  }

  /**
   * Marks the invite answered by `responseId` (again by the same response: a no-op), if it is still
   * open; the row stays locked until the transaction ends, so a second answer waits, then finds it
   * answered. Whether it was.
   */
  async answer(tx: EntityManager, id: string, responseId: string): Promise<boolean> {
    const [rows] = (await tx.query(
      `UPDATE form_invites SET completed_at = COALESCE(completed_at, clock_timestamp()), response_id = $2
        WHERE id = $1 AND (completed_at IS NULL OR response_id = $2) AND revoked_at IS NULL
          AND (expires_at IS NULL OR expires_at > clock_timestamp())
        RETURNING id`,
      [id, responseId],
    )) as Updated<{ id: string }>;
    return rows.length === 1;
  }

  /** Revokes the given invites of the form that are not answered nor revoked; the ids it revoked. */
  async revoke(tx: EntityManager, formId: string, ids: string[]): Promise<string[]> {
    const [rows] = (await tx.query(
      `UPDATE form_invites SET revoked_at = clock_timestamp()
        WHERE form_id = $1 AND id = ANY($2::uuid[]) AND revoked_at IS NULL AND completed_at IS NULL
        RETURNING id`,
      [formId, ids],
    )) as Updated<{ id: string }>;
    return rows.map((r) => r.id);
  }

  /** Which of `ids` are the form's. */
  async existing(m: EntityManager, formId: string, ids: string[]): Promise<Set<string>> {
    const rows = (await m.query(`SELECT id FROM form_invites WHERE form_id = $1 AND id = ANY($2::uuid[])`, [
      formId,
      ids,
    ])) as Array<{ id: string }>;
    return new Set(rows.map((r) => r.id));
  }
}

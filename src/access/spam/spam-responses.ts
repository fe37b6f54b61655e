/**
 * The posts the spam gate judged as spam (table spam_responses, issue 47): kept apart from
 * responses so that nothing counts them, listed by list_responses { status: "spam" }, deleted by
 * delete_response, restored by update_response (the responses service completes them as responses).
 */
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { uuidv7 } from '../../common/ids';

export interface SpamRow {
  id: string;
  answers: Record<string, unknown>;
  hidden: Record<string, string>;
  reason: string;
  receivedAt: Date;
}

const COLUMNS = `id, answers, hidden, reason, received_at AS "receivedAt"`;

@Injectable()
export class SpamResponses {
  /** Keeps a post judged as spam; its id. */
  async keep(
    m: EntityManager,
    formId: string,
    post: { answers: Record<string, unknown>; hidden?: Record<string, string>; reason: string },
  ): Promise<string> {
    const id = uuidv7();
    await m.query(`INSERT INTO spam_responses (id, form_id, answers, hidden, reason) VALUES ($1, $2, $3, $4, $5)`, [
      id,
      formId,
      JSON.stringify(post.answers),
      JSON.stringify(post.hidden ?? {}),
      post.reason,
    ]);
    return id;
  }

  /** A page of the form's spam, in arrival (id) order or its reverse, and how many there are. */
  async page(
    m: EntityManager,
    formId: string,
    at: { offset: number; limit: number; order: 'oldest' | 'newest' },
  ): Promise<{ total: number; rows: SpamRow[] }> {
    const [{ total }] = await m.query(`SELECT count(*)::int AS total FROM spam_responses WHERE form_id = $1`, [formId]);
    const rows: SpamRow[] = await m.query(
      `SELECT ${COLUMNS} FROM spam_responses WHERE form_id = $1 ORDER BY id ${at.order === 'newest' ? 'DESC' : 'ASC'} OFFSET $2 LIMIT $3`,
      [formId, at.offset, at.limit],
    );
    return { total, rows };
  }

  async find(m: EntityManager, formId: string, id: string): Promise<SpamRow | undefined> {
    const [row] = await m.query(`SELECT ${COLUMNS} FROM spam_responses WHERE form_id = $1 AND id = $2::uuid`, [
      formId,
      id,
    ]);
    return row as SpamRow | undefined;
  }

  /** Deletes one; whether it was there. */
  async remove(m: EntityManager, formId: string, id: string): Promise<boolean> {
    const [, count] = (await m.query(`DELETE FROM spam_responses WHERE form_id = $1 AND id = $2::uuid`, [
      formId,
      id,
    ])) as [unknown, number];
    return count > 0;
  }
}

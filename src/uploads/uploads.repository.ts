/** The SQL of uploads (UploadsRepository). */
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

export interface UploadRow {
  id: string;
  workspaceId: string;
  formId: string;
  blockId: string;
  name: string;
  contentType: string;
  size: number;
  responseId: string | null;
  /** The stored bytes' size when they came through the service (then typeProblem is the type check's finding). */
  storedSize: number | null;
  typeProblem: string | null;
}

/** What an object key is made of. */
export type UploadKeyParts = Pick<UploadRow, 'id' | 'workspaceId' | 'formId'>;

const COLUMNS = `id, workspace_id AS "workspaceId", form_id AS "formId", block_id AS "blockId", name,
  content_type AS "contentType", size::float8 AS size, response_id AS "responseId",
  stored_size::float8 AS "storedSize", type_problem AS "typeProblem"`;
const KEY_COLUMNS = `id, workspace_id AS "workspaceId", form_id AS "formId"`;

@Injectable()
export class UploadsRepository {
  async insert(
    m: EntityManager,
    u: Omit<UploadRow, 'responseId' | 'storedSize' | 'typeProblem'> & Partial<UploadRow> & { clientHash?: Buffer },
  ): Promise<void> {
    await m.query(
      `INSERT INTO uploads (id, workspace_id, form_id, block_id, name, content_type, size, stored_size, type_problem, client_hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        u.id,
        u.workspaceId,
        u.formId,
        u.blockId,
        u.name,
        u.contentType,
        u.size,
        u.storedSize,
        u.typeProblem,
        u.clientHash ?? null,
      ],
    );
  }

  /**
   * The pending uploads (count, declared bytes) of one client (its keyed IP hash, every form) and
   * of one form, each read from its partial index (IDX_uploads_pending_client, _form).
   */
  async pendingTotals(
    m: EntityManager,
    formId: string,
    clientHash: Buffer,
  ): Promise<{ client: { n: number; bytes: number }; form: { n: number; bytes: number } }> {
    const [row] = await m.query(
      `SELECT c.n AS "clientN", c.bytes AS "clientBytes", f.n AS "formN", f.bytes AS "formBytes"
         FROM (SELECT count(*)::float8 AS n, COALESCE(sum(size), 0)::float8 AS bytes FROM uploads
                WHERE client_hash = $2 AND response_id IS NULL) c,
              (SELECT count(*)::float8 AS n, COALESCE(sum(size), 0)::float8 AS bytes FROM uploads
                WHERE form_id = $1 AND response_id IS NULL) f`,
      [formId, clientHash],
    );
    return { client: { n: row.clientN, bytes: row.clientBytes }, form: { n: row.formN, bytes: row.formBytes } };
  }

  /** What the service saw of a pending upload's bytes (they never change after: the disk writes a key once). */
  async recordStored(m: EntityManager, id: string, storedSize: number, typeProblem: string | null): Promise<void> {
    await m.query(`UPDATE uploads SET stored_size = $2, type_problem = $3 WHERE id = $1 AND response_id IS NULL`, [
      id,
      storedSize,
      typeProblem,
    ]);
  }

  /** The uploads of these ids, locked until the transaction ends (two submissions naming one wait for each other). */
  findForUpdate(m: EntityManager, ids: string[]): Promise<UploadRow[]> {
    return m.query(`SELECT ${COLUMNS} FROM uploads WHERE id = ANY($1::text[]) FOR UPDATE`, [ids]);
  }

  find(m: EntityManager, ids: string[]): Promise<UploadRow[]> {
    return m.query(`SELECT ${COLUMNS} FROM uploads WHERE id = ANY($1::text[])`, [ids]);
  }

  async hold(m: EntityManager, responseId: string, ids: string[]): Promise<void> {
    await m.query(`UPDATE uploads SET response_id = $1 WHERE id = ANY($2::text[]) AND response_id IS NULL`, [
      responseId,
      ids,
    ]);
  }

  /**
   * Holds, in one statement, the named uploads whose bytes need no further check: pending, of this
   * workspace, form and block, their bytes seen by the service at the declared size with no type
   * problem. Answers the rows held (the caller checks them against the block as it is now, and
   * rolls the transaction back when one no longer fits).
   */
  async holdChecked(
    m: EntityManager,
    o: { responseId: string; workspaceId: string; formId: string; named: Array<{ id: string; blockId: string }> },
  ): Promise<UploadRow[]> {
    const rows: unknown = await m.query(
      `UPDATE uploads u SET response_id = $1
         FROM unnest($2::text[], $3::text[]) AS n(id, block_id)
        WHERE u.id = n.id AND u.block_id = n.block_id AND u.workspace_id = $4 AND u.form_id = $5
          AND u.response_id IS NULL AND u.stored_size = u.size AND u.type_problem IS NULL
        RETURNING u.id, u.workspace_id AS "workspaceId", u.form_id AS "formId", u.block_id AS "blockId", u.name,
          u.content_type AS "contentType", u.size::float8 AS size, u.response_id AS "responseId",
          u.stored_size::float8 AS "storedSize", u.type_problem AS "typeProblem"`,
      [o.responseId, o.named.map((n) => n.id), o.named.map((n) => n.blockId), o.workspaceId, o.formId],
    );
    return (Array.isArray(rows) && Array.isArray(rows[0]) ? rows[0] : rows) as UploadRow[];
  }

  deleteForResponses(m: EntityManager, responseIds: string[]): Promise<UploadKeyParts[]> {
    return returning(m, `DELETE FROM uploads WHERE response_id = ANY($1::uuid[]) RETURNING ${KEY_COLUMNS}`, [
      responseIds,
    ]);
  }

  deleteForForm(m: EntityManager, formId: string): Promise<UploadKeyParts[]> {
    return returning(m, `DELETE FROM uploads WHERE form_id = $1 RETURNING ${KEY_COLUMNS}`, [formId]);
  }

  /** Deletes these uploads if still pending. */
  deletePendingIds(m: EntityManager, ids: string[]): Promise<UploadKeyParts[]> {
    return returning(
      m,
      `DELETE FROM uploads WHERE id = ANY($1::text[]) AND response_id IS NULL RETURNING ${KEY_COLUMNS}`,
      [ids],
    );
  }

  /**
   * Which of these ids have a row, with its key's parts and whether its bytes may still arrive by
   * its URL (pending, none received yet: the orphan sweep keeps S3's `.upload` of those only).
   */
  keysOf(m: EntityManager, ids: string[]): Promise<Array<UploadKeyParts & { awaiting: boolean }>> {
    return m.query(
      `SELECT ${KEY_COLUMNS}, response_id IS NULL AND stored_size IS NULL AS awaiting FROM uploads WHERE id = ANY($1::text[])`,
      [ids],
    );
  }

  /** Deletes up to `limit` uploads pending since before `before`, oldest first, skipping rows another instance holds. */
  deletePending(m: EntityManager, before: Date, limit: number): Promise<UploadKeyParts[]> {
    return returning(
      m,
      `DELETE FROM uploads WHERE id IN (
         SELECT id FROM uploads WHERE response_id IS NULL AND created_at < $1
         ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING ${KEY_COLUMNS}`,
      [before, limit],
    );
  }

  /** The bytes of a workspace's held uploads (pending ones go within 24 hours). */
  async heldBytes(m: EntityManager, workspaceId: string): Promise<number> {
    const [row] = await m.query(
      `SELECT COALESCE(sum(size), 0)::float8 AS bytes FROM uploads WHERE workspace_id = $1 AND response_id IS NOT NULL`,
      [workspaceId],
    );
    return row.bytes;
  }

  async deleteOne(m: EntityManager, id: string): Promise<void> {
    await m.query(`DELETE FROM uploads WHERE id = $1`, [id]);
  }
}

/** A DELETE ... RETURNING's rows (TypeORM's postgres driver answers [rows, count] for it). */
async function returning(m: EntityManager, sql: string, params: unknown[]): Promise<UploadKeyParts[]> {
  const result: unknown = await m.query(sql, params);
  return (Array.isArray(result) && Array.isArray(result[0]) ? result[0] : result) as UploadKeyParts[];
}

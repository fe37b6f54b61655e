/** The SQL of forms and their blocks (FormsRepository), and FormRecord, a form as read. */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { allowLongStatements } from '../database/long-statements';
import { prepared } from '../database/prepared';
import type { Block } from './blocks';
import type { BlockEntity } from './entities/block.entity';
import type { FormAccess, FormEntity, FormStatus, ReceiptSetting } from './entities/form.entity';

/** A form as read from the database, with its blocks in order. */
export type FormRecord = Omit<FormEntity, 'workspace'> & {
  blocks: Block[];
  /** Published, its closesAt passed, and not closed yet: it reads as closed, and is closed on read (issue 47). */
  closeDue?: boolean;
  /** The language its texts are in, when the respondent page drew it in one of its languages (issue 51). */
  language?: string;
};

/** A form as a list shows it: no blocks, but how many responses it has and when the last came. */
export type FormListItem = FormRecord & { responseCount: number; lastResponseAt: Date | null };

/** A block as the form's read returns it: its settings are spread into the Block. */
type BlockRow = Pick<BlockEntity, 'id' | 'title' | 'description' | 'required' | 'settings'> & { type: Block['type'] };

/** The columns of FormEntity, under its property names. */
/**
 * A published form whose closesAt passed reads as closed (with closedAt its closesAt) from that
 * second on, before the schedule sweep (AccessService) persists it (issue 47).
 */
const DUE = `(f.status = 'published' AND f.closes_at <= clock_timestamp())`;
const STATUS = `CASE WHEN ${DUE} THEN 'closed' ELSE f.status END AS status`;

const FORM_COLUMNS = `f.id, f.public_id AS "publicId", f.workspace_id AS "workspaceId", f.title, f.description,
  ${STATUS}, f.hidden_fields AS "hiddenFields", f.version, f.created_at AS "createdAt", f.updated_at AS "updatedAt", f.published_at AS "publishedAt",
  CASE WHEN ${DUE} THEN f.closes_at ELSE f.closed_at END AS "closedAt", f.partial_responses AS "partialResponses",
  f.opens_at AS "opensAt", f.closes_at AS "closesAt", f.spam_protection AS "spamProtection", ${DUE} AS "closeDue", f.compute, f.access,
  f.max_responses AS "maxResponses", f.quotas, f.receipt, f.languages, f.translations`;

/** Blocks in order, as one JSON value, so a form and its blocks cost one round trip. */
const BLOCKS_JSON = `COALESCE((SELECT json_agg(json_build_object('id', b.id, 'type', b.type, 'title', b.title,
    'description', b.description, 'required', b.required, 'settings', b.settings) ORDER BY b.position)
  FROM blocks b WHERE b.form_id = f.id), '[]'::json) AS blocks`;

/** Which form to read: by public id alone (the respondent page), or within a workspace. */
export interface FormKey {
  publicId: string;
  workspaceId?: string;
}

/** A form's id and the version it is at. */
export interface FormVersion {
  id: string;
  version: number;
}

/** A form key as one string (for findVersions' answer). */
export const versionKey = (key: Required<FormKey>) => `${key.workspaceId}/${key.publicId}`;

/** Forms whose blocks an instance keeps (see FormsRepository.find). */
const KEPT_FORMS = 1000;

/** The SQL of the tables forms and blocks. */
@Injectable()
export class FormsRepository {
  /**
   * The blocks of the forms read lately, by form id, with the version they belong to, most recent
   * last. A form's blocks change only with its version (update_form bumps it in the transaction
   * that replaces them), so a version's blocks, once committed, are those for good.
   */
  private readonly blocksByForm = new Map<string, { version: number; blocks: Block[] }>();

  /**
   * One form with its blocks. Outside a transaction (committed data, no lock), the form's row is
   * read alone, fresh on every call (status, version, settings: whatever an instance changed), and
   * its blocks come from the instance's copy of that version when it has one, so get_form and the
   * respondent page cost one indexed row and no join; another version is read in full and kept.
   */
  async find(manager: EntityManager, key: FormKey, lock?: 'UPDATE' | 'SHARE'): Promise<FormRecord | undefined> {
    const params: unknown[] = [key.publicId];
    let where = 'f.public_id = $1';
    if (key.workspaceId !== undefined) {
      params.push(key.workspaceId);
      where += ' AND f.workspace_id = $2';
    }
    if (lock || manager.queryRunner) return this.findWithBlocks(manager, where, params, lock);
    const [row]: FormRecord[] = await manager.query(
      prepared(manager, `SELECT ${FORM_COLUMNS} FROM forms f WHERE ${where}`),
      params,
    );
    if (!row) return undefined;
    const kept = this.blocksByForm.get(row.id);
    if (kept?.version === row.version) {
      row.blocks = kept.blocks;
      return row;
    }
    const form = await this.findWithBlocks(manager, where, params);
    if (form) {
      // Keyed by the version read with the blocks, in the same statement.
      this.blocksByForm.delete(form.id);
      this.blocksByForm.set(form.id, { version: form.version, blocks: form.blocks });
      if (this.blocksByForm.size > KEPT_FORMS) this.blocksByForm.delete(this.blocksByForm.keys().next().value!);
    }
    return form;
  }

  /**
   * The id and version of each form `keys` names that exists (outside a transaction: as
   * committed), by `versionKey(key)`: what tells whether a view made for a version is still the
   * form's (FormVersionReads). One statement for any number of keys; a key whose workspace id is
   * not a uuid matches nothing rather than failing the others. The rows are picked by two lists, not
   * by joining the keys as pairs: a form whose public id one key names and whose workspace another
   * does comes back under its own key, which no caller of another workspace looks up. It costs the
   * database about half the join's work (40-60 against 80-100 us planned on every call, as behind a
   * transaction pooler; 30-40 against 60 prepared).
   */
  async findVersions(manager: EntityManager, keys: Array<Required<FormKey>>): Promise<Map<string, FormVersion>> {
    const rows: Array<Required<FormKey> & FormVersion> = await manager.query(
      prepared(
        manager,
        `SELECT f.public_id AS "publicId", f.workspace_id AS "workspaceId", f.id, f.version
           FROM forms f WHERE f.public_id = ANY($1::text[]) AND f.workspace_id::text = ANY($2::text[])`,
      ),
      [keys.map((k) => k.publicId), keys.map((k) => k.workspaceId)],
    );
    return new Map(rows.map((r) => [versionKey(r), { id: r.id, version: r.version }]));
  }

  /**
   * The form and its blocks in one statement. With a lock, the row is locked by a statement of its
   * own and the form read by the next one: under READ COMMITTED, a statement that waited for a lock
   * re-checks only the locked row, and a subquery in it (the blocks) still reads the snapshot taken
   * before the wait. Reading after the lock is held sees what a concurrent edit committed.
   */
  private async findWithBlocks(
    manager: EntityManager,
    where: string,
    params: unknown[],
    lock?: 'UPDATE' | 'SHARE',
  ): Promise<FormRecord | undefined> {
    if (lock) {
      const locked: unknown[] = await manager.query(
        prepared(manager, `SELECT 1 FROM forms f WHERE ${where} FOR ${lock}`),
        params,
      );
      if (locked.length === 0) return undefined;
    }
    const rows: Array<Omit<FormRecord, 'blocks'> & { blocks: BlockRow[] }> = await manager.query(
      prepared(manager, `SELECT ${FORM_COLUMNS}, ${BLOCKS_JSON} FROM forms f WHERE ${where}`),
      params,
    );
    const row = rows[0];
    if (!row) return undefined;
    // Each block's settings beside its columns. Built field by field: object rest (`{ settings, ...b }`)
    // costs several times as much, on every read of a form.
    const form = row as unknown as FormRecord;
    form.blocks = row.blocks.map(
      (b) =>
        Object.assign(
          { id: b.id, type: b.type, title: b.title, description: b.description, required: b.required },
          b.settings,
        ) as Block,
    );
    return form;
  }

  /**
   * A page of a workspace's forms in creation order, without their blocks, and how many there are.
   * Each form's response count is its sequenced total plus the responses still waiting for their
   * seq (a partial index holds only those), and its last response time is an index-only max: both
   * cost the same at ten responses as at ten million.
   */
  async list(
    manager: EntityManager,
    workspaceId: string,
    opts: { limit: number; offset: number; status?: FormStatus },
  ): Promise<{ total: number; forms: FormListItem[] }> {
    const params: unknown[] = [workspaceId];
    let where = 'f.workspace_id = $1';
    if (opts.status) {
      params.push(opts.status);
      where += ` AND (CASE WHEN ${DUE} THEN 'closed' ELSE f.status END) = $${params.length}`;
    }
    const [{ total }] = await manager.query(`SELECT count(*)::int AS total FROM forms f WHERE ${where}`, params);
    const rows: Array<Omit<FormListItem, 'blocks'>> = await manager.query(
      `SELECT ${FORM_COLUMNS},
              COALESCE((SELECT c.total FROM response_counters c WHERE c.form_id = f.id), 0)::int
                + (SELECT count(*) FROM responses u WHERE u.form_id = f.id AND u.seq IS NULL)::int AS "responseCount",
              (SELECT max(m.submitted_at) FROM responses m WHERE m.form_id = f.id) AS "lastResponseAt"
         FROM forms f WHERE ${where} ORDER BY f.created_at, f.id
        LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, opts.limit, opts.offset],
    );
    return { total, forms: rows.map((f) => ({ ...f, blocks: [] })) };
  }

  /** Inserts a draft form; its id. */
  async insert(
    tx: EntityManager,
    form: Pick<FormEntity, 'publicId' | 'workspaceId' | 'title' | 'description' | 'hiddenFields'> &
      Partial<Pick<FormEntity, 'compute'>>,
    createdAt?: Date,
  ): Promise<string> {
    const [{ id }] = await tx.query(
      // clock_timestamp(), not now(): forms made in one transaction still list in creation order.
      `INSERT INTO forms (public_id, workspace_id, title, description, hidden_fields, created_at, updated_at, compute)
       VALUES ($1, $2, $3, $4, $6::jsonb, COALESCE($5::timestamptz, clock_timestamp()), COALESCE($5::timestamptz, clock_timestamp()), $7::jsonb)
       RETURNING id`,
      [
        form.publicId,
        form.workspaceId,
        form.title,
        form.description,
        createdAt ?? null,
        JSON.stringify(form.hiddenFields),
        form.compute ? JSON.stringify(form.compute) : null,
      ],
    );
    return id;
  }

  /** Replaces a form's blocks by `blocks`, in this order. */
  async replaceBlocks(tx: EntityManager, formId: string, blocks: Block[]): Promise<void> {
    await tx.query('DELETE FROM blocks WHERE form_id = $1', [formId]);
    await this.insertBlocks(tx, formId, blocks);
  }

  async insertBlocks(tx: EntityManager, formId: string, blocks: Block[]): Promise<void> {
    if (blocks.length === 0) return;
    const values: unknown[] = [];
    const tuples = blocks.map((b, i) => {
      const { id, type, title, description, required, ...settings } = b;
      values.push(formId, id, i, type, title, description ?? null, required, JSON.stringify(settings));
      const o = i * 8;
      return `($${o + 1}, $${o + 2}, $${o + 3}, $${o + 4}, $${o + 5}, $${o + 6}, $${o + 7}, $${o + 8}::jsonb)`;
    });
    await tx.query(
      `INSERT INTO blocks (form_id, id, position, type, title, description, required, settings) VALUES ${tuples.join(', ')}`,
      values,
    );
  }

  /** Sets the title, description and hidden fields, and bumps the version. */
  async updateContent(
    tx: EntityManager,
    formId: string,
    title: string,
    description: string | null,
    hiddenFields: string[],
  ): Promise<void> {
    await tx.query(
      `UPDATE forms SET title = $2, description = $3, hidden_fields = $4::jsonb, version = version + 1, updated_at = clock_timestamp() WHERE id = $1`,
      [formId, title, description, JSON.stringify(hiddenFields)],
    );
  }

  /** Sets the form's languages and translations (issue 51); the caller bumps the version (a create, updateContent or bumpVersion). */
  async setTranslations(
    tx: EntityManager,
    formId: string,
    languages: string[],
    translations: Record<string, Record<string, string>>,
  ): Promise<void> {
    await tx.query(`UPDATE forms SET languages = $2::jsonb, translations = $3::jsonb WHERE id = $1`, [
      formId,
      JSON.stringify(languages),
      JSON.stringify(translations),
    ]);
  }

  /** Bumps the form's version alone (a change of its translations, issue 51). */
  async bumpVersion(tx: EntityManager, formId: string): Promise<void> {
    await tx.query(`UPDATE forms SET version = version + 1, updated_at = clock_timestamp() WHERE id = $1`, [formId]);
  }

  /** Sets the form's variables, endings and thank-you texts (issue 46); the caller bumps the version (updateContent). */
  async setCompute(tx: EntityManager, formId: string, compute: FormEntity['compute']): Promise<void> {
    await tx.query(`UPDATE forms SET compute = $2::jsonb WHERE id = $1`, [
      formId,
      compute ? JSON.stringify(compute) : null,
    ]);
  }

  /** Sets the form's partialResponses setting (issue 36); the caller bumps the version (a create or updateContent). */
  async setPartialResponses(tx: EntityManager, formId: string, on: boolean): Promise<void> {
    await tx.query(`UPDATE forms SET partial_responses = $2 WHERE id = $1`, [formId, on]);
  }

  /**
   * Sets the status (with its timestamp, `at` or the clock's) and bumps the version. The clock, not
   * now() (the transaction's start): a form created and published in one transaction is published
   * after it was created.
   */
  async setStatus(manager: EntityManager, formId: string, status: FormStatus, at?: Date): Promise<void> {
    await manager.query(
      `UPDATE forms SET status = $2, version = version + 1, updated_at = t.at,
         published_at = CASE WHEN $2 = 'published' THEN t.at ELSE published_at END,
         closed_at = CASE WHEN $2 = 'closed' THEN t.at ELSE NULL END
       FROM (SELECT COALESCE($3::timestamptz, clock_timestamp()) AS at) t
       WHERE id = $1`,
      [formId, status, at ?? null],
    );
  }

  /** Sets who may answer (issue 47); the caller bumps the version (a create or updateContent). */
  async setAccess(tx: EntityManager, formId: string, access: FormAccess): Promise<void> {
    await tx.query(`UPDATE forms SET access = $2 WHERE id = $1`, [formId, access]);
  }

  /** Sets the form's cap and quotas (issue 47); the caller bumps the version (a create or updateContent). */
  async setLimits(
    tx: EntityManager,
    formId: string,
    maxResponses: number | null,
    quotas: FormEntity['quotas'],
  ): Promise<void> {
    await tx.query(`UPDATE forms SET max_responses = $2, quotas = $3::jsonb WHERE id = $1`, [
      formId,
      maxResponses,
      quotas?.length ? JSON.stringify(quotas) : null,
    ]);
  }

  /** Sets the form's receipt (issue 48; null: none); the caller bumps the version. */
  async setReceipt(tx: EntityManager, formId: string, receipt: ReceiptSetting | null): Promise<void> {
    await tx.query(`UPDATE forms SET receipt = $2::jsonb WHERE id = $1`, [
      formId,
      receipt ? JSON.stringify(receipt) : null,
    ]);
  }

  /** Sets the form's spamProtection (issue 47); the caller bumps the version. */
  async setSpamProtection(tx: EntityManager, formId: string, setting: string): Promise<void> {
    await tx.query(`UPDATE forms SET spam_protection = $2 WHERE id = $1`, [formId, setting]);
  }

  /** Sets the form's schedule (issue 47); the caller bumps the version (a create or updateContent). */
  async setSchedule(tx: EntityManager, formId: string, opensAt: Date | null, closesAt: Date | null): Promise<void> {
    await tx.query(`UPDATE forms SET opens_at = $2, closes_at = $3 WHERE id = $1`, [formId, opensAt, closesAt]);
  }

  /**
   * Closes published forms whose closesAt passed (one, or up to `limit`), at their closesAt, and
   * bumps their version; the ones this statement closed. Rows another transaction is closing are
   * skipped, and a row it closed no longer matches: each form is closed by one statement only.
   */
  async closeDue(
    tx: EntityManager,
    limit: number,
    formId?: string,
  ): Promise<Array<{ publicId: string; workspaceId: string }>> {
    // An UPDATE answers [rows, count].
    const [rows] = (await tx.query(
      `UPDATE forms f SET status = 'closed', closed_at = f.closes_at, version = f.version + 1, updated_at = clock_timestamp()
        WHERE f.id IN (SELECT d.id FROM forms d
                        WHERE d.status = 'published' AND d.closes_at <= clock_timestamp() AND ($2::uuid IS NULL OR d.id = $2)
                        LIMIT $1 FOR UPDATE SKIP LOCKED)
          AND f.status = 'published'
        RETURNING f.public_id AS "publicId", f.workspace_id AS "workspaceId"`,
      [limit, formId ?? null],
    )) as [Array<{ publicId: string; workspaceId: string }>, number];
    return rows;
  }

  /** Deletes the form; its blocks and responses go with it (ON DELETE CASCADE). */
  async delete(tx: EntityManager, formId: string): Promise<void> {
    // The cascade deletes every response of the form: as long as the form is big.
    await allowLongStatements(tx);
    await tx.query('DELETE FROM forms WHERE id = $1', [formId]);
  }
}

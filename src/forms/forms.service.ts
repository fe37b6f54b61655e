import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../common/access/principal';
import { ApiError, ErrorDetail } from '../common/errors/api-error';
import { newFormPublicId } from '../common/ids';
import { inTransaction } from '../database/transaction';
import { IdempotencyService } from '../idempotency/idempotency.service';
import { discardAnswers } from '../responses/response-stats';
import { AnswerLossCandidate, describeLoss, lossCandidates } from './answer-loss';
import { Block, BlockInput, blockView, normalizeBlocks } from './blocks';
import { FormStatus } from './entities/form.entity';
import { WebhookOutbox } from '../webhooks/webhook-outbox.service';

export interface FormInput {
  title: string;
  description?: string | null;
  blocks?: BlockInput[];
}

export interface FormUpdate {
  publicId: string;
  /** The version the caller read; a stale one is refused with 409 version_conflict. */
  version?: number;
  title?: string;
  description?: string | null;
  /** The whole new block list; a block (or choice) keeps its answers by keeping its id. */
  blocks?: BlockInput[];
  acceptAnswerLoss?: boolean;
}

/** A form as read from the database, with its blocks in order. */
export interface FormRecord {
  id: string;
  publicId: string;
  workspaceId: string;
  title: string;
  description: string | null;
  status: FormStatus;
  version: number;
  createdAt: Date;
  updatedAt: Date;
  publishedAt: Date | null;
  closedAt: Date | null;
  blocks: Block[];
}

interface FormRow {
  id: string;
  public_id: string;
  workspace_id: string;
  title: string;
  description: string | null;
  status: FormStatus;
  version: number;
  created_at: Date;
  updated_at: Date;
  published_at: Date | null;
  closed_at: Date | null;
  blocks?: Array<{
    id: string;
    type: Block['type'];
    title: string;
    description: string | null;
    required: boolean;
    settings: Record<string, unknown>;
  }>;
}

const FORM_COLUMNS = `f.id, f.public_id, f.workspace_id, f.title, f.description, f.status, f.version,
  f.created_at, f.updated_at, f.published_at, f.closed_at`;

/** Blocks in order, as one JSON value, so a form and its blocks cost one round trip. */
const BLOCKS_JSON = `COALESCE((SELECT json_agg(json_build_object('id', b.id, 'type', b.type, 'title', b.title,
    'description', b.description, 'required', b.required, 'settings', b.settings) ORDER BY b.position)
  FROM blocks b WHERE b.form_id = f.id), '[]'::json) AS blocks`;

/** Forms an instance keeps for submissions (see FormsService.recent). */
const RECENT_FORMS = 1000;

export function notFoundForm(publicId: string): ApiError {
  return new ApiError('not_found', {
    message: `No form with the publicId "${publicId}" in this workspace.`,
    hint: 'list_forms shows the forms of the workspace this credential acts on.',
  });
}

@Injectable()
export class FormsService {
  /** The forms this instance read last, by publicId, most recent last (see recent()). */
  private readonly recentForms = new Map<string, FormRecord>();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly audit: AuditService,
    private readonly idempotency: IdempotencyService,
    private readonly webhooks: WebhookOutbox,
  ) {}

  /** A form of the workspace, or 404 (another workspace's form is not found either). */
  async get(
    workspaceId: string,
    publicId: string,
    manager: EntityManager = this.db.manager,
    lock?: 'UPDATE' | 'SHARE',
  ): Promise<FormRecord> {
    const row = await this.read(manager, 'f.workspace_id = $1 AND f.public_id = $2', [workspaceId, publicId], lock);
    if (!row) throw notFoundForm(publicId);
    return this.remember(toRecord(row), manager, lock);
  }

  /** A form by its public id alone, for the respondent page (no credential, so no workspace). */
  async getPublic(publicId: string, manager: EntityManager = this.db.manager, lock?: 'SHARE'): Promise<FormRecord> {
    const row = await this.read(manager, 'f.public_id = $1', [publicId], lock);
    if (!row)
      throw new ApiError('not_found', { message: `No form "${publicId}".`, hint: 'Check the link you were given.' });
    return this.remember(toRecord(row), manager, lock);
  }

  /**
   * The form as this instance last read it, if it did lately: submissions validate against it and
   * store only if the form is still at that version under its lock (insertResponse), so an
   * outdated copy costs them a second try (reading the form), never a wrong answer.
   */
  recent(publicId: string): FormRecord | undefined {
    const form = this.recentForms.get(publicId);
    if (form) {
      this.recentForms.delete(publicId);
      this.recentForms.set(publicId, form);
    }
    return form;
  }

  /**
   * Keeps a form read as committed: outside a transaction, or share-locked (only submissions and
   * deletes of responses share-lock, and they do not change the form). A form read in the
   * transaction that changes it is not kept: that transaction may still roll back, and another
   * change then commit the same version with other blocks.
   */
  private remember(form: FormRecord, manager: EntityManager, lock?: 'UPDATE' | 'SHARE'): FormRecord {
    if (manager !== this.db.manager && lock !== 'SHARE') return form;
    this.recentForms.delete(form.publicId);
    this.recentForms.set(form.publicId, form);
    if (this.recentForms.size > RECENT_FORMS) this.recentForms.delete(this.recentForms.keys().next().value!);
    return form;
  }

  /**
   * One form row with its blocks. With a lock, the row is locked by a statement of its own and the
   * form read by the next one: under READ COMMITTED, a statement that waited for a lock re-checks
   * only the locked row, and a subquery in it (the blocks) still reads the snapshot taken before
   * the wait. Reading after the lock is held sees what a concurrent edit committed.
   */
  private async read(
    manager: EntityManager,
    where: string,
    params: unknown[],
    lock?: 'UPDATE' | 'SHARE',
  ): Promise<FormRow | undefined> {
    if (lock) {
      const locked: unknown[] = await manager.query(`SELECT 1 FROM forms f WHERE ${where} FOR ${lock}`, params);
      if (locked.length === 0) return undefined;
    }
    const rows: FormRow[] = await manager.query(
      `SELECT ${FORM_COLUMNS}, ${BLOCKS_JSON} FROM forms f WHERE ${where}`,
      params,
    );
    return rows[0];
  }

  async list(
    workspaceId: string,
    opts: { limit: number; offset: number; status?: FormStatus },
  ): Promise<{ total: number; forms: FormRecord[] }> {
    const params: unknown[] = [workspaceId];
    let where = 'f.workspace_id = $1';
    if (opts.status) {
      params.push(opts.status);
      where += ` AND f.status = $${params.length}`;
    }
    const [{ total }] = await this.db.query(`SELECT count(*)::int AS total FROM forms f WHERE ${where}`, params);
    const rows: FormRow[] = await this.db.query(
      `SELECT ${FORM_COLUMNS} FROM forms f WHERE ${where} ORDER BY f.created_at, f.id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, opts.limit, opts.offset],
    );
    return { total, forms: rows.map(toRecord) };
  }

  /** Creates a form with its blocks (validated; details name each bad block and field). */
  async create(workspaceId: string, input: FormInput, manager?: EntityManager): Promise<FormRecord> {
    const { blocks, details } = normalizeBlocks(input.blocks ?? []);
    if (details.length) throw new ApiError('invalid_arguments', { message: 'Some blocks are not valid.', details });
    const run = async (tx: EntityManager) => {
      const [{ id, public_id }] = await tx.query(
        // clock_timestamp(), not now(): forms made in one transaction still list in creation order.
        `INSERT INTO forms (public_id, workspace_id, title, description, created_at, updated_at)
         VALUES ($1, $2, $3, $4, clock_timestamp(), clock_timestamp()) RETURNING id, public_id`,
        [newFormPublicId(), workspaceId, input.title, input.description ?? null],
      );
      await this.insertBlocks(tx, id, blocks);
      await tx.query('INSERT INTO response_counters (form_id) VALUES ($1)', [id]);
      return this.get(workspaceId, public_id, tx);
    };
    return manager ? run(manager) : this.db.transaction(run);
  }

  /** create_form: the form and its audit record in one transaction. */
  async createAs(actor: Principal, input: FormInput): Promise<FormRecord> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.create(actor.workspace.id, input, tx);
      await this.audit.record(tx, actor, 'form.create', form.publicId, { version: form.version });
      await this.webhooks.emit(tx, actor.workspace.id, 'form.created', formView(form, true));
      return form;
    });
  }

  /**
   * update_form. The form row is locked for the transaction, so concurrent edits are serialised
   * and a second edit sent with the version both callers read gets 409 version_conflict.
   */
  async update(actor: Principal, input: FormUpdate): Promise<FormRecord> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.lock(tx, actor.workspace.id, input.publicId);
      if (input.version !== undefined && input.version !== form.version) {
        throw new ApiError('version_conflict', {
          message: `The form is at version ${form.version}; this update was made from version ${input.version}.`,
        });
      }
      let discarded = 0;
      if (input.blocks) {
        const normalized = normalizeBlocks(input.blocks, form.blocks);
        if (normalized.details.length)
          throw new ApiError('invalid_arguments', {
            message: 'Some blocks are not valid.',
            details: normalized.details,
          });
        const blocks = normalized.blocks;
        discarded = await this.handleAnswerLoss(
          tx,
          form,
          lossCandidates(form.blocks, blocks),
          input.acceptAnswerLoss === true,
        );
        await tx.query('DELETE FROM blocks WHERE form_id = $1', [form.id]);
        await this.insertBlocks(tx, form.id, blocks);
      }
      await tx.query(
        `UPDATE forms SET title = $2, description = $3, version = version + 1, updated_at = clock_timestamp() WHERE id = $1`,
        [form.id, input.title ?? form.title, input.description !== undefined ? input.description : form.description],
      );
      await this.audit.record(tx, actor, 'form.update', form.publicId, {
        version: form.version + 1,
        ...(discarded ? { answersDiscarded: discarded } : {}),
      });
      const updated = await this.get(actor.workspace.id, form.publicId, tx);
      await this.webhooks.emit(tx, actor.workspace.id, 'form.updated', formView(updated, true));
      return updated;
    });
  }

  /** publish_form (also reopens a closed form) and close_form. Doing it twice changes nothing. */
  async transition(actor: Principal, publicId: string, to: 'published' | 'closed'): Promise<FormRecord> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.lock(tx, actor.workspace.id, publicId);
      if (form.status === to) return form;
      if (to === 'published' && !form.blocks.some((b) => b.type !== 'statement')) {
        throw new ApiError('tool_error', {
          message: 'A form needs at least one block that takes an answer before it can be published.',
          hint: 'Add blocks with update_form, then publish.',
        });
      }
      if (to === 'closed' && form.status === 'draft') {
        throw new ApiError('tool_error', {
          message: 'This form is a draft: it was never published, so there is nothing to close.',
          hint: 'Publish it with publish_form, or delete it with delete_form.',
        });
      }
      await this.setStatus(form.id, to, tx);
      await this.audit.record(tx, actor, to === 'published' ? 'form.publish' : 'form.close', publicId, {
        from: form.status,
        version: form.version + 1,
      });
      const changed = await this.get(actor.workspace.id, publicId, tx);
      await this.webhooks.emit(
        tx,
        actor.workspace.id,
        to === 'published' ? 'form.published' : 'form.closed',
        formView(changed, true),
      );
      return changed;
    });
  }

  /**
   * delete_form: the form, its blocks and its responses (cascade), in one transaction, with the
   * stored Idempotency-Key answers that showed any of it.
   */
  async remove(
    actor: Principal,
    publicId: string,
  ): Promise<{ publicId: string; deleted: true; responsesDeleted: number }> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.lock(tx, actor.workspace.id, publicId);
      const [{ n }] = await tx.query('SELECT count(*)::int AS n FROM responses WHERE form_id = $1', [form.id]);
      await tx.query('DELETE FROM forms WHERE id = $1', [form.id]);
      await this.idempotency.forgetDeleted(tx, { workspaceId: actor.workspace.id, formPublicId: publicId });
      await this.audit.record(tx, actor, 'form.delete', publicId, { title: form.title, responsesDeleted: n });
      // One event for the form, none for its responses; the form as it was before the deletion.
      await this.webhooks.emit(tx, actor.workspace.id, 'form.deleted', formView(form, true));
      return { publicId, deleted: true as const, responsesDeleted: n };
    });
  }

  /** The form, its row locked until the transaction ends (404 when it is not the workspace's). */
  lock(
    tx: EntityManager,
    workspaceId: string,
    publicId: string,
    mode: 'UPDATE' | 'SHARE' = 'UPDATE',
  ): Promise<FormRecord> {
    return this.get(workspaceId, publicId, tx, mode);
  }

  /**
   * Counts the answers an edit would discard. Refuses the edit (400 tool_error) unless the caller
   * accepted the loss; when accepted, removes those answers (and exactly them from the aggregates)
   * so what is stored matches the form.
   */
  private async handleAnswerLoss(
    tx: EntityManager,
    form: FormRecord,
    candidates: AnswerLossCandidate[],
    accepted: boolean,
  ): Promise<number> {
    const losses: Array<{ candidate: AnswerLossCandidate; answers: number }> = [];
    for (const c of candidates) {
      const [{ n }] = await tx.query(
        `SELECT count(*)::int AS n FROM responses WHERE form_id = $1 AND ${lossCondition(c)}`,
        lossParams(form.id, c),
      );
      if (n > 0) losses.push({ candidate: c, answers: n });
    }
    if (losses.length === 0) return 0;
    if (!accepted) {
      const details: ErrorDetail[] = losses.map(({ candidate, answers }) => ({
        path: candidate.path,
        message: describeLoss(candidate, answers),
      }));
      throw new ApiError('tool_error', {
        message: `This change would discard existing answers: ${details.map((d) => d.message).join('; ')}.`,
        hint: 'Keep the ids of blocks and choices whose answers you want to keep (renaming is fine), or send acceptAnswerLoss: true to discard those answers.',
        details,
      });
    }
    for (const { candidate } of losses) await discardAnswers(tx, form.id, candidate);
    return losses.reduce((sum, l) => sum + l.answers, 0);
  }

  /** Sets a form's status (the demo and, later, publish/close tools). */
  async setStatus(formId: string, status: FormStatus, manager: EntityManager = this.db.manager): Promise<void> {
    await manager.query(
      `UPDATE forms SET status = $2, version = version + 1, updated_at = clock_timestamp(),
         published_at = CASE WHEN $2 = 'published' THEN now() ELSE published_at END,
         closed_at = CASE WHEN $2 = 'closed' THEN now() ELSE NULL END
       WHERE id = $1`,
      [formId, status],
    );
  }

  private async insertBlocks(tx: EntityManager, formId: string, blocks: Block[]): Promise<void> {
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
}

/** SQL condition (on responses) for the answers a loss candidate would discard; $2 block id, $3 choice id. */
function lossCondition(c: AnswerLossCandidate): string {
  if (c.kind !== 'choice_removed') return 'answers ? $2';
  return c.multiple ? '(answers -> $2) ? $3' : 'answers ->> $2 = $3';
}

function lossParams(formId: string, c: AnswerLossCandidate): unknown[] {
  return c.kind === 'choice_removed' ? [formId, c.blockId, c.choiceId] : [formId, c.blockId];
}

function toRecord(row: FormRow): FormRecord {
  return {
    id: row.id,
    publicId: row.public_id,
    workspaceId: row.workspace_id,
    title: row.title,
    description: row.description,
    status: row.status,
    version: row.version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    publishedAt: row.published_at,
    closedAt: row.closed_at,
    blocks: (row.blocks ?? []).map((b) => ({
      id: b.id,
      type: b.type,
      title: b.title,
      description: b.description,
      required: b.required,
      ...b.settings,
    })),
  };
}

/** A form in the API's shape (blocks included when asked). */
export function formView(f: FormRecord, withBlocks: true): Record<string, unknown> & { blocks: unknown[] };
export function formView(f: FormRecord, withBlocks?: false): Record<string, unknown>;
export function formView(f: FormRecord, withBlocks = false) {
  const view: Record<string, unknown> = {
    publicId: f.publicId,
    title: f.title,
    description: f.description,
    status: f.status,
    version: f.version,
    createdAt: f.createdAt.toISOString(),
    updatedAt: f.updatedAt.toISOString(),
    publishedAt: f.publishedAt?.toISOString() ?? null,
    closedAt: f.closedAt?.toISOString() ?? null,
  };
  if (withBlocks) view.blocks = f.blocks.map(blockView);
  return view;
}

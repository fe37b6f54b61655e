import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../common/access/principal';
import { ApiError } from '../common/errors/api-error';
import { answersView, validateAnswers } from '../forms/blocks';
import { FormRecord, FormsService } from '../forms/forms.service';
import { FormSummary, summarize } from './summarize';

export interface ResponseView {
  id: string;
  submittedAt: string;
  answers: Record<string, unknown>;
}

interface ResponseRow {
  id: string;
  submitted_at: Date;
  answers: Record<string, unknown>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

@Injectable()
export class ResponsesService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly forms: FormsService,
    private readonly audit: AuditService,
  ) {}

  /**
   * A page of a form's responses ordered by (submittedAt, id): a total order, so a walk from
   * offset 0 sees every response committed before it began exactly once.
   */
  async list(
    workspaceId: string,
    publicId: string,
    opts: { limit: number; offset: number; order: 'oldest' | 'newest'; since?: string },
  ): Promise<{ total: number; responses: ResponseView[] }> {
    const form = await this.forms.get(workspaceId, publicId);
    const params: unknown[] = [form.id];
    let where = 'form_id = $1';
    if (opts.since) {
      params.push(opts.since);
      where += ` AND submitted_at >= $${params.length}`;
    }
    const direction = opts.order === 'newest' ? 'DESC' : 'ASC';
    const [[{ total }], rows] = await Promise.all([
      this.db.query(`SELECT count(*)::int AS total FROM responses WHERE ${where}`, params),
      this.db.query(
        `SELECT id, submitted_at, answers FROM responses WHERE ${where}
          ORDER BY submitted_at ${direction}, id ${direction} LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
        [...params, opts.limit, opts.offset],
      ) as Promise<ResponseRow[]>,
    ]);
    return { total, responses: rows.map((r) => toView(form, r)) };
  }

  async get(workspaceId: string, publicId: string, responseId: string): Promise<ResponseView> {
    const form = await this.forms.get(workspaceId, publicId);
    const rows: ResponseRow[] = UUID.test(responseId)
      ? await this.db.query(`SELECT id, submitted_at, answers FROM responses WHERE form_id = $1 AND id = $2`, [form.id, responseId])
      : [];
    if (!rows[0]) throw notFoundResponse(publicId, responseId);
    return toView(form, rows[0]);
  }

  /**
   * create_response: validated like every submission, stored with its audit record. The form row
   * is share-locked so an edit of its blocks cannot slip in between validation and insert.
   * Works on a form in any state (imports); the respondent page takes published forms only.
   */
  async createAs(actor: Principal, publicId: string, answers: Record<string, unknown>): Promise<ResponseView> {
    return this.db.transaction(async (tx) => {
      const form = await this.forms.lock(tx, actor.workspace.id, publicId, 'SHARE');
      const response = await this.create(form, answers, { source: 'api' }, tx);
      await this.audit.record(tx, actor, 'response.create', response.id, { form: publicId });
      return response;
    });
  }

  async removeAs(actor: Principal, publicId: string, responseId: string): Promise<{ id: string; deleted: true }> {
    return this.db.transaction(async (tx) => {
      const form = await this.forms.lock(tx, actor.workspace.id, publicId, 'SHARE');
      const deleted = UUID.test(responseId) ? await tx.query('DELETE FROM responses WHERE form_id = $1 AND id = $2 RETURNING id', [form.id, responseId]) : [];
      // pg answers a DELETE ... RETURNING as [rows, count]
      const rows = Array.isArray(deleted[0]) ? deleted[0] : deleted;
      if (!rows.length) throw notFoundResponse(publicId, responseId);
      await this.audit.record(tx, actor, 'response.delete', responseId, { form: publicId });
      return { id: responseId, deleted: true as const };
    });
  }

  async summarize(workspaceId: string, publicId: string): Promise<FormSummary & { publicId: string }> {
    const form = await this.forms.get(workspaceId, publicId);
    const rows: ResponseRow[] = await this.db.query(`SELECT submitted_at, answers FROM responses WHERE form_id = $1`, [form.id]);
    return { publicId, ...summarize(form.blocks, rows.map((r) => ({ submittedAt: r.submitted_at, answers: r.answers }))) };
  }

  /**
   * Stores a response after validating it against the form's blocks (the one validation for the
   * API and the respondent page). Nothing is stored when an answer is refused.
   */
  async create(
    form: FormRecord,
    answers: Record<string, unknown>,
    opts: { source: 'api' | 'web' | 'import'; submittedAt?: Date },
    manager: EntityManager = this.db.manager,
  ): Promise<ResponseView> {
    const { stored, details } = validateAnswers(form.blocks, answers);
    if (details.length) throw new ApiError('invalid_arguments', { message: 'Some answers are not valid.', details });
    const [row]: ResponseRow[] = await manager.query(
      `INSERT INTO responses (form_id, answers, source, submitted_at) VALUES ($1, $2::jsonb, $3, COALESCE($4, clock_timestamp()))
       RETURNING id, submitted_at, answers`,
      [form.id, JSON.stringify(stored), opts.source, opts.submittedAt ?? null],
    );
    return toView(form, row);
  }
}

function notFoundResponse(publicId: string, responseId: string): ApiError {
  return new ApiError('not_found', {
    message: `No response "${responseId}" on the form "${publicId}".`,
    hint: 'list_responses shows the responses of a form with their ids.',
  });
}

function toView(form: FormRecord, row: ResponseRow): ResponseView {
  return { id: row.id, submittedAt: row.submitted_at.toISOString(), answers: answersView(form.blocks, row.answers) };
}

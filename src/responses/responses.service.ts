import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../common/access/principal';
import { ApiError } from '../common/errors/api-error';
import { inTransaction } from '../database/transaction';
import { IdempotencyService } from '../idempotency/idempotency.service';
import { answersView, answersViewer, CHOICE_TYPES, NUMERIC_TYPES, validateAnswers } from '../forms/blocks';
import { FormRecord, FormsService } from '../forms/forms.service';
import { BUCKET_BITS, deleteResponse, insertResponse } from './response-stats';
import { FormSummary, summaryFromStats } from './summarize';
import { WebhookOutbox } from '../webhooks/webhook-outbox.service';

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
    private readonly idempotency: IdempotencyService,
    private readonly webhooks: WebhookOutbox,
  ) {}

  /**
   * A page of a form's responses in (submittedAt, id) order, which is seq order (see
   * response-stats.ts): new responses only ever append, so a walk from offset 0 to total sees every
   * response committed before it began exactly once. The total is the maintained count, and an
   * offset deep into a big form is reached by summing the bucket counts (a few hundred small rows
   * per million responses) and walking at most one bucket, not by skipping offset rows.
   */
  async list(
    workspaceId: string,
    publicId: string,
    opts: { limit: number; offset: number; order: 'oldest' | 'newest'; since?: string },
  ): Promise<{ total: number; responses: ResponseView[] }> {
    const form = await this.forms.get(workspaceId, publicId);
    // With `since`, the page covers the tail of the order that starts at its first response.
    const [{ all, skipped }] = await this.db.query(
      `WITH c AS (SELECT total FROM response_counters WHERE form_id = $1),
            s AS (SELECT seq FROM responses WHERE form_id = $1 AND submitted_at >= $2::timestamptz ORDER BY submitted_at, seq LIMIT 1)
       SELECT c.total::int AS all,
              (CASE WHEN $2::timestamptz IS NULL THEN 0
                    WHEN NOT EXISTS (SELECT 1 FROM s) THEN c.total
                    -- the position of the first response since then: whole buckets before it, plus a walk inside its bucket
                    ELSE (SELECT COALESCE(sum(b.count), 0) FROM response_buckets b, s WHERE b.form_id = $1 AND b.bucket < (s.seq >> ${BUCKET_BITS}))
                       + (SELECT count(*) FROM responses r, s WHERE r.form_id = $1 AND r.seq >= ((s.seq >> ${BUCKET_BITS}) << ${BUCKET_BITS}) AND r.seq < s.seq)
               END)::int AS skipped
         FROM c`,
      [form.id, opts.since ?? null],
    );
    const total = all - skipped;
    const available = Math.max(0, total - opts.offset);
    const count = Math.min(opts.limit, available);
    if (count === 0) return { total, responses: [] };
    // Positions in oldest-first order; newest-first reads the mirrored range and reverses it.
    const start = skipped + (opts.order === 'newest' ? total - opts.offset - count : opts.offset);
    const rows: ResponseRow[] = await this.db.query(
      `WITH loc AS (
         SELECT bucket, before FROM (
           SELECT bucket, count, sum(count) OVER (ORDER BY bucket) - count AS before FROM response_buckets WHERE form_id = $1) b
          WHERE before + count > $2 ORDER BY bucket LIMIT 1)
       SELECT r.id, r.submitted_at, r.answers
         FROM loc CROSS JOIN LATERAL (
           SELECT id, submitted_at, answers FROM responses
            WHERE form_id = $1 AND seq >= (loc.bucket << ${BUCKET_BITS}) ORDER BY seq OFFSET ($2 - loc.before) LIMIT $3) r`,
      [form.id, start, count],
    );
    if (opts.order === 'newest') rows.reverse();
    const view = answersViewer(form.blocks);
    return { total, responses: rows.map((r) => ({ id: r.id, submittedAt: r.submitted_at.toISOString(), answers: view(r.answers) })) };
  }

  async get(workspaceId: string, publicId: string, responseId: string): Promise<ResponseView> {
    return this.read(this.db.manager, await this.forms.get(workspaceId, publicId), responseId);
  }

  private async read(manager: EntityManager, form: FormRecord, responseId: string): Promise<ResponseView> {
    const rows: ResponseRow[] = UUID.test(responseId)
      ? await manager.query(`SELECT id, submitted_at, answers FROM responses WHERE form_id = $1 AND id = $2`, [form.id, responseId])
      : [];
    if (!rows[0]) throw notFoundResponse(form.publicId, responseId);
    return toView(form, rows[0]);
  }

  /**
   * create_response: validated like every submission, stored with its audit record. The form row
   * is share-locked so an edit of its blocks cannot slip in between validation and insert.
   * Works on a form in any state (imports); the respondent page takes published forms only.
   */
  async createAs(actor: Principal, publicId: string, answers: Record<string, unknown>): Promise<ResponseView> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.forms.lock(tx, actor.workspace.id, publicId, 'SHARE');
      const response = await this.create(form, answers, { source: 'api' }, tx);
      await this.audit.record(tx, actor, 'response.create', response.id, { form: publicId });
      await this.webhooks.emit(tx, form.workspaceId, 'response.created', { form: { publicId, title: form.title }, response });
      return response;
    });
  }

  /**
   * A submission from the respondent page (form post or JSON): the same validation as
   * create_response, but only a published form takes it.
   */
  async submit(publicId: string, answers: Record<string, unknown>): Promise<ResponseView> {
    return this.db.transaction(async (tx) => {
      const form = await this.forms.getPublic(publicId, tx, 'SHARE');
      if (form.status !== 'published') throw notAccepting(form.status);
      const response = await this.create(form, answers, { source: 'web' }, tx);
      await this.webhooks.emit(tx, form.workspaceId, 'response.created', { form: { publicId, title: form.title }, response });
      return response;
    });
  }

  async removeAs(actor: Principal, publicId: string, responseId: string): Promise<{ id: string; deleted: true }> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.forms.lock(tx, actor.workspace.id, publicId, 'SHARE');
      if (!UUID.test(responseId)) throw notFoundResponse(publicId, responseId);
      // Emitted before the delete, which it reads (only when an endpoint wants it); the transaction makes it one change.
      await this.webhooks.emit(tx, form.workspaceId, 'response.deleted', async () => ({ form: { publicId, title: form.title }, response: await this.read(tx, form, responseId) }));
      if (!(await deleteResponse(tx, form.id, responseId))) throw notFoundResponse(publicId, responseId);
      await this.idempotency.forgetDeleted(tx, { workspaceId: actor.workspace.id, responseId });
      await this.audit.record(tx, actor, 'response.delete', responseId, { form: publicId });
      return { id: responseId, deleted: true as const };
    });
  }

  /**
   * Per-block aggregates from the maintained stats: a handful of index lookups whatever the number
   * of responses (one statement, so one consistent snapshot).
   */
  async summarize(workspaceId: string, publicId: string): Promise<FormSummary & { publicId: string }> {
    const form = await this.forms.get(workspaceId, publicId);
    const ids = (types: readonly string[]) => form.blocks.filter((b) => types.includes(b.type)).map((b) => b.id);
    const [row] = await this.db.query(
      `SELECT (SELECT total::int FROM response_counters WHERE form_id = $1) AS total,
              (SELECT submitted_at FROM responses WHERE form_id = $1 ORDER BY seq LIMIT 1) AS first,
              (SELECT submitted_at FROM responses WHERE form_id = $1 ORDER BY seq DESC LIMIT 1) AS last,
              (SELECT COALESCE(json_agg(json_build_object('blockId', block_id, 'answered', answered, 'sum', sum, 'latest', latest)), '[]')
                 FROM block_stats WHERE form_id = $1) AS stats,
              (SELECT COALESCE(json_agg(json_build_object('blockId', block_id, 'value', value, 'count', count)), '[]')
                 FROM answer_counts WHERE form_id = $1 AND block_id = ANY($2::text[])) AS counts,
              (SELECT COALESCE(json_agg(json_build_object('blockId', x.id,
                        'min', (SELECT min(num) FROM answer_counts WHERE form_id = $1 AND block_id = x.id),
                        'max', (SELECT max(num) FROM answer_counts WHERE form_id = $1 AND block_id = x.id))), '[]')
                 FROM unnest($3::text[]) x(id)) AS numeric,
              (SELECT COALESCE(json_agg(json_build_object('blockId', x.id,
                        'min', (SELECT min(value) FROM answer_counts WHERE form_id = $1 AND block_id = x.id),
                        'max', (SELECT max(value) FROM answer_counts WHERE form_id = $1 AND block_id = x.id))), '[]')
                 FROM unnest($4::text[]) x(id)) AS dates`,
      [form.id, ids([...CHOICE_TYPES, 'yes_no']), ids(NUMERIC_TYPES), ids(['date'])],
    );
    const stats = new Map<string, { answered: number; sum: number; latest: Array<{ value: string; submittedAt: string }> }>(
      row.stats.map((s: { blockId: string; answered: number; sum: number; latest: Array<{ value: string; submittedAt: string }> }) => [s.blockId, s]),
    );
    const counts = new Map<string, number>(row.counts.map((c: { blockId: string; value: string; count: number }) => [`${c.blockId}\u0000${c.value}`, Number(c.count)]));
    const ranges = new Map<string, { min: number | string | null; max: number | string | null }>(
      [...row.numeric, ...row.dates].map((r: { blockId: string; min: number | string | null; max: number | string | null }) => [r.blockId, r]),
    );
    return {
      publicId,
      ...summaryFromStats(form.blocks, {
        total: row.total ?? 0,
        first: row.first,
        last: row.last,
        answered: (id) => Number(stats.get(id)?.answered ?? 0),
        sum: (id) => Number(stats.get(id)?.sum ?? 0),
        count: (id, value) => counts.get(`${id}\u0000${value}`) ?? 0,
        range: (id) => ranges.get(id) ?? { min: null, max: null },
        latest: (id) => stats.get(id)?.latest ?? [],
      }),
    };
  }

  /**
   * Stores a response after validating it against the form's blocks (the one validation for the
   * API and the respondent page), with every aggregate, in one transaction. Nothing is stored when
   * an answer is refused.
   */
  async create(
    form: FormRecord,
    answers: Record<string, unknown>,
    opts: { source: 'api' | 'web' | 'import'; submittedAt?: Date },
    tx?: EntityManager,
  ): Promise<ResponseView> {
    const { stored, details } = validateAnswers(form.blocks, answers);
    if (details.length) throw new ApiError('invalid_arguments', { message: 'Some answers are not valid.', details });
    const run = async (m: EntityManager) => toView(form, await insertResponse(m, form.id, stored, opts.source, opts.submittedAt));
    return tx ? run(tx) : this.db.transaction(run);
  }
}

export function notAccepting(status: string): ApiError {
  return new ApiError('form_not_accepting_responses', {
    message: status === 'closed' ? 'This form is closed and no longer takes responses.' : 'This form is not published yet.',
    hint: status === 'closed' ? 'Ask its owner to reopen it with publish_form.' : 'Its owner can publish it with publish_form.',
  });
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

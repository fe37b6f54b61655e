/** The SQL of the table responses (ResponsesRepository): the one-statement submission, reads, paging, counts. */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { AnswerLossCandidate } from '../forms/answer-loss';
import { prepared } from '../database/prepared';
import type { ResponseEntity } from './entities/response.entity';
import { BUCKET_BITS, isoText } from './response-stats.repository';

/** A stored response's id and time, as the insert returns them. */
export type InsertedResponse = Pick<ResponseEntity, 'id' | 'submittedAt'>;

/** A response as read. */
export type ResponseRow = Pick<ResponseEntity, 'id' | 'submittedAt' | 'answers'> &
  Partial<Pick<ResponseEntity, 'hidden'>>;

/**
 * The response.created event a submission writes with its response: the event's webhook-id and
 * its body around the response's submittedAt (see responseCreatedBody).
 */
export interface CreatedEvent {
  id: string;
  head: string;
  tail: string;
}

/** The SQL of the table responses (its aggregates are in ResponseStatsRepository). */
@Injectable()
export class ResponsesRepository {
  /**
   * Stores one response (answers already validated against the form at `version`) as ONE statement:
   * the form row is share-locked and must still be at `version` (and published, with `published`),
   * so an edit of the blocks cannot slip in between validation and insert. The same statement
   * writes the audit record, when given, and with `event`, the response.created event: one
   * delivery per enabled endpoint of the form's workspace subscribed to it, found by the statement
   * itself (an endpoint committed before it is seen, as the outbox of a transactional write sees
   * it) and none when there is no such endpoint. A statement is atomic: the event commits with the
   * response or not at all, and the version check guarantees that the body, built beforehand from
   * the form at `version`, labels the answers as that form does. Returns undefined when the form
   * changed (or is gone, or not published): nothing was stored, and the caller reads the form again.
   */
  async insert(
    m: EntityManager,
    form: { id: string; version: number },
    response: {
      id: string;
      answers: Record<string, unknown>;
      hidden?: Record<string, string>;
      shown?: string[] | null;
    },
    opts: {
      source: string;
      submittedAt?: Date;
      published?: boolean;
      audit?: { sql: string; params: unknown[] };
      event?: CreatedEvent;
    },
  ): Promise<InsertedResponse | undefined> {
    const params: unknown[] = [
      form.id,
      form.version,
      JSON.stringify(response.answers),
      opts.source,
      opts.submittedAt ?? null,
      response.id,
      JSON.stringify(response.hidden ?? {}),
      response.shown ? JSON.stringify(response.shown) : null,
    ];
    if (opts.event) params.push(opts.event.id, opts.event.head, opts.event.tail);
    if (opts.audit) params.push(...opts.audit.params);
    const [row]: InsertedResponse[] = await m.query(prepared(m, insertSql(opts)), params);
    return row;
  }

  /** A response of the form (undefined when there is none with this id). */
  async findOne(manager: EntityManager, formId: string, responseId: string): Promise<ResponseRow | undefined> {
    const [row] = await manager.query(
      `SELECT id, submitted_at AS "submittedAt", answers, hidden FROM responses WHERE form_id = $1 AND id = $2`,
      [formId, responseId],
    );
    return row;
  }

  /**
   * Where the form's responses submitted in [since, until) lie in seq order, which is submittedAt
   * order: the maintained total (`all`), how many sequenced responses come before `since` (0
   * without it) and before `until` (`all` without it), and whether responses wait for their seq.
   * Undefined when the form is gone. A deep position is found by summing bucket counts and walking
   * at most one bucket, not by skipping rows.
   */
  async pagePosition(
    manager: EntityManager,
    formId: string,
    since: string | null,
    until: string | null = null,
  ): Promise<{ all: number; skipped: number; upto: number; waiting: boolean } | undefined> {
    const [row] = await manager.query(
      `WITH c AS (SELECT total FROM response_counters WHERE form_id = $1)
       SELECT c.total::int AS all, ${positionOf('$2', '0')}::int AS skipped, ${positionOf('$3', 'c.total')}::int AS upto,
              EXISTS (SELECT 1 FROM responses WHERE form_id = $1 AND seq IS NULL) AS waiting
         FROM c`,
      [formId, since, until],
    );
    return row;
  }

  /**
   * How many sequenced responses of the form match `filter` (SQL over the row r; its params start
   * with the form's id, $1), unless the caller `counted` them, and `count` of them in seq order from the position `start`. Two
   * statements: the order only grows at its end, so positions counted by the first hold for the
   * second. Both read every row of the form the filter does not exclude by time.
   */
  async filteredPage(
    manager: EntityManager,
    filter: { sql: string; params: unknown[] },
    page: (total: number) => { start: number; count: number } | undefined,
    counted?: number,
  ): Promise<{ total: number; rows: ResponseRow[] }> {
    const params = [...filter.params];
    const total =
      counted ??
      (
        await manager.query(
          `SELECT count(*)::int AS total FROM responses r WHERE r.form_id = $1 AND r.seq IS NOT NULL AND ${filter.sql}`,
          params,
        )
      )[0].total;
    const at = page(total);
    if (!at) return { total, rows: [] };
    const n = params.push(at.start, at.count);
    const rows: ResponseRow[] = await manager.query(
      `SELECT r.id, r.submitted_at AS "submittedAt", r.answers, r.hidden FROM responses r
        WHERE r.form_id = $1 AND r.seq IS NOT NULL AND ${filter.sql} ORDER BY r.seq OFFSET $${n - 1} LIMIT $${n}`,
      params,
    );
    return { total, rows };
  }

  /** `count` sequenced responses in seq order from the position `start` (found through the buckets). */
  readPage(manager: EntityManager, formId: string, start: number, count: number): Promise<ResponseRow[]> {
    return manager.query(
      `WITH loc AS (
         SELECT bucket, before FROM (
           SELECT bucket, count, sum(count) OVER (ORDER BY bucket) - count AS before FROM response_buckets WHERE form_id = $1) b
          WHERE before + count > $2 ORDER BY bucket LIMIT 1)
       SELECT r.id, r.submitted_at AS "submittedAt", r.answers, r.hidden
         FROM loc CROSS JOIN LATERAL (
           SELECT id, submitted_at, answers, hidden FROM responses
            WHERE form_id = $1 AND seq >= (loc.bucket << ${BUCKET_BITS}) ORDER BY seq OFFSET ($2 - loc.before) LIMIT $3) r`,
      [formId, start, count],
    );
  }

  /** How many responses the form has. */
  async count(manager: EntityManager, formId: string): Promise<number> {
    const [{ n }] = await manager.query('SELECT count(*)::int AS n FROM responses WHERE form_id = $1', [formId]);
    return n;
  }

  /** How many responses hold an answer that `loss` would discard. */
  async countLost(manager: EntityManager, formId: string, loss: AnswerLossCandidate): Promise<number> {
    const [{ n }] = await manager.query(
      `SELECT count(*)::int AS n FROM responses WHERE form_id = $1 AND ${lossCondition(loss)}`,
      loss.kind === 'choice_removed' ? [formId, loss.blockId, loss.choiceId] : [formId, loss.blockId],
    );
    return n;
  }
}

/**
 * The position in seq order of the first sequenced response of the form $1 submitted at or after
 * the time `at` (`whenNull` when `at` is NULL, the total when there is none): whole buckets before it, plus
 * a walk inside its bucket. Reads the CTE c (the form's total).
 */
function positionOf(at: string, whenNull: string): string {
  const first = `(SELECT seq FROM responses WHERE form_id = $1 AND submitted_at >= ${at}::timestamptz AND seq IS NOT NULL ORDER BY submitted_at, seq LIMIT 1)`;
  return `(CASE WHEN ${at}::timestamptz IS NULL THEN ${whenNull}
                WHEN ${first} IS NULL THEN c.total
                ELSE (SELECT COALESCE(sum(b.count), 0) FROM response_buckets b WHERE b.form_id = $1 AND b.bucket < (${first} >> ${BUCKET_BITS}))
                   + (SELECT count(*) FROM responses r WHERE r.form_id = $1 AND r.seq >= ((${first} >> ${BUCKET_BITS}) << ${BUCKET_BITS}) AND r.seq < ${first})
           END)`;
}

/** SQL condition (on responses) for the answers a loss candidate would discard; $2 block id, $3 choice id. */
function lossCondition(c: AnswerLossCandidate): string {
  if (c.kind !== 'choice_removed') return 'answers ? $2';
  return c.multiple ? '(answers -> $2) ? $3' : 'answers ->> $2 = $3';
}

/** The insert statement of each shape (published or not, with an event, an audit record), made once. */
const insertStatements = new Map<string, string>();

/**
 * The statement ResponsesRepository.insert runs for `opts`: the response, and as parts of the same
 * statement its event's deliveries and its audit record. Parameters: the response's 8, then the
 * event's 3, then the audit record's own (renumbered after them).
 */
function insertSql(opts: { published?: boolean; event?: unknown; audit?: { sql: string } }): string {
  const key = `${opts.published ? 'published' : 'any'}|${opts.event ? 'event' : ''}|${opts.audit?.sql ?? ''}`;
  let sql = insertStatements.get(key);
  if (sql) return sql;
  let n = 8;
  let event = '';
  if (opts.event) {
    n += 3;
    event = `,
       e AS (
         INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
         SELECT e.workspace_id, e.id, $${n - 2}, 'response.created', $${n - 1} || ${isoText('r.submitted_at')} || $${n}, now()
           FROM r, f JOIN webhook_endpoints e ON e.workspace_id = f.workspace_id AND e.enabled AND 'response.created' = ANY (e.events))`;
  }
  const audit = opts.audit ? `, a AS (${opts.audit.sql.replace(/\$(\d+)/g, (_, k) => `$${Number(k) + n}`)})` : '';
  sql = `WITH f AS (SELECT id, workspace_id FROM forms WHERE id = $1 AND version = $2 ${opts.published ? `AND status = 'published'` : ''} FOR SHARE),
       r AS (
         INSERT INTO responses (id, form_id, submitted_at, answers, source, hidden, shown)
         SELECT $6::uuid, f.id, COALESCE($5::timestamptz, clock_timestamp()), $3::jsonb, $4, $7::jsonb, $8::jsonb FROM f
         RETURNING id, submitted_at)${event}${audit}
       SELECT id, submitted_at AS "submittedAt" FROM r`;
  insertStatements.set(key, sql);
  return sql;
}

/** The SQL of the table responses (ResponsesRepository): the one-statement submission, reads, paging, counts. */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { AnswerLossCandidate } from '../forms/answer-loss';
import { prepared } from '../database/prepared';
import type { AuditRecordJson } from '../audit/audit.repository';
import type { ResponseEntity } from './entities/response.entity';
import { BUCKET_BITS } from '../summaries/response-stats.repository';
import { withoutJit } from './response-filter';
import type { StatementClaim } from '../idempotency/statement-claim';

/** A stored response's id and time, as the insert returns them. */
export type InsertedResponse = Pick<ResponseEntity, 'id' | 'submittedAt'> & {
  /** Of a stored keyed response: the answer stored with its key (JSON text). */
  answer?: string;
  /** Of a response not stored because a counter it counts toward is full (issue 47): that counter ('' the cap). */
  full?: string | null;
  /** Of a stored response: its statement filled its form's cap. */
  filled?: boolean;
};

/** A response as read. */
export type ResponseRow = Pick<ResponseEntity, 'id' | 'submittedAt' | 'answers'> &
  Partial<Pick<ResponseEntity, 'hidden' | 'startedAt' | 'lastPage' | 'shown' | 'variables' | 'ending'>>;

/**
 * The columns a response's view reads besides id, submittedAt, answers and hidden (of r): its
 * start, its last page, its path only where its last page was not stored (see responseViewer),
 * and what it computed (issue 46).
 */
export const VIEW_COLUMNS = (r: string) =>
  `${r}.started_at AS "startedAt", ${r}.last_page AS "lastPage", CASE WHEN ${r}.last_page IS NULL THEN ${r}.shown END AS shown, ${r}.variables, ${r}.ending`;

/** A response to store (see ResponsesRepository.insertMany). */
export interface NewResponse {
  id: string;
  form: { id: string; version: number; workspaceId: string };
  answers: Record<string, unknown>;
  hidden?: Record<string, string>;
  /** The blocks the respondent was shown, where the form records its path. */
  shown?: string[] | null;
  /** What it computed, on a form that computes (issue 46). */
  variables?: Record<string, number | string> | null;
  ending?: string | null;
  source: string;
  /** Now (the database's clock) unless given. */
  submittedAt?: Date;
  /** Of a response that completes a partial (issue 36): when it started, its last page, its resume secret's hash. */
  startedAt?: Date;
  lastPage?: string;
  resumeHash?: Buffer | null;
  /** Only if the form is published. */
  published?: boolean;
  /** The counters it counts toward (issue 47, see forms/limits.ts): stored only if each has room. */
  limits?: string[];
  audit?: AuditRecordJson;
  event?: CreatedEvent;
  /** The call's Idempotency-Key, claimed by the statement with the response (see statement-claim.ts). */
  key?: KeyedAnswer;
  /**
   * The uploads its answers name (each once), held for it by the statement when each is pending,
   * of its form's workspace, form and block, and its bytes checked on arrival; otherwise it is not
   * stored (the caller then takes the transactional path, whose checks say what is wrong).
   */
  uploads?: Array<{ id: string; blockId: string }>;
}

/**
 * A key to claim with the response, and the call's answer to store with it: its JSON text around
 * submittedAt (`head` ends with its opening quote, `tail` starts with its closing one). The
 * statement builds `head` itself from the response's id (see migration 1796000500000).
 */
export interface KeyedAnswer {
  claim: StatementClaim;
  formPublicId: string;
  head: string;
  tail: string;
}

/**
 * The response.created event a submission writes with its response: the event's webhook-id and
 * its body around the response's submittedAt (see responseCreatedBody).
 */
export interface CreatedEvent {
  id: string;
  head: string;
  tail: string;
  /** The W3C traceparent of the request that made it (tracing on), for its deliveries' spans to link to. */
  traceparent?: string | null;
}

/** The SQL of the table responses (its aggregates are in ResponseStatsRepository). */
@Injectable()
export class ResponsesRepository {
  /**
   * Stores responses (answers already validated against their form at `version`) as ONE
   * statement, whatever their number and forms: each form row is share-locked and a response is
   * stored only if its form is still at its `version` (and published, with `published`), so an
   * edit of the blocks cannot slip in between validation and insert. The same statement writes
   * each stored response's audit record, when it has one, and with `event`, its response.created
   * event: one delivery per enabled endpoint of the form's workspace subscribed to it, found by
   * the statement itself (an endpoint committed before it is seen, as the outbox of a
   * transactional write sees it) and none when there is no such endpoint. A statement is atomic:
   * the events and records commit with their responses or not at all, and the version check
   * guarantees that a body, built beforehand from the form at `version`, labels the answers as
   * that form does. Returns the responses stored; one left out was not stored because its form
   * changed (or is gone, or is not published), or because an edit holds its form locked right
   * now: a statement never waits for a form's edit (SKIP LOCKED), so submissions to other forms
   * that share it are not held up. The caller of one left out takes the form's lock itself (in a
   * transaction of its own: see ResponsesService.store), reads it again and validates again.
   *
   * The rows travel as one JSON parameter to one function (see INSERT_SQL), whose plan each
   * database session makes once; several submissions in one statement (see ResponseInsertBatcher)
   * share its round trip, its locks and its commit. With `key`, the statement also claims the
   * row's Idempotency-Key and stores its answer; a row whose key another call holds is left out,
   * like one whose form changed (the caller then claims the key in a transaction of its own); with
   * `uploads`, a row is stored only if it can hold them all. With `limits`, a row is stored only
   * if every counter it names has room (issue 47); one that does not is returned with `full`, the
   * counter that is full, and no submittedAt.
   */
  async insertMany(m: EntityManager, responses: NewResponse[]): Promise<InsertedResponse[]> {
    const claiming = responses.some((r) => r.key || r.uploads?.length);
    const sql = claiming ? CLAIMING_INSERT_SQL : INSERT_SQL;
    const params = [JSON.stringify(responses.map(insertRow))];
    // Traced: each event's deliveries get its request's traceparent (migration 1796000700000).
    const traced = responses.filter((r) => r.event?.traceparent).map((r) => [r.event!.id, r.event!.traceparent]);
    if (traced.length) params.push(JSON.stringify(Object.fromEntries(traced)));
    const rows: Array<InsertedResponse & { submittedText?: string | null }> = await m.query(
      prepared(m, traced.length ? withTraceparents(sql) : sql),
      params,
    );
    const keys = new Map(responses.filter((r) => r.key).map((r) => [r.id, r.key!]));
    return rows.map(({ id, submittedAt, submittedText, full, filled }) => {
      if (full != null) return { id, submittedAt, full };
      const key = keys.get(id);
      // The answer the statement stored with the key: the same text around (and in: AT_SUBMISSION) the same ISO time.
      return key && submittedText
        ? { id, submittedAt, filled, answer: key.head + submittedText + key.tail.replaceAll('\u0001', submittedText) }
        : { id, submittedAt, filled };
    });
  }

  /** A response of the form (undefined when there is none with this id). */
  async findOne(manager: EntityManager, formId: string, responseId: string): Promise<ResponseRow | undefined> {
    const [row] = await manager.query(
      `SELECT r.id, r.submitted_at AS "submittedAt", r.answers, r.hidden, ${VIEW_COLUMNS('r')}
         FROM responses r WHERE r.form_id = $1 AND r.id = $2`,
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
    only?: string[],
  ): Promise<{ total: number; rows: ResponseRow[] }> {
    const params = [...filter.params];
    await withoutJit(manager);
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
    // `only`: the rows hold one of these variables objects (see ResponsesService.rangeValues),
    // found through the variables' index, then sorted (seq + 0: not by walking the order's index).
    const narrow = only ? ` AND r.variables IS NOT NULL AND r.variables @> ANY ($${params.push(only)}::jsonb[])` : '';
    const n = params.push(at.start, at.count);
    const rows: ResponseRow[] = await manager.query(
      `SELECT r.id, r.submitted_at AS "submittedAt", r.answers, r.hidden, ${VIEW_COLUMNS('r')} FROM responses r
        WHERE r.form_id = $1 AND r.seq IS NOT NULL AND ${filter.sql}${narrow}
        ORDER BY r.seq${only ? ' + 0' : ''} OFFSET $${n - 1} LIMIT $${n}`,
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
       SELECT r.id, r.submitted_at AS "submittedAt", r.answers, r.hidden, ${VIEW_COLUMNS('r')}
         FROM loc CROSS JOIN LATERAL (
           SELECT id, submitted_at, answers, hidden, started_at, last_page, shown, variables, ending FROM responses
            WHERE form_id = $1 AND seq >= (loc.bucket << ${BUCKET_BITS}) ORDER BY seq OFFSET ($2 - loc.before) LIMIT $3) r`,
      [formId, start, count],
    );
  }

  /** How many responses the form has. */
  async count(manager: EntityManager, formId: string): Promise<number> {
    const [{ n }] = await manager.query('SELECT count(*)::int AS n FROM responses WHERE form_id = $1', [formId]);
    return n;
  }

  /**
   * Removes a variable or an ending (issue 46) from the form's responses and partials that hold it
   * (a partial's are computed again at its next save). The caller takes it out of the aggregates
   * (ResponseStatsRepository.discardOutcome).
   */
  async discardOutcome(manager: EntityManager, formId: string, loss: AnswerLossCandidate): Promise<void> {
    for (const table of ['responses', 'partial_responses'])
      await manager.query(
        loss.kind === 'ending_removed'
          ? `UPDATE ${table} SET ending = NULL WHERE form_id = $1 AND ending = $2`
          : `UPDATE ${table} SET variables = variables - $2::text WHERE form_id = $1 AND variables ? $2`,
        [formId, loss.blockId],
      );
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
  if (c.kind === 'variable_removed') return 'variables ? $2';
  if (c.kind === 'ending_removed') return 'ending = $2';
  if (c.kind !== 'choice_removed') return 'answers ? $2';
  if (c.matrix === 'row') return '(answers -> $2) ? $3';
  if (c.matrix === 'column')
    return `EXISTS (SELECT 1 FROM jsonb_each(CASE WHEN jsonb_typeof(answers -> $2) = 'object' THEN answers -> $2 END) m
                     WHERE m.value = to_jsonb($3::text) OR m.value @> jsonb_build_array($3::text))`;
  return c.multiple ? '(answers -> $2) ? $3' : 'answers ->> $2 = $3';
}

/** A NewResponse as a row of the store function's recordset (its column names). */
function insertRow(r: NewResponse) {
  return {
    id: r.id,
    form_id: r.form.id,
    version: r.form.version,
    published: r.published === true,
    answers: r.answers,
    source: r.source,
    submitted_at: r.submittedAt ?? null,
    hidden: r.hidden ?? {},
    shown: r.shown ?? null,
    started_at: r.startedAt ?? null,
    last_page: r.lastPage ?? null,
    resume_hash: r.resumeHash ? r.resumeHash.toString('hex') : null,
    event_id: r.event?.id ?? null,
    head: r.event?.head ?? null,
    tail: r.event?.tail ?? null,
    audit: r.audit ?? null,
    variables: r.variables ?? null,
    ending: r.ending ?? null,
    ...(r.limits && { limits: r.limits }),
    // Only on the rows that have them (a column the recordset lacks reads as NULL).
    ...(r.key && {
      key_scope: r.key.claim.id.scope,
      key_tool: r.key.claim.id.tool,
      key: r.key.claim.id.key,
      key_print: r.key.claim.fingerprint.toString('hex'),
      key_ws: r.key.claim.workspaceId,
      key_form: r.key.formPublicId,
      answer_tail: r.key.tail,
    }),
    ...(r.uploads?.length && { uploads: r.uploads.map((u) => ({ id: u.id, block_id: u.blockId })) }),
  };
}

/**
 * ResponsesRepository.insertMany's statement: a call of the function that stores the rows (a JSON
 * array of insertRow()s), whose SQL is in migrations/1796000470000-StoreResponsesFunction.ts; the
 * claiming one (migrations/1796000500000-KeyedStoreFunction.ts) when a row has an Idempotency-Key
 * or uploads; both in the versions of migrations/1796000510000-CompletionTimes.ts, which also put
 * submittedAt in place of AT_SUBMISSION in the stored answer and the event, and since
 * migrations/1796000560000-FormsThatCompute.ts store variables and ending, and since
 * migrations/1796000590000-ResponseLimits.ts count toward caps and quotas. As a function its plan is made once
 * per database session, prepared or not: behind a transaction pooler and on the embedded
 * database, where nothing is prepared, a plain statement of that size was planned on every call.
 */
const INSERT_SQL = 'SELECT * FROM formwork_store_responses_v4($1::jsonb)';
const CLAIMING_INSERT_SQL = 'SELECT * FROM formwork_store_claiming_responses_v5($1::jsonb)';

/**
 * A store statement that first sets `formwork.traceparents` ($2, event id to traceparent) for its
 * transaction, read by the trigger on webhook_deliveries (migration 1796000700000): the function's
 * argument refers to the setting's row, so the setting is made before the function runs.
 */
function withTraceparents(sql: string): string {
  const fn = sql === INSERT_SQL ? 'formwork_store_responses_v4' : 'formwork_store_claiming_responses_v5';
  return `SELECT r.* FROM (SELECT set_config('formwork.traceparents', $2, true) AS t) s
    CROSS JOIN LATERAL ${fn}(CASE WHEN s.t IS NOT NULL THEN $1::jsonb END) r`;
}

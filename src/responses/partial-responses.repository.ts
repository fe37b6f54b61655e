/** The SQL of partial responses (issue 36): partial_responses and its per-page counts, partial_page_counts. */
import { Injectable } from '@nestjs/common';
import { currentTraceparent } from '../observability/tracing';
import { EntityManager } from 'typeorm';
import { prepared } from '../database/prepared';
import { isoText } from '../summaries/response-stats.repository';

/** A partial as read. */
export interface PartialRow {
  id: string;
  formId: string;
  answers: Record<string, unknown>;
  hidden: Record<string, string>;
  pagesReached: string[];
  lastPage: string;
  source: string;
  resumeHash: Buffer | null;
  startedAt: Date;
  updatedAt: Date;
}

const COLUMNS = `p.id, p.form_id AS "formId", p.answers, p.hidden, p.pages_reached AS "pagesReached", p.last_page AS "lastPage",
  p.source, p.resume_hash AS "resumeHash", p.started_at AS "startedAt", p.updated_at AS "updatedAt"`;

/**
 * A partial's variables as its save computed them (issue 46), for filters and summaries of
 * partials; NULL on forms that compute nothing. Its ending stays NULL: a partial reaches one only
 * when it completes. Its view computes them from its answers (partialViewer).
 */
const variablesJson = (v: unknown) => (v ? JSON.stringify(v) : null);

/** The key of partial_page_counts that counts a form's partials (page keys are '' or block ids). */
export const ALL_PAGES = '*';

@Injectable()
export class PartialResponsesRepository {
  /** The partial of the form with this id, locked for the caller's transaction with `lock`. */
  async find(m: EntityManager, formId: string, id: string, lock = false): Promise<PartialRow | undefined> {
    const [row] = await m.query(
      `SELECT ${COLUMNS} FROM partial_responses p WHERE p.form_id = $1 AND p.id = $2${lock ? ' FOR UPDATE' : ''}`,
      [formId, id],
    );
    return row;
  }

  /** The partial, or the completed response's id, that this resume secret's hash names on this form. */
  async findByResume(
    m: EntityManager,
    formId: string,
    hash: Buffer,
    lock = false,
  ): Promise<{ partial?: PartialRow; completedId?: string }> {
    const [row] = await m.query(
      `SELECT ${COLUMNS} FROM partial_responses p WHERE p.resume_hash = $1 AND p.form_id = $2${lock ? ' FOR UPDATE' : ''}`,
      [hash, formId],
    );
    if (row) return { partial: row };
    const [done] = await m.query(`SELECT id FROM responses WHERE resume_hash = $1 AND form_id = $2`, [hash, formId]);
    return done ? { completedId: done.id } : {};
  }

  /** The ids of the form's blocks now. */
  async blockIds(m: EntityManager, formId: string): Promise<string[]> {
    const rows: Array<{ id: string }> = await m.query(`SELECT id FROM blocks WHERE form_id = $1`, [formId]);
    return rows.map((r) => r.id);
  }

  /**
   * Stores a new partial (started and updated at `at`), counts it on its pages, and writes its
   * response.partial_saved event (`event.body`, built beforehand) for the subscribed endpoints of
   * `workspaceId`: one statement.
   */
  async insert(
    m: EntityManager,
    p: Omit<PartialRow, 'startedAt' | 'updatedAt'> & { clientHash?: Buffer | null; variables?: unknown },
    at: Date,
    event: { workspaceId: string; id: string; body: string },
  ): Promise<PartialRow> {
    const [row] = await m.query(
      prepared(
        m,
        `WITH p AS (
         INSERT INTO partial_responses (id, form_id, answers, hidden, pages_reached, last_page, source, resume_hash, started_at, updated_at, client_hash, variables)
         VALUES ($1, $2, $3::jsonb, $4::jsonb, $5::text[], $6, $7, $8, $9, $9, $13, $14::jsonb) RETURNING *),
       c AS (${countPages('$2', `array_append($5::text[], '${ALL_PAGES}')`, '1')}),
       e AS (${deliveries('$10', '$11', '$12', 'p', 'TRUE', '$15')})
       SELECT ${COLUMNS} FROM p`,
      ),
      [
        p.id,
        p.formId,
        JSON.stringify(p.answers),
        JSON.stringify(p.hidden),
        p.pagesReached,
        p.lastPage,
        p.source,
        p.resumeHash,
        at,
        event.workspaceId,
        event.id,
        event.body,
        p.clientHash ?? null,
        variablesJson(p.variables),
        currentTraceparent(),
      ],
    );
    return row;
  }

  /**
   * How many partials one client (its keyed IP hash, every form: IDX_partial_responses_client) and
   * one form (its '*' count) have open.
   */
  async openTotals(m: EntityManager, formId: string, clientHash: Buffer): Promise<{ client: number; form: number }> {
    const [row] = await m.query(
      `SELECT (SELECT count(*)::float8 FROM partial_responses WHERE client_hash = $2) AS client,
              COALESCE((SELECT n::float8 FROM partial_page_counts WHERE form_id = $1 AND page = '${ALL_PAGES}'), 0) AS form`,
      [formId, clientHash],
    );
    return row;
  }

  /**
   * Gives the partial of this form named by `from` (updated since `freshSince`) the resume hash
   * `to`, and keeps `from` in resume_moves (the old link then says where its answers went), in one
   * statement. The partial's id, or undefined when none has `from` (any more).
   */
  async moveResume(
    m: EntityManager,
    formId: string,
    from: Buffer,
    to: Buffer,
    freshSince: Date,
  ): Promise<string | undefined> {
    const [row] = await m.query(
      `WITH p AS (UPDATE partial_responses SET resume_hash = $3
                   WHERE resume_hash = $1 AND form_id = $2 AND updated_at >= $4 RETURNING id),
            moved AS (INSERT INTO resume_moves (hash, form_id, response_id) SELECT $1, $2, id FROM p)
       SELECT id FROM p`,
      [from, formId, to, freshSince],
    );
    return row?.id;
  }

  /**
   * Where a moved resume hash's answers are: the response's id, and whether it was completed since
   * or is still open (neither: deleted); undefined for a hash never moved.
   */
  async moved(
    m: EntityManager,
    formId: string,
    hash: Buffer,
  ): Promise<{ responseId: string; completed: boolean; open: boolean } | undefined> {
    const [row] = await m.query(
      `SELECT mv.response_id AS "responseId",
              EXISTS (SELECT 1 FROM responses r WHERE r.id = mv.response_id AND r.form_id = mv.form_id) AS completed,
              EXISTS (SELECT 1 FROM partial_responses p WHERE p.id = mv.response_id AND p.form_id = mv.form_id) AS open
         FROM resume_moves mv WHERE mv.hash = $1 AND mv.form_id = $2`,
      [hash, formId],
    );
    return row;
  }

  /** Forgets the moves older than `before` (the retention sweep); how many went. */
  async forgetMoves(m: EntityManager, before: Date): Promise<number> {
    const result: unknown = await m.query(`DELETE FROM resume_moves WHERE moved_at < $1`, [before]);
    return Array.isArray(result) && typeof result[1] === 'number' ? result[1] : 0;
  }

  /**
   * The respondent page's save of a partial named by its resume secret's hash, in ONE statement:
   * locks and updates it (its pages reached grow by the pages of `reached` it had not reached),
   * counts it on those pages, and when there are some, writes its response.partial_saved event
   * for the subscribed endpoints (the body around the row's id, start and pages: `event.form` and
   * `event.response` are JSON built beforehand). Undefined when no partial of the form has it
   * updated since `freshSince` (an expired one is not taken up again: the sweep removes it).
   */
  async saveByResume(
    m: EntityManager,
    p: {
      formId: string;
      hash: Buffer;
      answers: unknown;
      hidden: unknown;
      reached: string[];
      lastPage: string;
      variables?: unknown;
    },
    at: Date,
    event: { workspaceId: string; id: string; form: string; response: string },
    freshSince: Date,
  ): Promise<PartialRow | undefined> {
    const added = `ARRAY(SELECT x FROM unnest($5::text[]) x WHERE x <> ALL (old.pages_reached))`;
    const body = `jsonb_build_object('type', 'response.partial_saved', 'timestamp', ${isoText('$7::timestamptz')},
        'data', jsonb_build_object('form', $10::jsonb, 'response', $11::jsonb || jsonb_build_object(
          'id', p.id, 'startedAt', ${isoText('p.started_at')}, 'pagesReached', to_jsonb(p.pages_reached))))::text`;
    const [row] = await m.query(
      prepared(
        m,
        `WITH old AS (SELECT id, pages_reached FROM partial_responses WHERE resume_hash = $1 AND form_id = $2 AND updated_at >= $12 FOR UPDATE),
       p AS (
         UPDATE partial_responses p SET answers = $3::jsonb, hidden = $4::jsonb, pages_reached = old.pages_reached || ${added},
                last_page = $6, updated_at = $7, variables = $13::jsonb
           FROM old WHERE p.id = old.id
         RETURNING p.*, ${added} AS added),
       c AS (${countPages('$2', '(SELECT added FROM p)', '1')}),
       e AS (${deliveries('$8', '$9', body, 'p', 'cardinality(p.added) > 0', '$14')})
       SELECT ${COLUMNS} FROM p`,
      ),
      [
        p.hash,
        p.formId,
        JSON.stringify(p.answers),
        JSON.stringify(p.hidden),
        p.reached,
        p.lastPage,
        at,
        event.workspaceId,
        event.id,
        event.form,
        event.response,
        freshSince,
        variablesJson(p.variables),
        currentTraceparent(),
      ],
    );
    return row;
  }

  /**
   * Counts the partial of this resume secret's hash on the pages of `reached` it had not reached,
   * its answers unchanged (a save whose answers were refused: the person went on all the same),
   * in one statement; only one updated since `freshSince`. Whether there was such a partial.
   */
  async reachPages(
    m: EntityManager,
    p: { formId: string; hash: Buffer; reached: string[] },
    freshSince: Date,
  ): Promise<boolean> {
    const added = `ARRAY(SELECT x FROM unnest($3::text[]) x WHERE x <> ALL (old.pages_reached))`;
    const rows = await m.query(
      `WITH old AS (SELECT id, pages_reached FROM partial_responses WHERE resume_hash = $1 AND form_id = $2 AND updated_at >= $4 FOR UPDATE),
       p AS (
         UPDATE partial_responses p SET pages_reached = old.pages_reached || ${added}, updated_at = now()
           FROM old WHERE p.id = old.id
         RETURNING ${added} AS added),
       c AS (${countPages('$2', '(SELECT added FROM p)', '1')})
       SELECT 1 FROM p`,
      [p.hash, p.formId, p.reached, freshSince],
    );
    return rows.length > 0;
  }

  /** Changes a partial (locked by the caller) and counts it on the pages it newly reached. */
  async update(
    m: EntityManager,
    p: Pick<PartialRow, 'id' | 'formId' | 'answers' | 'hidden' | 'pagesReached' | 'lastPage'> & { variables?: unknown },
    newPages: string[],
  ): Promise<PartialRow> {
    const [row] = await m.query(
      `WITH p AS (
         UPDATE partial_responses SET answers = $3::jsonb, hidden = $4::jsonb, pages_reached = $5::text[], last_page = $6,
                updated_at = clock_timestamp(), variables = $8::jsonb
          WHERE id = $1 AND form_id = $2 RETURNING *),
       c AS (${countPages('$2', '$7::text[]', '1')})
       SELECT ${COLUMNS} FROM p`,
      [
        p.id,
        p.formId,
        JSON.stringify(p.answers),
        JSON.stringify(p.hidden),
        p.pagesReached,
        p.lastPage,
        newPages,
        variablesJson(p.variables),
      ],
    );
    return row;
  }

  /**
   * Deletes partials of one form (by id) and uncounts them from their pages; returns the ids
   * deleted. `olderThan`: only those not updated since (the retention sweep), at most `limit`,
   * skipping rows another transaction holds.
   */
  async delete(m: EntityManager, formId: string, ids: string[]): Promise<string[]> {
    const rows: Array<{ id: string }> = await m.query(
      `WITH d AS (DELETE FROM partial_responses WHERE form_id = $1 AND id = ANY($2::uuid[]) RETURNING id, pages_reached),
       c AS (${uncountPages('$1')})
       SELECT id FROM d`,
      [formId, ids],
    );
    return rows.map((r) => r.id);
  }

  /** Lets go of the uploads a partial holds (pending again: the uploads sweep collects those not named again). */
  async releaseUploads(m: EntityManager, id: string): Promise<void> {
    await m.query(`UPDATE uploads SET response_id = NULL WHERE response_id = $1`, [id]);
  }

  /** Up to `limit` partials not updated since `before`, oldest first, locked (others' locked rows skipped). */
  async expired(
    m: EntityManager,
    before: Date,
    limit: number,
  ): Promise<Array<{ id: string; formId: string; workspaceId: string }>> {
    return m.query(
      `SELECT p.id, p.form_id AS "formId", f.workspace_id AS "workspaceId"
         FROM partial_responses p JOIN forms f ON f.id = p.form_id
        WHERE p.updated_at < $1 ORDER BY p.updated_at LIMIT $2 FOR UPDATE OF p SKIP LOCKED`,
      [before, limit],
    );
  }

  /** How many partials reached each page of the form, and ('*') how many it has. */
  async pageCounts(m: EntityManager, formId: string): Promise<Map<string, number>> {
    const rows: Array<{ page: string; n: number }> = await m.query(
      `SELECT page, n::float8 AS n FROM partial_page_counts WHERE form_id = $1`,
      [formId],
    );
    return new Map(rows.map((r) => [r.page, r.n]));
  }

  /**
   * `count` partials of the form $1 in start (id) order from `start` that match `filter` (SQL over
   * the row p as responseFilterSql writes it: since/until apply to when a partial started).
   */
  page(
    m: EntityManager,
    filter: { sql: string; params: unknown[] },
    start: number,
    count: number,
  ): Promise<PartialRow[]> {
    const params = [...filter.params];
    const n = params.push(start, count);
    return m.query(
      `SELECT ${COLUMNS} FROM ${FILTERABLE} WHERE ${filter.sql} ORDER BY p.id OFFSET $${n - 1} LIMIT $${n}`,
      params,
    );
  }

  /** How many partials of the form $1 match `filter` (as page's). */
  async count(m: EntityManager, filter: { sql: string; params: unknown[] }): Promise<number> {
    const [{ n }] = await m.query(`SELECT count(*)::int AS n FROM ${FILTERABLE} WHERE ${filter.sql}`, filter.params);
    return n;
  }
}

/** The form $1's partials as p, with submitted_at (when it started) for the filters' since/until. */
const FILTERABLE = `(SELECT *, started_at AS submitted_at FROM partial_responses WHERE form_id = $1) p`;

/** The form $1's partials as readFilteredSummary reads rows (r): no recorded path, ordered by start, none completed (started_at NULL). */
export const PARTIAL_SOURCE = `(SELECT id, answers, hidden, variables, ending, NULL::jsonb AS shown, started_at AS submitted_at,
    row_number() OVER (ORDER BY id) AS seq, NULL::timestamptz AS started_at FROM partial_responses WHERE form_id = $1) r`;

/** The form $1's sequenced responses, then its partials, as readFilteredSummary reads rows (r). */
export const ALL_SOURCE = `(SELECT id, answers, hidden, variables, ending, shown, submitted_at, seq, started_at FROM responses WHERE form_id = $1 AND seq IS NOT NULL
  UNION ALL SELECT id, answers, hidden, variables, ending, NULL::jsonb, started_at, 1000000000000000 + row_number() OVER (ORDER BY id), NULL::timestamptz
    FROM partial_responses WHERE form_id = $1) r`;

/**
 * The response.partial_saved deliveries of the rows of `source` where `when`: one per enabled
 * endpoint of the workspace `workspace` subscribed to it by name.
 */
function deliveries(
  workspace: string,
  eventId: string,
  body: string,
  source: string,
  when: string,
  traceparent: string,
): string {
  return `INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at, traceparent)
    SELECT w.workspace_id, w.id, ${eventId}, 'response.partial_saved', ${body}, now(), ${traceparent}::text
      FROM ${source} CROSS JOIN webhook_endpoints w
     WHERE ${when} AND w.workspace_id = ${workspace}::uuid AND w.enabled AND 'response.partial_saved' = ANY (w.events)`;
}

/** Adds `delta` to the counts of the pages in the text[] `pages` of form `form`. */
function countPages(form: string, pages: string, delta: string): string {
  return `INSERT INTO partial_page_counts (form_id, page, n)
    SELECT ${form}::uuid, x, ${delta} FROM unnest(${pages}) x WHERE EXISTS (SELECT 1 FROM p)
    ON CONFLICT (form_id, page) DO UPDATE SET n = partial_page_counts.n + EXCLUDED.n`;
}

/** Takes the deleted rows d (pages_reached) off their pages' counts, and off '*'. */
function uncountPages(form: string): string {
  return `UPDATE partial_page_counts c SET n = c.n - x.k
      FROM (SELECT page, count(*) AS k FROM d CROSS JOIN LATERAL unnest(array_append(d.pages_reached, '${ALL_PAGES}')) page GROUP BY page) x
     WHERE c.form_id = ${form}::uuid AND c.page = x.page`;
}

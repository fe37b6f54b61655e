import type { EntityManager } from 'typeorm';
import { LATEST_TEXTS } from './summarize';

/**
 * The maintained aggregates of a form's responses, updated in the same transaction as every
 * response write and delete, so summaries and totals never read every response:
 *   response_counters  total, last seq, last submittedAt (its row lock serialises inserts per form)
 *   response_buckets   responses per 1024 seq values (seek table for deep offsets)
 *   block_stats        answered count, sum of numeric answers, latest text answers, per block
 *   answer_counts      answers per value (choice id, rating, number, date, true/false), per block
 * Insert, delete and the full recount all derive values with the one SQL fragment below, so they
 * cannot disagree about what a value is.
 */

export const BUCKET_BITS = 10; // 1024 seq values per bucket

const NUMERIC = `('number', 'rating', 'linear_scale')`;
const TEXT = `('short_text', 'long_text', 'email', 'url', 'phone')`;

/** (block_id, value, num) for every answer value of the rows of `source` (which must expose `answers`). */
function valuesOf(source: string, formParam: string): string {
  return `SELECT b.id AS block_id, v.value, CASE WHEN b.type IN ${NUMERIC} THEN v.value::float8 END AS num
    FROM ${source} CROSS JOIN blocks b
    CROSS JOIN LATERAL (
      SELECT s.answers ->> b.id AS value WHERE b.type NOT IN ('checkboxes', 'statement') AND s.answers ? b.id
      UNION ALL
      SELECT e FROM jsonb_array_elements_text(CASE WHEN b.type = 'checkboxes' AND jsonb_typeof(s.answers -> b.id) = 'array' THEN s.answers -> b.id ELSE '[]'::jsonb END) e
    ) v
    WHERE b.form_id = ${formParam} AND b.type NOT IN ${TEXT}`;
}

/** (block_id, type, num) for every block the rows of `source` answered. */
function answeredOf(source: string, formParam: string): string {
  return `SELECT b.id AS block_id, b.type, CASE WHEN b.type IN ${NUMERIC} THEN (s.answers ->> b.id)::float8 ELSE 0 END AS num
    FROM ${source} CROSS JOIN blocks b
    WHERE b.form_id = ${formParam} AND b.type <> 'statement' AND s.answers ? b.id`;
}

export interface InsertedResponse {
  id: string;
  seq: string;
  submitted_at: Date;
  answers: Record<string, unknown>;
}

/**
 * Inserts a response (answers already validated) with the next seq and updates every aggregate.
 * submittedAt never goes backwards in seq order, so ordering by seq is ordering by submittedAt.
 */
export async function insertResponse(
  tx: EntityManager,
  formId: string,
  answers: Record<string, unknown>,
  source: string,
  submittedAt?: Date,
): Promise<InsertedResponse> {
  const [row]: InsertedResponse[] = await tx.query(
    `WITH c AS (
       UPDATE response_counters
          SET total = total + 1, last_seq = last_seq + 1,
              last_submitted_at = GREATEST(COALESCE($4::timestamptz, clock_timestamp()), COALESCE(last_submitted_at, '-infinity'))
        WHERE form_id = $1
       RETURNING last_seq, last_submitted_at),
     r AS (
       INSERT INTO responses (form_id, seq, submitted_at, answers, source)
       SELECT $1, c.last_seq, c.last_submitted_at, $2::jsonb, $3 FROM c
       RETURNING id, seq, submitted_at, answers),
     b AS (
       INSERT INTO response_buckets (form_id, bucket, count)
       SELECT $1, r.seq >> ${BUCKET_BITS}, 1 FROM r
       ON CONFLICT (form_id, bucket) DO UPDATE SET count = response_buckets.count + 1)
     SELECT id, seq, submitted_at, answers FROM r`,
    [formId, JSON.stringify(answers), source, submittedAt ?? null],
  );
  if (!row) throw new Error(`form ${formId} has no response counter`);
  const self = `(SELECT $2::jsonb AS answers) s`;
  await tx.query(
    `WITH ac AS (
       INSERT INTO answer_counts (form_id, block_id, value, num, count)
       SELECT $1, block_id, value, num, 1 FROM (${valuesOf(self, '$1')}) v ORDER BY block_id, value
       ON CONFLICT (form_id, block_id, value) DO UPDATE SET count = answer_counts.count + 1)
     INSERT INTO block_stats (form_id, block_id, answered, sum, latest)
     SELECT $1, a.block_id, 1, a.num,
            CASE WHEN a.type IN ${TEXT}
                 THEN jsonb_build_array(jsonb_build_object('responseId', $3::text, 'value', $2::jsonb ->> a.block_id, 'seq', $4::bigint, 'submittedAt', $5::text))
                 ELSE '[]'::jsonb END
       FROM (${answeredOf(self, '$1')}) a ORDER BY a.block_id
     ON CONFLICT (form_id, block_id) DO UPDATE
       SET answered = block_stats.answered + 1,
           sum = block_stats.sum + EXCLUDED.sum,
           latest = CASE WHEN jsonb_array_length(EXCLUDED.latest) = 0 THEN block_stats.latest
                         ELSE (SELECT jsonb_agg(e ORDER BY i) FROM jsonb_array_elements(EXCLUDED.latest || block_stats.latest) WITH ORDINALITY t(e, i) WHERE i <= ${LATEST_TEXTS}) END`,
    [formId, JSON.stringify(row.answers), row.id, row.seq, row.submitted_at.toISOString()],
  );
  return row;
}

/** Deletes one response and takes it out of every aggregate. Returns false when there was none. */
export async function deleteResponse(tx: EntityManager, formId: string, responseId: string): Promise<boolean> {
  // Serialised with inserts on the counter row, like them.
  await tx.query('SELECT 1 FROM response_counters WHERE form_id = $1 FOR UPDATE', [formId]);
  const [gone] = await tx.query(
    `WITH d AS (DELETE FROM responses WHERE form_id = $1 AND id = $2 RETURNING seq, answers),
          c AS (UPDATE response_counters SET total = total - 1 WHERE form_id = $1 AND EXISTS (SELECT 1 FROM d)),
          b AS (UPDATE response_buckets SET count = count - 1 WHERE form_id = $1 AND bucket = (SELECT seq >> ${BUCKET_BITS} FROM d))
     SELECT seq, answers FROM d`,
    [formId, responseId],
  );
  if (!gone) return false;
  const self = `(SELECT $2::jsonb AS answers) s`;
  await tx.query(
    `WITH ac AS (
       UPDATE answer_counts a SET count = a.count - v.n
         FROM (SELECT block_id, value, count(*) AS n FROM (${valuesOf(self, '$1')}) x GROUP BY block_id, value) v
        WHERE a.form_id = $1 AND a.block_id = v.block_id AND a.value = v.value)
     UPDATE block_stats s SET answered = s.answered - 1, sum = s.sum - a.num
       FROM (${answeredOf(self, '$1')}) a
      WHERE s.form_id = $1 AND s.block_id = a.block_id`,
    [formId, JSON.stringify(gone.answers)],
  );
  await tx.query('DELETE FROM answer_counts WHERE form_id = $1 AND count <= 0', [formId]);
  await tx.query('DELETE FROM response_buckets WHERE form_id = $1 AND count <= 0', [formId]);
  // A deleted response among a block's latest texts: refill that list from the index.
  await tx.query(
    `UPDATE block_stats s SET latest = ${latestFor('s.block_id')}
      WHERE s.form_id = $1 AND s.latest @> jsonb_build_array(jsonb_build_object('responseId', $2::text))`,
    [formId, responseId],
  );
  return true;
}

/** The latest text answers of a block, newest first, from the responses (index walk by seq). */
function latestFor(blockIdExpr: string): string {
  return `COALESCE((SELECT jsonb_agg(jsonb_build_object('responseId', r.id::text, 'value', r.answers ->> ${blockIdExpr}, 'seq', r.seq,
                    'submittedAt', to_char(r.submitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY r.seq DESC)
            FROM (SELECT id, seq, submitted_at, answers FROM responses
                   WHERE form_id = $1 AND answers ? ${blockIdExpr} ORDER BY seq DESC LIMIT ${LATEST_TEXTS}) r), '[]'::jsonb)`;
}

/**
 * Rebuilds every aggregate of a form from its responses: after an edit that discarded answers,
 * in the migration that introduced them, and as the reference a test compares them with.
 */
export async function recomputeResponseStats(tx: EntityManager, formId: string): Promise<void> {
  await tx.query('SELECT 1 FROM response_counters WHERE form_id = $1 FOR UPDATE', [formId]);
  await tx.query('DELETE FROM answer_counts WHERE form_id = $1', [formId]);
  await tx.query('DELETE FROM block_stats WHERE form_id = $1', [formId]);
  await tx.query('DELETE FROM response_buckets WHERE form_id = $1', [formId]);
  const all = `(SELECT answers FROM responses WHERE form_id = $1) s`;
  await tx.query(
    `INSERT INTO answer_counts (form_id, block_id, value, num, count)
     SELECT $1, block_id, value, num, count(*) FROM (${valuesOf(all, '$1')}) v GROUP BY block_id, value, num`,
    [formId],
  );
  await tx.query(
    `INSERT INTO block_stats (form_id, block_id, answered, sum, latest)
     SELECT $1, a.block_id, count(*), sum(a.num), CASE WHEN a.type IN ${TEXT} THEN ${latestFor('a.block_id')} ELSE '[]'::jsonb END
       FROM (${answeredOf(all, '$1')}) a GROUP BY a.block_id, a.type`,
    [formId],
  );
  await tx.query(
    `INSERT INTO response_buckets (form_id, bucket, count)
     SELECT form_id, seq >> ${BUCKET_BITS}, count(*) FROM responses WHERE form_id = $1::uuid GROUP BY 1, 2`,
    [formId],
  );
  await tx.query(
    `UPDATE response_counters SET total = (SELECT count(*) FROM responses WHERE form_id = $1),
            last_seq = GREATEST(last_seq, COALESCE((SELECT max(seq) FROM responses WHERE form_id = $1), 0))
      WHERE form_id = $1`,
    [formId],
  );
}

/** Answers an edit discards (its loss accepted): a whole block's, or one choice's. */
export interface DiscardedAnswers {
  kind: 'block_removed' | 'block_retyped' | 'choice_removed';
  blockId: string;
  choiceId?: string;
  /** Checkboxes: answers hold a list of choice ids. */
  multiple?: boolean;
}

/**
 * Removes discarded answers from the responses and takes exactly them out of the aggregates
 * (no recount): a block's statistics go with it; a choice takes its count with it, and the
 * responses it leaves without an answer to that block stop counting as answered.
 */
export async function discardAnswers(tx: EntityManager, formId: string, loss: DiscardedAnswers): Promise<void> {
  await tx.query('SELECT 1 FROM response_counters WHERE form_id = $1 FOR UPDATE', [formId]);
  const { blockId, choiceId } = loss;
  if (loss.kind !== 'choice_removed') {
    await tx.query('UPDATE responses SET answers = answers - $2 WHERE form_id = $1 AND answers ? $2', [formId, blockId]);
    await tx.query('DELETE FROM block_stats WHERE form_id = $1 AND block_id = $2', [formId, blockId]);
    await tx.query('DELETE FROM answer_counts WHERE form_id = $1 AND block_id = $2', [formId, blockId]);
    return;
  }
  const [{ emptied }] = loss.multiple
    ? await tx.query(
        `WITH u AS (
           UPDATE responses SET answers = CASE WHEN jsonb_array_length((answers -> $2) - $3) = 0 THEN answers - $2
                                               ELSE jsonb_set(answers, ARRAY[$2], (answers -> $2) - $3) END
            WHERE form_id = $1 AND (answers -> $2) ? $3
           RETURNING answers ? $2 AS still)
         SELECT count(*) FILTER (WHERE NOT still)::int AS emptied FROM u`,
        [formId, blockId, choiceId],
      )
    : await tx.query(
        `WITH u AS (UPDATE responses SET answers = answers - $2 WHERE form_id = $1 AND answers ->> $2 = $3 RETURNING 1)
         SELECT count(*)::int AS emptied FROM u`,
        [formId, blockId, choiceId],
      );
  await tx.query('UPDATE block_stats SET answered = answered - $3 WHERE form_id = $1 AND block_id = $2', [formId, blockId, emptied]);
  await tx.query('DELETE FROM answer_counts WHERE form_id = $1 AND block_id = $2 AND value = $3', [formId, blockId, choiceId]);
}

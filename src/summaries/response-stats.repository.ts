import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { allowLongStatements } from '../database/long-statements';
import type { Block } from '../forms/blocks';
import { ENDING_VARIABLE } from '../forms/conditions';
import { LATEST_TEXTS } from './summarize';
import { ResponseSegment, withoutJit } from '../responses/response-filter';

/**
 * The order of a form's responses and their maintained aggregates, so that paging, totals and
 * summaries never read every response:
 *   response_counters  total, last seq, last submittedAt of the sequenced responses
 *   response_buckets   responses per 1024 seq values (seek table for deep offsets)
 *   block_stats        answered count, sum of numeric answers, latest text answers, per block
 *   answer_counts      answers per value (choice id, rating, number, date, true/false), per block
 *   hidden_counts      responses per value of each hidden field (by the value's SHA-256)
 *   response_segments  the same (segment_block_stats, segment_answer_counts) for the responses
 *                      holding one value (a hidden value, a choice: segmentOf), made the first
 *                      time one is summarized, kept from then on (readSegmentSummary)
 *
 * A submission only inserts its row, with seq NULL: it touches no per-form row, so submissions to
 * one form do not wait for each other. The form's sequencer (sequenceResponses) then gives the
 * committed unsequenced responses their seq, in (submittedAt, arrival) order after every seq
 * already given, and folds them into the aggregates, in one statement under a per-form lock. A
 * response is therefore counted exactly once, when it gets its seq, and a new seq always lands
 * after every committed one: the order only grows at its end. Sequencing runs in the background
 * (ResponseSequencerWorker) and before any read that needs it (list and summary).
 *
 * Segments are folded by the same statement (SEGMENT_FOLD, joining the segments that exist); a
 * delete drops the segments its response was in, an edit that discards answers and a recount drop
 * the form's: the next summary of one makes it again, from the responses (inserted first and
 * scanned outside the lock: startSegment). A form keeps at most MAX_SEGMENTS_PER_FORM, the least
 * lately read dropped first.
 *
 * Locks, always in this order: the form's row, then the form's sequencer lock (a transaction-level
 * advisory lock). Deletes, edits that discard answers and recounts take both, so that they see
 * every response either sequenced and counted, or not yet either.
 *
 * Folding, delete and the full recount derive values with the one SQL fragment below, so they
 * cannot disagree about what a value is.
 */

export const BUCKET_BITS = 10; // 1024 seq values per bucket

/**
 * Segments a form keeps at most: every fold of the form tests each new response against each of
 * them, so the least lately read one makes room for a new one (its next summary makes it again).
 */
export const MAX_SEGMENTS_PER_FORM = 32;

const NUMERIC = `('number', 'rating', 'linear_scale', 'nps')`;
const TEXT = `('short_text', 'long_text', 'email', 'url', 'phone')`;

/**
 * (block_id, type, value, num) for every answer value of the rows of `source` (aliased s, exposing
 * `answers`) on the form `formExpr`; with `formColumn`, also that expression, named `key` (form_id,
 * or segment_id for a segment's rows).
 */
function valuesOf(source: string, formExpr: string, formColumn?: string, key = 'form_id'): string {
  return `SELECT ${formColumn ? `${formColumn} AS ${key}, ` : ''}b.id AS block_id, b.type, v.value, CASE WHEN b.type IN ${NUMERIC} THEN v.value::float8 END AS num
    FROM ${source} CROSS JOIN blocks b
    CROSS JOIN LATERAL (
      SELECT s.answers ->> b.id AS value WHERE b.type NOT IN ('checkboxes', 'ranking', 'matrix', 'statement') AND s.answers ? b.id
      UNION ALL
      SELECT e FROM jsonb_array_elements_text(CASE WHEN b.type = 'checkboxes' AND jsonb_typeof(s.answers -> b.id) = 'array' THEN s.answers -> b.id ELSE '[]'::jsonb END) e
      UNION ALL -- a ranking: each choice at its place, "<choice id>:<place>" (rankedValue)
      SELECT r.e || ':' || r.o FROM jsonb_array_elements_text(CASE WHEN b.type = 'ranking' AND jsonb_typeof(s.answers -> b.id) = 'array' THEN s.answers -> b.id ELSE '[]'::jsonb END) WITH ORDINALITY r(e, o)
      UNION ALL -- a matrix: each row's column(s), "<row id>:<column id>" (matrixValue)
      SELECT m.key || ':' || c.e FROM jsonb_each(CASE WHEN b.type = 'matrix' AND jsonb_typeof(s.answers -> b.id) = 'object' THEN s.answers -> b.id ELSE '{}'::jsonb END) m
        CROSS JOIN LATERAL jsonb_array_elements_text(CASE jsonb_typeof(m.value) WHEN 'array' THEN m.value WHEN 'string' THEN jsonb_build_array(m.value) ELSE '[]'::jsonb END) c(e)
    ) v
    WHERE b.form_id = ${formExpr} AND b.type NOT IN ${TEXT} AND b.type <> 'file_upload'`; // no histogram of upload ids
}

/**
 * The key under which answer_counts and segment_answer_counts keep the histogram of the times to
 * complete (issue 45): no block has it (block ids take no colon). Its values are seconds, bucketed
 * by SECONDS_BUCKET.
 */
export const SECONDS_KEY = ':seconds';

/**
 * The bucket of a time to complete `seconds` (SQL, numeric): whole seconds under 10 minutes, then
 * 10 s under an hour, a minute under a day, an hour beyond. A form's histogram has at most a few
 * thousand rows, whatever its number of responses.
 */
const SECONDS_BUCKET = (seconds: string) => `(CASE WHEN ${seconds} < 600 THEN floor(${seconds})
  WHEN ${seconds} < 3600 THEN floor(${seconds} / 10) * 10 WHEN ${seconds} < 86400 THEN floor(${seconds} / 60) * 60
  ELSE floor(${seconds} / 3600) * 3600 END)::bigint`;

/** The bucketed time to complete of the row s (SQL; NULL when it did not start as a partial). */
export const completionSeconds = (s: string) =>
  SECONDS_BUCKET(`GREATEST(0, extract(epoch FROM ${s}.submitted_at - ${s}.started_at))`);

/**
 * (block_id, type, value, num) as valuesOf's, of the times to complete (SECONDS_KEY) of the rows of
 * `source` (aliased s, exposing submitted_at and started_at) that started as partials.
 */
function timesOf(source: string, formColumn?: string, key = 'form_id'): string {
  return `SELECT ${formColumn ? `${formColumn} AS ${key}, ` : ''}'${SECONDS_KEY}'::text AS block_id, 'seconds'::text AS type,
      ${completionSeconds('s')}::text AS value, ${completionSeconds('s')}::float8 AS num
    FROM ${source} WHERE s.started_at IS NOT NULL`;
}

/** The answer_counts key of a form's variable (issue 46): no block id holds a colon. */
export const variableKey = (name: string) => `:variable:${name}`;
/** The answer_counts key of the endings responses reached (value: the ending's ref). */
export const ENDING_KEY = ENDING_VARIABLE;

/**
 * (block_id, type, value, num) as valuesOf's, for what the rows of `source` (aliased s, exposing
 * `variables` and `ending`) computed (issue 46): a number variable's value (num set), a text
 * variable counted under the value '' when it is not empty (its texts are not kept: they are up to
 * 1,000 characters each; the latest are read from the responses), the ending's ref. So a summary
 * of them, and the totals of equals / in filters on them, read answer_counts only.
 */
function computedOf(source: string, formColumn?: string, key = 'form_id'): string {
  const k = formColumn ? `${formColumn} AS ${key}, ` : '';
  return `SELECT ${k}':variable:' || e.key AS block_id, jsonb_typeof(e.value) AS type,
           CASE WHEN jsonb_typeof(e.value) = 'number' THEN e.value #>> '{}' ELSE '' END AS value,
           CASE WHEN jsonb_typeof(e.value) = 'number' THEN (e.value #>> '{}')::float8 END AS num
      FROM ${source} CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(s.variables) = 'object' THEN s.variables ELSE '{}' END) e
     WHERE jsonb_typeof(e.value) = 'number' OR (jsonb_typeof(e.value) = 'string' AND e.value <> '""')
    UNION ALL
    SELECT ${k}'${ENDING_KEY}'::text, 'ending'::text, s.ending, NULL::float8 FROM ${source} WHERE s.ending IS NOT NULL`;
}

/**
 * (block_id, type, num, date) for every block the rows of `source` answered (arguments as
 * valuesOf's); date is the answer of a date block (YYYY-MM-DD), else NULL.
 */
function answeredOf(source: string, formExpr: string, formColumn?: string, key = 'form_id'): string {
  return `SELECT ${formColumn ? `${formColumn} AS ${key}, ` : ''}b.id AS block_id, b.type, CASE WHEN b.type IN ${NUMERIC} THEN (s.answers ->> b.id)::float8 ELSE 0 END AS num,
           CASE WHEN b.type = 'date' THEN s.answers ->> b.id END AS date
    FROM ${source} CROSS JOIN blocks b
    WHERE b.form_id = ${formExpr} AND b.type <> 'statement' AND s.answers ? b.id`;
}

/**
 * (block_id, shown) for the rows of `source` (aliased s, exposing `shown`, the recorded path): how
 * many of them were shown each block that takes an answer, and each page_break (the funnel's
 * pages reached, issue 36) (arguments as valuesOf's). Rows without
 * a recorded path count in response_counters.total - recorded instead (they were shown every block).
 */
function shownOf(source: string, formExpr: string, formColumn?: string, key = 'form_id'): string {
  return `SELECT ${formColumn ? `${formColumn} AS ${key}, ` : ''}b.id AS block_id, count(*) AS shown
    FROM ${source} CROSS JOIN LATERAL jsonb_array_elements_text(CASE WHEN jsonb_typeof(s.shown) = 'array' THEN s.shown ELSE '[]'::jsonb END) e
    JOIN blocks b ON b.form_id = ${formExpr} AND b.id = e AND b.type <> 'statement'
   GROUP BY ${formColumn ? '1, 2' : '1'}`;
}

/** The digest hidden_counts keys a value (text) by. */
const digestOf = (text: string) => `sha256(convert_to(${text}, 'UTF8'))`;

/**
 * Whether the row `alias` is in the segment of kind `kind` ('answers' or 'hidden') matching
 * `match` (SQL expressions): the one test of membership, for the fold, the build and deletes.
 */
function segmentMatch(alias: string, kind: string, match: string): string {
  return `(CASE ${kind} WHEN 'hidden' THEN ${alias}.hidden ELSE ${alias}.answers END) @> ${match}`;
}

/**
 * What a segment being made (scan_seq set: see startSegment) holds in form_total below the form's
 * total, moved with it by folds and deletes as any segment's: code from before scan_seq (an
 * instance of the version before, during a deploy) then sees it out of step, and makes the
 * segment again rather than read one that lacks its scan.
 */
const MAKING_TOTAL_OFFSET = 2 ** 40;

/** Whether the segment g is in step with the counters c (see ResponseSegmentEntity.formSeq), made or being made. */
const segmentInStep = (g: string, c: string) =>
  `${c}.last_seq = ${g}.form_seq AND ${c}.total = ${g}.form_total + CASE WHEN ${g}.scan_seq IS NULL THEN 0 ELSE ${MAKING_TOTAL_OFFSET} END`;

/** The key of a segment of a form (its kind and match, as SQL text and jsonb). */
const segmentDigest = (kind: string, match: string) => `sha256(convert_to(${kind} || ' ' || (${match})::text, 'UTF8'))`;

/**
 * (name, digest) for every hidden value of the rows of `source` (aliased s, exposing `hidden`);
 * with `formColumn`, also that expression as form_id. Only strings other than "" (what a filter's
 * equals can match: validation stores nothing else).
 */
function hiddenOf(source: string, formColumn?: string): string {
  return `SELECT ${formColumn ? `${formColumn} AS form_id, ` : ''}h.key AS name, ${digestOf(`h.value #>> '{}'`)} AS digest
    FROM ${source} CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(s.hidden) = 'object' THEN s.hidden ELSE '{}' END) h
   WHERE jsonb_typeof(h.value) = 'string' AND h.value <> '""'`;
}

/** The key of a form's sequencer lock (a transaction-level advisory lock), for the form row `f`. */
const SEQUENCER_KEY = `hashtextextended('formwork.sequencer:' || f.id::text, 0)`;

/** Most responses of a form one sequencing statement takes (a backlog takes several short statements). */
export const SEQUENCE_BATCH = 5000;

/**
 * The part of SEQUENCE_SQL (CTEs over its s, c and per_form) that folds the responses it sequences
 * into the segments of their forms (see readSegmentSummary): `seg` holds each response once per
 * segment it matches, found by joining the segments that exist (a form without any joins none, and
 * the CTEs below write nothing). Every segment of a form moves form_seq and form_total with the
 * form's counters, matched or not: they say the segment has seen every sequencing and delete.
 * Counts are kept for the blocks a summary counts (not numbers and dates: their range is kept);
 * the latest texts as block_stats keeps them, newest first.
 */
const SEGMENT_FOLD = `
seg AS MATERIALIZED (
  SELECT g.id AS segment_id, s.form_id, s.seq, s.submitted_at, s.started_at, s.answers, s.shown
    FROM s JOIN response_segments g ON g.form_id = s.form_id AND ${segmentMatch('s', 'g.kind', 'g.match')}),
seg_n AS (
  SELECT g.id, x.n AS form_n, c.last_seq + x.n AS form_seq, count(m.segment_id) AS n, count(m.shown) AS recorded,
         min(m.submitted_at) AS first_at, max(m.submitted_at) AS last_at
    FROM response_segments g JOIN per_form x ON x.form_id = g.form_id JOIN c ON c.form_id = g.form_id
    LEFT JOIN seg m ON m.segment_id = g.id
   GROUP BY g.id, x.n, c.last_seq),
segments AS (
  UPDATE response_segments g SET total = g.total + m.n, recorded = g.recorded + m.recorded, first_at = LEAST(g.first_at, m.first_at),
         last_at = GREATEST(g.last_at, m.last_at), form_seq = m.form_seq, form_total = g.form_total + m.form_n
    FROM seg_n m WHERE g.id = m.id),
seg_counts AS (
  INSERT INTO segment_answer_counts (segment_id, block_id, value, count)
  SELECT segment_id, block_id, value, count(*)
    FROM (${valuesOf('seg s', 's.form_id', 's.segment_id', 'segment_id')} UNION ALL ${timesOf('seg s', 's.segment_id', 'segment_id')}) v
   WHERE v.type NOT IN ('number', 'date')
   GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (segment_id, block_id, value) DO UPDATE SET count = segment_answer_counts.count + EXCLUDED.count),
seg_ans AS (
  SELECT segment_id, block_id, count(*) AS answered, sum(num) AS sum, min(num) FILTER (WHERE type IN ${NUMERIC}) AS min_num,
         max(num) FILTER (WHERE type IN ${NUMERIC}) AS max_num, min(date) AS min_text, max(date) AS max_text
    FROM (${answeredOf('seg s', 's.form_id', 's.segment_id', 'segment_id')}) a GROUP BY 1, 2),
seg_seen AS (${shownOf('seg s', 's.form_id', 's.segment_id', 'segment_id')}),
seg_latest AS (
  SELECT s.segment_id, b.id AS block_id,
         jsonb_path_query_array(jsonb_agg(jsonb_build_object('value', s.answers ->> b.id, 'submittedAt', ${isoText('s.submitted_at')})
           ORDER BY s.seq DESC), '$[0 to ${LATEST_TEXTS - 1}]') AS latest
    FROM seg s JOIN blocks b ON b.form_id = s.form_id AND b.type IN ${TEXT} AND s.answers ? b.id
   GROUP BY s.segment_id, b.id),
seg_stats AS (
  INSERT INTO segment_block_stats (segment_id, block_id, answered, sum, shown, min_num, max_num, min_text, max_text, latest)
  SELECT k.segment_id, k.block_id, COALESCE(a.answered, 0), COALESCE(a.sum, 0), COALESCE(w.shown, 0), a.min_num, a.max_num, a.min_text, a.max_text,
         COALESCE(l.latest, '[]'::jsonb)
    FROM (SELECT segment_id, block_id FROM seg_ans UNION SELECT segment_id, block_id FROM seg_seen) k
    LEFT JOIN seg_ans a ON a.segment_id = k.segment_id AND a.block_id = k.block_id
    LEFT JOIN seg_seen w ON w.segment_id = k.segment_id AND w.block_id = k.block_id
    LEFT JOIN seg_latest l ON l.segment_id = k.segment_id AND l.block_id = k.block_id
   ORDER BY 1, 2
  ON CONFLICT (segment_id, block_id) DO UPDATE
    SET answered = segment_block_stats.answered + EXCLUDED.answered,
        sum = segment_block_stats.sum + EXCLUDED.sum,
        shown = segment_block_stats.shown + EXCLUDED.shown,
        min_num = LEAST(segment_block_stats.min_num, EXCLUDED.min_num),
        max_num = GREATEST(segment_block_stats.max_num, EXCLUDED.max_num),
        min_text = LEAST(segment_block_stats.min_text, EXCLUDED.min_text),
        max_text = GREATEST(segment_block_stats.max_text, EXCLUDED.max_text),
        latest = jsonb_path_query_array(EXCLUDED.latest || segment_block_stats.latest, '$[0 to ${LATEST_TEXTS - 1}]'))`;

const SEQUENCE_SQL = `
WITH p AS (
  SELECT id, form_id, submitted_at, n FROM (
    SELECT id, form_id, submitted_at, row_number() OVER (PARTITION BY form_id ORDER BY submitted_at, arrival, id) AS n
      FROM responses WHERE form_id = ANY($1::uuid[]) AND seq IS NULL) w
   WHERE n <= $2),
c AS (SELECT form_id, last_seq, COALESCE(last_submitted_at, '-infinity') AS last_at FROM response_counters WHERE form_id = ANY($1::uuid[])),
s AS (
  UPDATE responses r SET seq = c.last_seq + p.n, submitted_at = GREATEST(p.submitted_at, c.last_at)
    FROM p JOIN c ON c.form_id = p.form_id WHERE r.id = p.id
  RETURNING r.id, r.form_id, r.seq, r.submitted_at, r.started_at, r.answers, r.shown, r.hidden, r.variables, r.ending),
per_form AS (SELECT form_id, count(*)::int AS n, count(shown)::int AS recorded, max(submitted_at) AS last_at FROM s GROUP BY form_id),
counter AS (
  UPDATE response_counters rc SET total = rc.total + x.n, recorded = rc.recorded + x.recorded, last_seq = rc.last_seq + x.n,
         last_submitted_at = GREATEST(rc.last_submitted_at, x.last_at),
         hidden_total = rc.hidden_total + x.n, hidden_seq = rc.hidden_seq + x.n
    FROM per_form x WHERE rc.form_id = x.form_id),
buckets AS (
  INSERT INTO response_buckets (form_id, bucket, count)
  SELECT form_id, seq >> ${BUCKET_BITS}, count(*) FROM s GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (form_id, bucket) DO UPDATE SET count = response_buckets.count + EXCLUDED.count),
counts AS (
  INSERT INTO answer_counts (form_id, block_id, value, num, count)
  SELECT form_id, block_id, value, num, count(*)
    FROM (${valuesOf('s', 's.form_id', 's.form_id')} UNION ALL ${timesOf('s', 's.form_id')} UNION ALL ${computedOf('s', 's.form_id')}) v
   GROUP BY form_id, block_id, value, num ORDER BY form_id, block_id, value
  ON CONFLICT (form_id, block_id, value) DO UPDATE SET count = answer_counts.count + EXCLUDED.count),
hidden AS (
  INSERT INTO hidden_counts (form_id, name, digest, count)
  SELECT form_id, name, digest, count(*) FROM (${hiddenOf('s', 's.form_id')}) h
   GROUP BY form_id, name, digest ORDER BY form_id, name, digest
  ON CONFLICT (form_id, name, digest) DO UPDATE SET count = hidden_counts.count + EXCLUDED.count),
latest AS MATERIALIZED (
  SELECT s.form_id, b.id AS block_id,
         jsonb_path_query_array(jsonb_agg(jsonb_build_object('responseId', s.id::text, 'value', s.answers ->> b.id, 'seq', s.seq,
           'submittedAt', ${isoText('s.submitted_at')}) ORDER BY s.seq DESC), '$[0 to ${LATEST_TEXTS - 1}]') AS latest
    FROM s JOIN blocks b ON b.form_id = s.form_id AND b.type IN ${TEXT} AND s.answers ? b.id
   GROUP BY s.form_id, b.id),
ans AS (SELECT form_id, block_id, count(*) AS answered, sum(num) AS sum FROM (${answeredOf('s', 's.form_id', 's.form_id')}) x GROUP BY 1, 2),
seen AS (${shownOf('s', 's.form_id', 's.form_id')}),
stats AS (
  INSERT INTO block_stats (form_id, block_id, answered, sum, latest, shown)
  SELECT k.form_id, k.block_id, COALESCE(a.answered, 0), COALESCE(a.sum, 0), COALESCE(l.latest, '[]'::jsonb), COALESCE(w.shown, 0)
    FROM (SELECT form_id, block_id FROM ans UNION SELECT form_id, block_id FROM seen) k
    LEFT JOIN ans a ON a.form_id = k.form_id AND a.block_id = k.block_id
    LEFT JOIN latest l ON l.form_id = k.form_id AND l.block_id = k.block_id
    LEFT JOIN seen w ON w.form_id = k.form_id AND w.block_id = k.block_id
   ORDER BY k.form_id, k.block_id
  ON CONFLICT (form_id, block_id) DO UPDATE
    SET answered = block_stats.answered + EXCLUDED.answered,
        sum = block_stats.sum + EXCLUDED.sum,
        shown = block_stats.shown + EXCLUDED.shown,
        latest = jsonb_path_query_array(EXCLUDED.latest || block_stats.latest, '$[0 to ${LATEST_TEXTS - 1}]')),
${SEGMENT_FOLD}
SELECT form_id, n FROM per_form`;

/** The rows readFilteredSummary reads by default (as r): the form $1's sequenced responses. */
const COMPLETED_SOURCE = `(SELECT * FROM responses WHERE form_id = $1 AND seq IS NOT NULL) r`;

/** SELECT `columns` FROM the sequenced responses of the form $1 in `segment` (its match is $2), as r. */
function segmentRows(segment: ResponseSegment, columns: string): string {
  return `SELECT ${columns} FROM responses r WHERE r.form_id = $1 AND r.seq IS NOT NULL AND ${segmentMatch('r', `'${segment.kind}'`, '$2::jsonb')}`;
}

/** A timestamptz as the ISO text the summaries show (UTC, milliseconds). */
export function isoText(expr: string): string {
  return `to_char(${expr} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** The latest text answers of a block, newest first, from the responses (index walk by seq). */
function latestFor(blockIdExpr: string): string {
  return `COALESCE((SELECT jsonb_agg(jsonb_build_object('responseId', r.id::text, 'value', r.answers ->> ${blockIdExpr}, 'seq', r.seq,
                    'submittedAt', ${isoText('r.submitted_at')}) ORDER BY r.seq DESC)
            FROM (SELECT id, seq, submitted_at, answers FROM responses
                   WHERE form_id = $1 AND seq IS NOT NULL AND answers ? ${blockIdExpr} ORDER BY seq DESC LIMIT ${LATEST_TEXTS}) r), '[]'::jsonb)`;
}

/** A form's aggregates as readSummary reads them (JSON: numbers may come as text, times as ISO text). */
export interface SummaryRow {
  total: number | null;
  /** Counted responses with a recorded path (see shownOf). */
  recorded: number | null;
  first: Date | null;
  last: Date | null;
  stats: Array<{
    blockId: string;
    answered: number;
    sum: number;
    shown: number | string;
    latest: Array<{ value: string; submittedAt: string }>;
  }>;
  counts: Array<{ blockId: string; value: string; count: number }>;
  numeric: Array<{ blockId: string; min: number | string | null; max: number | string | null }>;
  dates: Array<{ blockId: string; min: number | string | null; max: number | string | null }>;
  waiting: boolean;
  /** A summary computed from the rows: the median time to complete (see medianSeconds), null when none started as a partial. */
  medianSeconds?: number | null;
}

/**
 * The median time to complete, in seconds, from a histogram of SECONDS_KEY (value, count): the
 * bucket holding the response at position ceil(n / 2), the lower median (percentile_disc(0.5)
 * over the rows gives the same). Null when the histogram is empty.
 */
export function medianSeconds(histogram: Array<{ value: string; count: number | string }>): number | null {
  const buckets = histogram.map((h) => ({ at: Number(h.value), n: Number(h.count) })).filter((h) => h.n > 0);
  buckets.sort((a, b) => a.at - b.at);
  const total = buckets.reduce((sum, b) => sum + b.n, 0);
  let seen = 0;
  for (const b of buckets) {
    seen += b.n;
    if (seen * 2 >= total) return b.at;
  }
  return null;
}

/** The most values of a number variable whose counts a summary shows (a distribution); more: none shown. */
export const MAX_COMPUTED_VALUES = 50;

/** What readComputed reads per key (numbers may come as text). */
export interface ComputedRow {
  key: string;
  answered: number;
  sum: number | null;
  min: number | null;
  max: number | null;
  values: Array<{ value: string; count: number }> | null;
}

/** A segment's row while its first build runs (see startSegment): the scan counts responses up to scanSeq. */
export interface SegmentBuild {
  id: string;
  scanSeq: string;
}

/** A segment's scanned aggregates (scanSegment), and the latest texts of each text block it answered. */
export interface SegmentScan {
  row: SummaryRow;
  latest: Map<string, unknown>;
}

/** Answers an edit discards (its loss accepted): a whole block's, or one choice's. */
export interface DiscardedAnswers {
  kind: 'block_removed' | 'block_retyped' | 'choice_removed';
  blockId: string;
  choiceId?: string;
  /** Checkboxes: answers hold a list of choice ids. */
  multiple?: boolean;
  /** A ranking: the places of the choices after the one removed change, so the form is recounted. */
  ranked?: boolean;
  /** A matrix: choiceId is a row or a column it loses (the form is recounted). */
  matrix?: 'row' | 'column';
}

/** The SQL of the aggregates of responses and of their sequencing (see the top of this file). */
@Injectable()
export class ResponseStatsRepository {
  /** The counters of a new form (every form has them). */
  async createCounters(tx: EntityManager, formId: string): Promise<void> {
    await tx.query('INSERT INTO response_counters (form_id) VALUES ($1)', [formId]);
  }

  /** Whether any response of any form waits for its seq (one cheap look at the unsequenced index). */
  async anyWaiting(manager: EntityManager): Promise<boolean> {
    const [{ waiting }] = await manager.query('SELECT EXISTS (SELECT 1 FROM responses WHERE seq IS NULL) AS waiting');
    return waiting;
  }

  /**
   * The maintained aggregates of a form in one statement (one consistent snapshot), and whether
   * responses wait for their seq: value counts of the `counted` blocks, ranges of the `numeric`
   * and `dates` blocks.
   */
  async readSummary(
    manager: EntityManager,
    formId: string,
    blocks: { counted: string[]; numeric: string[]; dates: string[] },
  ): Promise<SummaryRow> {
    const [row] = await manager.query(
      `SELECT (SELECT total::int FROM response_counters WHERE form_id = $1) AS total,
              (SELECT submitted_at FROM responses WHERE form_id = $1 AND seq IS NOT NULL ORDER BY seq LIMIT 1) AS first,
              (SELECT submitted_at FROM responses WHERE form_id = $1 AND seq IS NOT NULL ORDER BY seq DESC LIMIT 1) AS last,
              (SELECT recorded::int FROM response_counters WHERE form_id = $1) AS recorded,
              (SELECT COALESCE(json_agg(json_build_object('blockId', block_id, 'answered', answered, 'sum', sum, 'latest', latest, 'shown', shown)), '[]')
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
                 FROM unnest($4::text[]) x(id)) AS dates,
              EXISTS (SELECT 1 FROM responses WHERE form_id = $1 AND seq IS NULL) AS waiting`,
      [formId, blocks.counted, blocks.numeric, blocks.dates],
    );
    return row;
  }

  /** The form's counted responses: total, those with a recorded path, and per block how many were shown it (page_breaks included). */
  async readShown(
    manager: EntityManager,
    formId: string,
  ): Promise<{ total: number; recorded: number; shown: Map<string, number> }> {
    const [row] = await manager.query(
      `SELECT COALESCE((SELECT total::float8 FROM response_counters WHERE form_id = $1), 0) AS total,
              COALESCE((SELECT recorded::float8 FROM response_counters WHERE form_id = $1), 0) AS recorded,
              (SELECT COALESCE(json_agg(json_build_array(block_id, shown::float8)), '[]') FROM block_stats WHERE form_id = $1) AS shown`,
      [formId],
    );
    return { total: row.total, recorded: row.recorded, shown: new Map(row.shown as Array<[string, number]>) };
  }

  /** The form's counted (sequenced) responses, from the maintained counter. */
  async total(manager: EntityManager, formId: string): Promise<number> {
    const [row] = await manager.query(`SELECT total::float8 AS n FROM response_counters WHERE form_id = $1`, [formId]);
    return row?.n ?? 0;
  }

  /**
   * How many sequenced responses of the form answer the block with one of `values` (as
   * answer_counts keeps them: a choice id, "true"/"false"), from the maintained counts.
   */
  async countAnswers(manager: EntityManager, formId: string, blockId: string, values: string[]): Promise<number> {
    const [{ n }] = await manager.query(
      `SELECT COALESCE(sum(count), 0)::int AS n FROM answer_counts WHERE form_id = $1 AND block_id = $2 AND value = ANY($3::text[])`,
      [formId, blockId, [...new Set(values)]],
    );
    return n;
  }

  /**
   * How many sequenced responses of the form hold a number under the key `key` (a number
   * variable's: computedOf) that compares with `value` as `op` says, from the maintained counts.
   * The values counted and the filter's both come from JavaScript numbers written in their shortest
   * form, so comparing them as float8 here and as numeric in the filter (conditionSql) agrees.
   */
  async countCompared(
    manager: EntityManager,
    formId: string,
    key: string,
    compare: { op: 'gt' | 'gte' | 'lt' | 'lte'; value: number },
  ): Promise<number> {
    const sign = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[compare.op];
    const [{ n }] = await manager.query(
      `SELECT COALESCE(sum(count), 0)::float8 AS n FROM answer_counts WHERE form_id = $1 AND block_id = $2 AND num ${sign} $3::float8`,
      [formId, key, compare.value],
    );
    return n;
  }

  /**
   * The values countCompared counts, each as the variables object holding it ({ name: value },
   * JSON text, the value written as PostgreSQL keeps it, so that containment matches it exactly);
   * undefined when there are more than `most`.
   */
  async valuesCompared(
    manager: EntityManager,
    formId: string,
    key: string,
    name: string,
    compare: { op: 'gt' | 'gte' | 'lt' | 'lte'; value: number },
    most: number,
  ): Promise<string[] | undefined> {
    const sign = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[compare.op];
    const rows: Array<{ j: string }> = await manager.query(
      `SELECT jsonb_build_object($4::text, value::jsonb)::text AS j FROM answer_counts
        WHERE form_id = $1 AND block_id = $2 AND num ${sign} $3::float8 AND count > 0 LIMIT $5`,
      [formId, key, compare.value, name, most + 1],
    );
    return rows.length > most ? undefined : rows.map((r) => r.j);
  }

  /**
   * How many sequenced responses of the form hold one of `values` in the hidden field `name`, from
   * the maintained counts; undefined when they were not kept in step with the form's responses (an
   * instance of an earlier version counted or deleted some: see HiddenCountEntity), for the caller
   * to count rows instead. "" and duplicates count nothing more, as a filter's equals / in match them.
   */
  async countHidden(
    manager: EntityManager,
    formId: string,
    name: string,
    values: string[],
  ): Promise<number | undefined> {
    const [row] = await manager.query(
      `SELECT CASE WHEN c.hidden_total = c.total AND c.hidden_seq = c.last_seq THEN
                (SELECT COALESCE(sum(h.count), 0)::float8 FROM hidden_counts h
                  WHERE h.form_id = $1 AND h.name = $2
                    AND h.digest IN (SELECT ${digestOf('v')} FROM unnest($3::text[]) v WHERE v <> ''))
              END AS n
         FROM response_counters c WHERE c.form_id = $1`,
      [formId, name, [...new Set(values)]],
    );
    return row?.n ?? undefined;
  }

  /**
   * The aggregates readSummary reads, computed from the form's sequenced responses that match
   * `filter` (SQL over the row r; its params start with the form's id, $1) rather than maintained:
   * one scan of the matches (which PostgreSQL may run in parallel) takes every aggregate at once,
   * each as `count(*) FILTER (...)`, sum, min or max, as one would write it by hand; the text
   * blocks' latest answers come from one more walk of the seq index backwards, shared by every text
   * block, stopping where the last of them has its fifth match. The values counted are the ones a summary shows (`counted`: each block's choice ids,
   * true/false, the scale's values, as summaryFromStats asks for them), answered is answeredOf's
   * (the key is there), sums and ranges are valuesOf's (numbers as float8, dates as text), and a
   * block is shown to a response whose recorded path holds it (shownOf), so a segment is counted
   * as the whole is (a test compares both with a recount). `blocks` are the form's blocks that take
   * an answer.
   */
  async readFilteredSummary(
    manager: EntityManager,
    filter: { sql: string; params: unknown[] },
    blocks: Block[],
    counted: (block: Block) => string[],
    source: string = COMPLETED_SOURCE,
    withLatest = true,
  ): Promise<SummaryRow> {
    const params = [...filter.params];
    const bind = (value: string) => `$${params.push(value)}::text`;
    /** The aggregates, in order; the statement returns them as one JSON list (see `columns`). */
    const aggregates: string[] = [];
    const take = (sql: string) => aggregates.push(sql) - 1;
    const isNumeric = (t: string) => NUMERIC.includes(`'${t}'`);
    const per = blocks.map((b) => {
      const key = bind(b.id);
      const answer = `r.answers -> ${key}`;
      const value = (v: string) =>
        b.type === 'checkboxes'
          ? `(${answer}) ? ${bind(v)}`
          : b.type === 'ranking' // "<choice id>:<place>": the choice at that place (rankedValue)
            ? `(${answer}) ->> (${bind(v.slice(v.lastIndexOf(':') + 1))}::int - 1) = ${bind(v.slice(0, v.lastIndexOf(':')))}`
            : b.type === 'matrix' // "<row id>:<column id>": that column picked in that row (matrixValue)
              ? `(${answer}) -> ${bind(v.slice(0, v.indexOf(':')))} ? ${bind(v.slice(v.indexOf(':') + 1))}`
              : b.type === 'yes_no'
                ? `(${answer}) = ${bind(v)}::jsonb`
                : `(r.answers ->> ${key}) = ${bind(v)}`;
      return {
        block: b,
        answered: take(`count(*) FILTER (WHERE r.answers ? ${key})`),
        shown: take(`count(*) FILTER (WHERE r.shown ? ${key})`),
        sum: isNumeric(b.type) ? take(`COALESCE(sum((r.answers ->> ${key})::float8), 0)`) : undefined,
        range: isNumeric(b.type)
          ? [take(`min((r.answers ->> ${key})::float8)`), take(`max((r.answers ->> ${key})::float8)`)]
          : b.type === 'date'
            ? [take(`min(r.answers ->> ${key})`), take(`max(r.answers ->> ${key})`)]
            : undefined,
        counts: counted(b).map((v) => ({ value: v, at: take(`count(*) FILTER (WHERE ${value(v)})`) })),
        // Uncorrelated: computed once (an InitPlan), not per row. From the one walk of the matches
        // (below), newest first, as far as this block's fifth answer.
        latest:
          withLatest && TEXT.includes(`'${b.type}'`)
            ? take(`(SELECT COALESCE(json_agg(json_build_object('value', l.v, 'submittedAt', l.at) ORDER BY l.seq DESC), '[]')
                     FROM (SELECT w.answers ->> ${key} AS v, ${isoText('w.submitted_at')} AS at, w.seq FROM walk w
                            WHERE w.answers ? ${key} LIMIT ${LATEST_TEXTS}) l)`)
            : undefined,
      };
    });
    // json_build_array takes at most 100 arguments: a list of lists of 90.
    const columns: string[] = [];
    for (let i = 0; i < aggregates.length; i += 90)
      columns.push(`json_build_array(${aggregates.slice(i, i + 90).join(', ')})`);
    // The text blocks' latest answers share one walk of the matches, newest first: a materialized
    // CTE is computed once, only as far as its furthest reader reads (the block whose fifth answer
    // lies deepest), and read in the order it produced its rows. So the filter is evaluated at most
    // twice per response (the scan and the walk), not once more per text block.
    const walk = per.some((p) => p.latest !== undefined)
      ? `WITH walk AS MATERIALIZED (
           SELECT r.seq, r.submitted_at, r.answers FROM ${source} WHERE ${filter.sql} ORDER BY r.seq DESC)`
      : '';
    await withoutJit(manager);
    const [row] = await manager.query(
      `${walk}
       SELECT count(*)::int AS total, count(r.shown)::int AS recorded, min(r.submitted_at) AS first, max(r.submitted_at) AS last,
              percentile_disc(0.5) WITHIN GROUP (ORDER BY ${completionSeconds('r')}) FILTER (WHERE r.started_at IS NOT NULL) AS median,
              ${columns.length ? `json_build_array(${columns.join(', ')})` : `'[]'::json`} AS aggregates
         FROM ${source}
        WHERE ${filter.sql}`,
      params,
    );
    const values: unknown[] = (row.aggregates as unknown[][]).flat();
    const at = (i: number | undefined) => (i === undefined ? null : (values[i] as number | string | null));
    return {
      total: row.total,
      recorded: row.recorded,
      first: row.first,
      last: row.last,
      waiting: false,
      medianSeconds: row.median === null ? null : Number(row.median),
      stats: per.map((p) => ({
        blockId: p.block.id,
        answered: Number(at(p.answered)),
        sum: Number(at(p.sum) ?? 0),
        shown: Number(at(p.shown)),
        latest: (at(p.latest) ?? []) as unknown as SummaryRow['stats'][number]['latest'],
      })),
      counts: per.flatMap((p) =>
        p.counts.map((c) => ({ blockId: p.block.id, value: c.value, count: Number(at(c.at)) })),
      ),
      numeric: per
        .filter((p) => p.range && isNumeric(p.block.type))
        .map((p) => ({ blockId: p.block.id, min: at(p.range![0]), max: at(p.range![1]) })),
      dates: per
        .filter((p) => p.range && p.block.type === 'date')
        .map((p) => ({ blockId: p.block.id, min: at(p.range![0]), max: at(p.range![1]) })),
    };
  }

  /**
   * What the responses computed (issue 46), per key of computedOf (`keys`: the form's variables'
   * and ENDING_KEY): how many hold it, the sum, min and max of a number variable, and the counts
   * per value (a number, an ending's ref; '' for a text variable) when it has at most
   * MAX_COMPUTED_VALUES of them. Unfiltered from answer_counts (as many rows as values, whatever
   * the number of responses); with `filter`, from one scan of the matching rows of `source`.
   */
  async readComputed(
    manager: EntityManager,
    formId: string,
    keys: string[],
    filter?: { sql: string; params: unknown[]; source?: string },
  ): Promise<ComputedRow[]> {
    const params = filter ? [...filter.params] : [formId];
    const k = `$${params.push(keys)}::text[]`;
    const counts = filter
      ? `WITH m AS MATERIALIZED (SELECT r.variables, r.ending FROM ${filter.source ?? COMPLETED_SOURCE} WHERE ${filter.sql}),
              c AS (SELECT block_id, value, num, count(*) AS count FROM (${computedOf('m s')}) v WHERE block_id = ANY(${k}) GROUP BY 1, 2, 3)`
      : `WITH c AS (SELECT block_id, value, num, count FROM answer_counts WHERE form_id = $1 AND block_id = ANY(${k}))`;
    if (filter) await withoutJit(manager);
    return manager.query(
      `${counts}
       SELECT block_id AS key, sum(count)::float8 AS answered, sum(num * count)::float8 AS sum, min(num) AS min, max(num) AS max,
              CASE WHEN count(*) <= ${MAX_COMPUTED_VALUES} THEN json_agg(json_build_object('value', value, 'count', count::float8) ORDER BY num, value) END AS "values"
         FROM c GROUP BY block_id`,
      params,
    );
  }

  /** The latest non-empty values of a text variable, newest first (a walk of the rows by seq, backwards), as the latest text answers are. */
  async latestText(
    manager: EntityManager,
    formId: string,
    name: string,
    filter?: { sql: string; params: unknown[]; source?: string },
  ): Promise<Array<{ value: string; submittedAt: string }>> {
    const params = filter ? [...filter.params] : [formId];
    const n = `$${params.push(name)}::text`;
    return manager.query(
      `SELECT r.variables ->> ${n} AS value, ${isoText('r.submitted_at')} AS "submittedAt"
         FROM ${filter?.source ?? COMPLETED_SOURCE}
        WHERE ${filter?.sql ?? 'TRUE'} AND COALESCE(r.variables ->> ${n}, '') <> ''
        ORDER BY r.seq DESC LIMIT ${LATEST_TEXTS}`,
      params,
    );
  }

  /**
   * A segment's summary (see ResponseSegment) from its maintained aggregates, as readSummary reads
   * the form's, in one statement; undefined when the form has no such segment, or one out of step
   * with the form's counters (an instance of an earlier version sequenced or deleted responses
   * without keeping it), or one whose first build has not finished (scan_seq set): the caller
   * builds it (startSegment). Every figure is kept, the latest texts too (see scanSegment):
   * nothing is read from the responses.
   */
  async readSegmentSummary(
    manager: EntityManager,
    formId: string,
    segment: ResponseSegment,
    blocks: Block[],
  ): Promise<SummaryRow | undefined> {
    const [row] = await manager.query(
      `SELECT g.id, g.total::int AS total, g.recorded::int AS recorded, g.first_at AS first, g.last_at AS last,
              g.last_read_at < now() - interval '1 hour' AS touch,
              (SELECT COALESCE(json_agg(json_build_object('blockId', block_id, 'answered', answered, 'sum', sum, 'shown', shown,
                        'min_num', min_num, 'max_num', max_num, 'min_text', min_text, 'max_text', max_text, 'latest', latest)), '[]')
                 FROM segment_block_stats WHERE segment_id = g.id) AS stats,
              (SELECT COALESCE(json_agg(json_build_object('blockId', block_id, 'value', value, 'count', count)), '[]')
                 FROM segment_answer_counts WHERE segment_id = g.id) AS counts
         FROM response_segments g JOIN response_counters c ON c.form_id = g.form_id AND c.last_seq = g.form_seq AND c.total = g.form_total
        WHERE g.form_id = $1 AND g.digest = ${segmentDigest('$3::text', '$2::jsonb')} AND g.scan_seq IS NULL`,
      [formId, JSON.stringify(segment.match), segment.kind],
    );
    if (!row) return undefined;
    // When it was last read, for a sweep of the unused ones; written at most once an hour.
    if (row.touch) await manager.query(`UPDATE response_segments SET last_read_at = now() WHERE id = $1`, [row.id]);
    type Stats = Record<string, number | string | null> & {
      blockId: string;
      latest: SummaryRow['stats'][number]['latest'];
    };
    const stats = new Map((row.stats as Stats[]).map((s) => [s.blockId, s]));
    const at = (b: Block, column: string) => (stats.get(b.id)?.[column] ?? null) as number | string | null;
    return {
      total: row.total,
      recorded: row.recorded,
      first: row.first,
      last: row.last,
      waiting: false,
      stats: blocks.map((b) => ({
        blockId: b.id,
        answered: Number(at(b, 'answered') ?? 0),
        sum: Number(at(b, 'sum') ?? 0),
        shown: Number(at(b, 'shown') ?? 0),
        latest: stats.get(b.id)?.latest ?? [],
      })),
      counts: row.counts,
      numeric: blocks
        .filter((b) => NUMERIC.includes(`'${b.type}'`))
        .map((b) => ({ blockId: b.id, min: at(b, 'min_num'), max: at(b, 'max_num') })),
      dates: blocks
        .filter((b) => b.type === 'date')
        .map((b) => ({ blockId: b.id, min: at(b, 'min_text'), max: at(b, 'max_text') })),
    };
  }

  /**
   * Begins making a segment's aggregates, under the form's sequencer lock (taken here until the
   * transaction ends): 'ready' when the form has it in step, the row being made when another
   * summary began it (its scan may be repeated: whichever finishes first adds its own), else a new
   * row, empty and not readable (scan_seq: the form's last_seq now). An out-of-step one is dropped
   * first. Undefined when the form is gone.
   *
   * Why a row before the scan, rather than a scan in a snapshot checked against the counters
   * afterwards: from here on, the row is a segment to every writer. The sequencer folds each newer
   * response into it, a delete drops it if the response matched (else moves form_total), an edit
   * that discards answers and a recount drop it, and the cap may too: every way the scanned rows
   * could change already leaves a mark on the row (it is gone), so finishSegment needs no list of
   * them, and the scan (scanSegment, of seq <= scan_seq) runs without the lock.
   */
  async startSegment(
    tx: EntityManager,
    formId: string,
    segment: ResponseSegment,
  ): Promise<SegmentBuild | 'ready' | undefined> {
    if (!(await this.lockSequencer(tx, formId))) return undefined;
    const key = [formId, JSON.stringify(segment.match), segment.kind];
    const [kept] = await tx.query(
      `WITH stale AS (
         DELETE FROM response_segments g USING response_counters c
          WHERE g.form_id = $1 AND g.digest = ${segmentDigest('$3::text', '$2::jsonb')} AND c.form_id = g.form_id
            AND NOT (${segmentInStep('g', 'c')}))
       SELECT g.id, g.scan_seq FROM response_segments g
         JOIN response_counters c ON c.form_id = g.form_id AND ${segmentInStep('g', 'c')}
        WHERE g.form_id = $1 AND g.digest = ${segmentDigest('$3::text', '$2::jsonb')}`,
      key,
    );
    if (kept) return kept.scan_seq === null ? 'ready' : { id: kept.id, scanSeq: kept.scan_seq };
    await tx.query(
      `DELETE FROM response_segments WHERE id IN (
         SELECT id FROM response_segments WHERE form_id = $1 ORDER BY last_read_at DESC, id DESC OFFSET $2)`,
      [formId, MAX_SEGMENTS_PER_FORM - 1],
    );
    const [made] = await tx.query(
      `INSERT INTO response_segments (form_id, kind, match, digest, form_seq, form_total, scan_seq)
       SELECT $1, $3, $2::jsonb, ${segmentDigest('$3::text', '$2::jsonb')}, c.last_seq, c.total - ${MAKING_TOTAL_OFFSET}, c.last_seq
         FROM response_counters c WHERE c.form_id = $1
       RETURNING id, scan_seq`,
      key,
    );
    return { id: made.id, scanSeq: made.scan_seq };
  }

  /**
   * The aggregates of a segment's responses up to its scan_seq (see startSegment), needing no lock:
   * the scan is readFilteredSummary's (one pass over the matches, every aggregate at once);
   * `counted` as there. The latest texts of each text block are read apart, by a statement with
   * LIMIT 5 per block: PostgreSQL plans readFilteredSummary's shared walk (a CTE) for reading
   * every row it holds, so at 10% it fetched every match by the GIN index and sorted them (390 ms
   * at 1M), where with a LIMIT it walks the seq index backwards (0.3 ms); a rare segment takes its
   * index (see below). The caller allows the statements their time.
   */
  async scanSegment(
    manager: EntityManager,
    formId: string,
    segment: ResponseSegment,
    build: SegmentBuild,
    blocks: Block[],
    counted: (block: Block) => string[],
  ): Promise<SegmentScan> {
    const upTo = `r.seq <= $3::bigint`; // newer ones are folded into the row
    const key = [formId, JSON.stringify(segment.match), build.scanSeq];
    const row = await this.readFilteredSummary(
      manager,
      { sql: `${segmentMatch('r', `'${segment.kind}'`, '$2::jsonb')} AND ${upTo}`, params: key },
      blocks,
      counted,
      COMPLETED_SOURCE,
      false,
    );
    // Only blocks the segment answered, at most as many as it answered: the walk stops at the last.
    // A rare segment (under 5% of the form) is read by its index and sorted (`seq + 0` takes the
    // seq index's order away): walking the seq index backwards, the planner's choice with a LIMIT,
    // reads every newer response first, and a campaign that ended long ago lies deep (180,000 rows
    // walked for 5 answers of 0.1% of 1.2M, 190 ms, where the index took 10 ms).
    const formTotal = await this.total(manager, formId);
    const order = (row.total ?? 0) * 20 < formTotal ? 'r.seq + 0' : 'r.seq';
    const params = [...key];
    const latest = row.stats
      .filter((s) => s.answered > 0 && blocks.some((b) => b.id === s.blockId && TEXT.includes(`'${b.type}'`)))
      .map((s) => {
        const id = `$${params.push(s.blockId)}::text`;
        return `json_build_array(${id}, (SELECT COALESCE(jsonb_agg(jsonb_build_object('value', l.v, 'submittedAt', l.at) ORDER BY l.seq DESC), '[]')
                  FROM (${segmentRows(segment, `r.answers ->> ${id} AS v, ${isoText('r.submitted_at')} AS at, r.seq`)}
                          AND ${upTo} AND r.answers ? ${id} ORDER BY ${order} DESC LIMIT ${Math.min(LATEST_TEXTS, s.answered)}) l))`;
      });
    const [{ texts }] = latest.length
      ? await manager.query(`SELECT json_build_array(${latest.join(', ')}) AS texts`, params)
      : [{ texts: [] }];
    // The histogram of its times to complete (kept with its counts, as the form's: SECONDS_KEY), by an
    // index-backed read of the matches that started as partials; only when some did (the median says).
    if (row.medianSeconds !== null && row.medianSeconds !== undefined) {
      const times: Array<{ value: string; count: number }> = await manager.query(
        `SELECT ${completionSeconds('r')}::text AS value, count(*)::int AS count
           FROM (${segmentRows(segment, 'r.submitted_at, r.started_at')} AND ${upTo} AND r.started_at IS NOT NULL) r GROUP BY 1`,
        key,
      );
      row.counts.push(...times.map((t) => ({ blockId: SECONDS_KEY, value: t.value, count: t.count })));
    }
    return { row, latest: new Map(texts as Array<[string, unknown]>) };
  }

  /**
   * Adds a segment's scan (scanSegment) to its row, under the form's sequencer lock (taken here
   * until the transaction ends), and makes it readable: its newer responses were folded in
   * meanwhile, so each is counted once. False when the row is gone (dropped by a delete, an edit,
   * a recount or the cap, or out of step): the caller begins again. True, adding nothing, when
   * another summary finished it first.
   */
  async finishSegment(tx: EntityManager, formId: string, build: SegmentBuild, scan: SegmentScan): Promise<boolean> {
    if (!(await this.lockSequencer(tx, formId))) return false;
    const [kept] = await tx.query(
      `SELECT g.scan_seq FROM response_segments g JOIN response_counters c ON c.form_id = g.form_id AND ${segmentInStep('g', 'c')}
        WHERE g.id = $1`,
      [build.id],
    );
    if (!kept) return false;
    if (kept.scan_seq === null) return true;
    const { row } = scan;
    await tx.query(
      `UPDATE response_segments SET total = total + $2, recorded = recorded + $3, first_at = LEAST(first_at, $4::timestamptz),
              last_at = GREATEST(last_at, $5::timestamptz), form_total = form_total + ${MAKING_TOTAL_OFFSET}, scan_seq = NULL
        WHERE id = $1`,
      [build.id, row.total ?? 0, row.recorded ?? 0, row.first, row.last],
    );
    const ranges = new Map([...row.numeric, ...row.dates].map((r) => [r.blockId, r]));
    const dates = new Set(row.dates.map((r) => r.blockId));
    // What the fold added is newer than the scan: its latest texts come first.
    await tx.query(
      `INSERT INTO segment_block_stats AS t (segment_id, block_id, answered, sum, shown, min_num, max_num, min_text, max_text, latest)
       SELECT $1, x.block_id, x.answered, x.sum, x.shown, x.min_num, x.max_num, x.min_text, x.max_text, COALESCE(x.latest, '[]')
         FROM json_to_recordset($2::json) AS x(block_id text, answered bigint, sum float8, shown bigint,
                                              min_num float8, max_num float8, min_text text, max_text text, latest jsonb)
       ON CONFLICT (segment_id, block_id) DO UPDATE
         SET answered = t.answered + EXCLUDED.answered, sum = t.sum + EXCLUDED.sum, shown = t.shown + EXCLUDED.shown,
             min_num = LEAST(t.min_num, EXCLUDED.min_num), max_num = GREATEST(t.max_num, EXCLUDED.max_num),
             min_text = LEAST(t.min_text, EXCLUDED.min_text), max_text = GREATEST(t.max_text, EXCLUDED.max_text),
             latest = jsonb_path_query_array(t.latest || EXCLUDED.latest, '$[0 to ${LATEST_TEXTS - 1}]')`,
      [
        build.id,
        JSON.stringify(
          row.stats.map((s) => {
            const range = ranges.get(s.blockId);
            const [min, max] = range ? [range.min, range.max] : [null, null];
            return {
              ...{
                block_id: s.blockId,
                answered: s.answered,
                sum: s.sum,
                shown: s.shown,
                latest: scan.latest.get(s.blockId),
              },
              ...(dates.has(s.blockId) ? { min_text: min, max_text: max } : { min_num: min, max_num: max }),
            };
          }),
        ),
      ],
    );
    await tx.query(
      `INSERT INTO segment_answer_counts AS t (segment_id, block_id, value, count)
       SELECT $1, x.block_id, x.value, x.count FROM json_to_recordset($2::json) AS x(block_id text, value text, count bigint) WHERE x.count > 0
       ON CONFLICT (segment_id, block_id, value) DO UPDATE SET count = t.count + EXCLUDED.count`,
      [build.id, JSON.stringify(row.counts.map((c) => ({ block_id: c.blockId, value: c.value, count: c.count })))],
    );
    return true;
  }

  /**
   * Takes the form's row (KEY SHARE, which submissions' share locks allow) and then its sequencer
   * lock, both until the transaction ends, waiting for either as needed. Returns false for a form
   * that is gone. With `waitMs`, each wait lasts at most that long (or the session's lock timeout,
   * if shorter), for the rest of the transaction, then fails with 55P03 (lock_not_available).
   */
  async lockSequencer(tx: EntityManager, formId: string, waitMs?: number): Promise<boolean> {
    if (waitMs !== undefined)
      await tx.query(
        `SELECT set_config('lock_timeout', CASE WHEN current_setting('lock_timeout') <> '0'
                AND current_setting('lock_timeout')::interval < $1::int * interval '1 ms' THEN current_setting('lock_timeout')
                ELSE $1::int::text END, true)`,
        [Math.floor(waitMs)],
      );
    const rows: unknown[] = await tx.query(
      `SELECT pg_advisory_xact_lock(${SEQUENCER_KEY}) FROM (SELECT id FROM forms WHERE id = $1 FOR KEY SHARE) f`,
      [formId],
    );
    return rows.length > 0;
  }

  /**
   * The background's claim: forms with unsequenced responses whose row and sequencer lock it could
   * take at once (a form being edited, or sequenced by another instance, is left for a later pass).
   * The locks last until the transaction ends.
   */
  async claimWaitingForms(tx: EntityManager, max: number): Promise<string[]> {
    const rows: Array<{ id: string }> = await tx.query(
      `SELECT f.id FROM (
         SELECT id FROM forms WHERE id IN (SELECT DISTINCT form_id FROM responses WHERE seq IS NULL LIMIT $1)
            FOR KEY SHARE OF forms SKIP LOCKED) f
        WHERE pg_try_advisory_xact_lock(${SEQUENCER_KEY})`,
      [max],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Gives the committed unsequenced responses of these forms their seq and folds them into every
   * aggregate, in one statement for all the forms (SEQUENCE_BATCH responses per form at most; it
   * repeats until none is left); returns how many. The caller holds the forms' sequencer locks
   * (lockSequencer, claimWaitingForms), and each statement runs after they were taken, so it sees
   * every earlier sequencing. submittedAt is raised where needed so that it never goes backwards in
   * seq order (a response that committed after a later one was sequenced): ordering by seq is
   * ordering by submittedAt.
   */
  async sequenceResponses(tx: EntityManager, formIds: string[]): Promise<number> {
    let total = 0;
    let forms = formIds;
    while (forms.length) {
      const rows: Array<{ form_id: string; n: number }> = await tx.query(SEQUENCE_SQL, [forms, SEQUENCE_BATCH]);
      total += rows.reduce((sum, r) => sum + r.n, 0);
      forms = rows.filter((r) => r.n >= SEQUENCE_BATCH).map((r) => r.form_id);
    }
    return total;
  }

  /**
   * Deletes one response and takes it out of every aggregate, if it was counted (an unsequenced one
   * was not yet). The caller holds the form's row lock. Returns false when there was none.
   */
  async deleteResponse(tx: EntityManager, formId: string, responseId: string): Promise<boolean> {
    await this.lockSequencer(tx, formId);
    const [gone] = await tx.query(
      `WITH d AS (DELETE FROM responses WHERE form_id = $1 AND id = $2 RETURNING seq, answers, shown, hidden, submitted_at, started_at, variables, ending),
            c AS (UPDATE response_counters SET total = total - 1, recorded = recorded - (SELECT count(shown) FROM d), hidden_total = hidden_total - 1
                   WHERE form_id = $1 AND EXISTS (SELECT 1 FROM d WHERE seq IS NOT NULL)),
            b AS (UPDATE response_buckets SET count = count - 1 WHERE form_id = $1 AND bucket = (SELECT seq >> ${BUCKET_BITS} FROM d))
       SELECT seq, answers, shown, hidden, submitted_at AS "submittedAt", started_at AS "startedAt", variables, ending FROM d`,
      [formId, responseId],
    );
    if (!gone) return false;
    if (gone.seq === null) return true;
    // The segments it was in go (the next summary of one makes it again); the others saw the delete.
    await tx.query(
      `WITH x AS (SELECT $2::jsonb AS answers, $3::jsonb AS hidden),
            d AS (DELETE FROM response_segments g USING x WHERE g.form_id = $1 AND ${segmentMatch('x', 'g.kind', 'g.match')})
       UPDATE response_segments g SET form_total = g.form_total - 1 FROM x
        WHERE g.form_id = $1 AND NOT ${segmentMatch('x', 'g.kind', 'g.match')}`,
      [formId, JSON.stringify(gone.answers ?? {}), JSON.stringify(gone.hidden ?? {})],
    );
    const self = `(SELECT $2::jsonb AS answers, $3::timestamptz AS submitted_at, $4::timestamptz AS started_at, $5::jsonb AS variables, $6::text AS ending) s`;
    await tx.query(
      `WITH ac AS (
         UPDATE answer_counts a SET count = a.count - v.n
           FROM (SELECT block_id, value, count(*) AS n FROM (${valuesOf(self, '$1')} UNION ALL ${timesOf(self)} UNION ALL ${computedOf(self)}) x
                  GROUP BY block_id, value) v
          WHERE a.form_id = $1 AND a.block_id = v.block_id AND a.value = v.value)
       UPDATE block_stats s SET answered = s.answered - 1, sum = s.sum - a.num
         FROM (${answeredOf(self, '$1')}) a
        WHERE s.form_id = $1 AND s.block_id = a.block_id`,
      [
        formId,
        JSON.stringify(gone.answers),
        gone.submittedAt,
        gone.startedAt,
        JSON.stringify(gone.variables),
        gone.ending,
      ],
    );
    if (Array.isArray(gone.shown))
      await tx.query(
        `UPDATE block_stats SET shown = shown - 1 WHERE form_id = $1 AND block_id IN (SELECT jsonb_array_elements_text($2::jsonb))`,
        [formId, JSON.stringify(gone.shown)],
      );
    await tx.query('DELETE FROM answer_counts WHERE form_id = $1 AND count <= 0', [formId]);
    await tx.query('DELETE FROM response_buckets WHERE form_id = $1 AND count <= 0', [formId]);
    if (gone.hidden && Object.keys(gone.hidden).length)
      // Its values' counts, each row either gone (its last response) or one less: no scan of the form's counts.
      await tx.query(
        `WITH v AS (${hiddenOf('(SELECT $2::jsonb AS hidden) s')}),
              d AS (DELETE FROM hidden_counts h USING v WHERE h.form_id = $1 AND h.name = v.name AND h.digest = v.digest AND h.count <= 1)
         UPDATE hidden_counts h SET count = h.count - 1 FROM v
          WHERE h.form_id = $1 AND h.name = v.name AND h.digest = v.digest AND h.count > 1`,
        [formId, JSON.stringify(gone.hidden)],
      );
    // A deleted response among a block's latest texts: refill that list from the index.
    await tx.query(
      `UPDATE block_stats s SET latest = ${latestFor('s.block_id')}
        WHERE s.form_id = $1 AND s.latest @> jsonb_build_array(jsonb_build_object('responseId', $2::text))`,
      [formId, responseId],
    );
    return true;
  }

  /**
   * Sequences a form's waiting responses, then rebuilds every aggregate from its responses: after a
   * bulk load by SQL, and as the reference a test compares them with.
   */
  async recomputeResponseStats(tx: EntityManager, formId: string): Promise<void> {
    // Statements over every response of the form: as long as the form is big.
    await allowLongStatements(tx);
    await this.lockSequencer(tx, formId);
    await this.sequenceResponses(tx, [formId]);
    await tx.query('DELETE FROM answer_counts WHERE form_id = $1', [formId]);
    await tx.query('DELETE FROM block_stats WHERE form_id = $1', [formId]);
    await tx.query('DELETE FROM response_buckets WHERE form_id = $1', [formId]);
    await tx.query('DELETE FROM hidden_counts WHERE form_id = $1', [formId]);
    await this.dropSegments(tx, formId); // made again when next summarized
    // Only the sequenced responses: others may commit meanwhile, and will be folded in when sequenced.
    const all = `(SELECT answers, submitted_at, started_at, variables, ending FROM responses WHERE form_id = $1 AND seq IS NOT NULL) s`;
    await tx.query(
      `INSERT INTO answer_counts (form_id, block_id, value, num, count)
       SELECT $1, block_id, value, num, count(*) FROM (${valuesOf(all, '$1')} UNION ALL ${timesOf(all)} UNION ALL ${computedOf(all)}) v GROUP BY block_id, value, num`,
      [formId],
    );
    await tx.query(
      `INSERT INTO block_stats (form_id, block_id, answered, sum, latest)
       SELECT $1, a.block_id, count(*), sum(a.num), CASE WHEN a.type IN ${TEXT} THEN ${latestFor('a.block_id')} ELSE '[]'::jsonb END
         FROM (${answeredOf(all, '$1')}) a GROUP BY a.block_id, a.type`,
      [formId],
    );
    await this.recountShown(tx, formId);
    await tx.query(
      `INSERT INTO hidden_counts (form_id, name, digest, count)
       SELECT $1, name, digest, count(*) FROM (${hiddenOf(`(SELECT hidden FROM responses WHERE form_id = $1 AND seq IS NOT NULL AND hidden <> '{}') s`)}) h
        GROUP BY name, digest`,
      [formId],
    );
    await tx.query(
      `INSERT INTO response_buckets (form_id, bucket, count)
       SELECT form_id, seq >> ${BUCKET_BITS}, count(*) FROM responses WHERE form_id = $1::uuid AND seq IS NOT NULL GROUP BY 1, 2`,
      [formId],
    );
    await tx.query(
      `UPDATE response_counters SET total = (SELECT count(seq) FROM responses WHERE form_id = $1),
              recorded = (SELECT count(*) FROM responses WHERE form_id = $1 AND seq IS NOT NULL AND shown IS NOT NULL),
              last_seq = GREATEST(last_seq, COALESCE((SELECT max(seq) FROM responses WHERE form_id = $1), 0))
        WHERE form_id = $1`,
      [formId],
    );
    // hidden_counts now counts exactly these responses (see HiddenCountEntity).
    await tx.query(`UPDATE response_counters SET hidden_total = total, hidden_seq = last_seq WHERE form_id = $1`, [
      formId,
    ]);
  }

  /** Drops every segment of the form (see readSegmentSummary), with their aggregates. */
  private async dropSegments(tx: EntityManager, formId: string): Promise<void> {
    await tx.query('DELETE FROM response_segments WHERE form_id = $1', [formId]);
  }

  /** Recounts the shown counts of a form's blocks (of one block, with `blockId`) from the counted responses' recorded paths. */
  private async recountShown(tx: EntityManager, formId: string, blockId?: string): Promise<void> {
    const all = `(SELECT shown FROM responses WHERE form_id = $1 AND seq IS NOT NULL AND shown IS NOT NULL${blockId ? ' AND shown ? $2' : ''}) s`;
    await tx.query(
      `INSERT INTO block_stats (form_id, block_id, shown)
       SELECT $1, block_id, shown FROM (${shownOf(all, '$1')}) x ${blockId ? 'WHERE block_id = $2' : ''}
       ON CONFLICT (form_id, block_id) DO UPDATE SET shown = EXCLUDED.shown`,
      blockId ? [formId, blockId] : [formId],
    );
  }

  /**
   * Takes a removed variable, or a removed ending's ref, out of the counts of what responses
   * computed (issue 46), with the form's sequencer lock and its waiting responses sequenced first,
   * as discardAnswers does: the caller then removes it from the responses (ResponsesRepository.discardOutcome).
   */
  async discardOutcome(
    tx: EntityManager,
    formId: string,
    kind: 'variable_removed' | 'ending_removed',
    name: string,
  ): Promise<void> {
    await allowLongStatements(tx);
    await this.lockSequencer(tx, formId);
    await this.sequenceResponses(tx, [formId]);
    await tx.query(
      kind === 'ending_removed'
        ? 'DELETE FROM answer_counts WHERE form_id = $1 AND block_id = $2 AND value = $3'
        : 'DELETE FROM answer_counts WHERE form_id = $1 AND block_id = $2',
      kind === 'ending_removed' ? [formId, ENDING_KEY, name] : [formId, variableKey(name)],
    );
  }

  /**
   * Removes discarded answers from the responses and takes exactly them out of the aggregates
   * (no recount): a block's statistics go with it; a choice takes its count with it, and the
   * responses it leaves without an answer to that block stop counting as answered. The caller
   * holds the form row for update, so no submission commits meanwhile; the waiting ones are
   * sequenced first, so that every response is counted when its answers change.
   */
  async discardAnswers(tx: EntityManager, formId: string, loss: DiscardedAnswers): Promise<void> {
    // Statements over every response of the form: as long as the form is big.
    await allowLongStatements(tx);
    await this.lockSequencer(tx, formId);
    await this.sequenceResponses(tx, [formId]);
    await this.dropSegments(tx, formId); // made again when next summarized
    const { blockId, choiceId } = loss;
    if (loss.matrix) {
      // The row's key, or the column in every row (a row left with none goes; a matrix left with no row too).
      const keep = loss.matrix === 'row' ? 'e.k <> $3' : `e.v <> to_jsonb($3::text) AND e.v <> '[]'::jsonb`;
      await tx.query(
        `UPDATE responses SET answers = (
           SELECT CASE WHEN o IS NULL THEN answers - $2 ELSE jsonb_set(answers, ARRAY[$2], o) END
             FROM (SELECT jsonb_object_agg(e.k, e.v) AS o
                     FROM (SELECT m.key AS k, CASE WHEN jsonb_typeof(m.value) = 'array' THEN m.value - $3 ELSE m.value END AS v
                             FROM jsonb_each(answers -> $2) m) e
                    WHERE ${keep}) x)
          WHERE form_id = $1 AND jsonb_typeof(answers -> $2) = 'object'`,
        [formId, blockId, choiceId],
      );
      await this.recomputeResponseStats(tx, formId);
      return;
    }
    if (loss.kind !== 'choice_removed') {
      await tx.query('UPDATE responses SET answers = answers - $2 WHERE form_id = $1 AND answers ? $2', [
        formId,
        blockId,
      ]);
      await tx.query('DELETE FROM block_stats WHERE form_id = $1 AND block_id = $2', [formId, blockId]);
      await tx.query('DELETE FROM answer_counts WHERE form_id = $1 AND block_id = $2', [formId, blockId]);
      // A retyped block stays on the paths that showed it: its shown count stays too.
      if (loss.kind === 'block_retyped') await this.recountShown(tx, formId, blockId);
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
    await tx.query('UPDATE block_stats SET answered = answered - $3 WHERE form_id = $1 AND block_id = $2', [
      formId,
      blockId,
      emptied,
    ]);
    await tx.query('DELETE FROM answer_counts WHERE form_id = $1 AND block_id = $2 AND value = $3', [
      formId,
      blockId,
      choiceId,
    ]);
    if (loss.ranked) await this.recomputeResponseStats(tx, formId);
  }
}

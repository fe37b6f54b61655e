import { Block, NUMERIC_TYPES, scaleBounds, SCALE_TYPES, takesAnswer, TEXT_TYPES } from '../forms/blocks';
import { hasLogic } from '../forms/form-logic';

/** How many of the latest answers a text block's summary shows. */
export const LATEST_TEXTS = 5;

export interface BlockSummary {
  blockId: string;
  type: string;
  title: string;
  answered: number;
  /** On forms with rules (or responses with a recorded path): how many responses were shown the block. */
  shown?: number;
  skipped: number;
  /** A ranking's choices add how often each was first and its mean place (1 is best; null: never ranked). */
  choices?: Array<{
    id: string;
    label: string;
    count: number;
    share: number;
    first?: number;
    meanRank?: number | null;
  }>;
  /** A matrix: each row's columns, how many picked each (share: of the responses that answered the matrix). */
  rows?: Array<{
    id: string;
    label: string;
    columns: Array<{ id: string; label: string; count: number; share: number }>;
  }>;
  yes?: number;
  no?: number;
  min?: number | string | null;
  max?: number | string | null;
  mean?: number | null;
  /** Rating and linear scale: how many answers gave each value of the scale, lowest first. */
  distribution?: Array<{ value: number; count: number }>;
  /** NPS only: % promoters (9-10) minus % detractors (0-6), -100 to 100 (null without answers), and the three groups. */
  nps?: number | null;
  promoters?: number;
  passives?: number;
  detractors?: number;
  latest?: Array<{ value: string; submittedAt: string }>;
}

export interface FormSummary {
  total: number;
  firstSubmittedAt: string | null;
  lastSubmittedAt: string | null;
  /** Issue 45: the median of the times to complete (see completionBucket), null when none started as a partial. */
  medianSecondsToComplete: number | null;
  blocks: BlockSummary[];
  /** On forms that compute (issue 46): number variables as number blocks are summarised, text variables as text blocks. */
  variables?: VariableSummary[];
  /** On forms with endings: how many responses reached each. */
  endings?: Array<{ ref: string; title: string; count: number }>;
}

export interface VariableSummary {
  name: string;
  type: 'number' | 'text';
  /** Responses holding it (a text variable: not empty). */
  answered: number;
  min?: number | null;
  max?: number | null;
  mean?: number | null;
  /** A number variable with at most MAX_COMPUTED_VALUES values: the responses per value, lowest first. */
  distribution?: Array<{ value: number; count: number }>;
  latest?: Array<{ value: string; submittedAt: string }>;
}

/** What the responses computed, per variable and ending, as ResponseStatsRepository.readComputed reads it. */
export interface ComputedSource {
  /** By key (variableKey(name), ENDING_KEY). */
  rows: Map<
    string,
    {
      answered: number;
      sum: number | null;
      min: number | null;
      max: number | null;
      values: Array<{ value: string; count: number }> | null;
    }
  >;
  /** The latest values of each text variable, newest first. */
  latest(name: string): Array<{ value: string; submittedAt: string }>;
}

/** The summary of a form's variables and endings (issue 46) from what readComputed reads. */
export function summarizeComputed(
  variables: Array<{ name: string; type: 'number' | 'text' }>,
  endings: Array<{ ref: string; title: string }>,
  src: ComputedSource,
  keys: { variable: (name: string) => string; ending: string },
): Pick<FormSummary, 'variables' | 'endings'> {
  const reached = new Map((src.rows.get(keys.ending)?.values ?? []).map((v) => [v.value, Number(v.count)]));
  return {
    variables: variables.map((v) => {
      const row = src.rows.get(keys.variable(v.name));
      const answered = Number(row?.answered ?? 0);
      if (v.type === 'text') return { name: v.name, type: v.type, answered, latest: src.latest(v.name) };
      return {
        name: v.name,
        type: v.type,
        answered,
        min: row?.min ?? null,
        max: row?.max ?? null,
        mean: answered ? round(Number(row?.sum ?? 0) / answered) : null,
        ...(row?.values
          ? { distribution: row.values.map((x) => ({ value: Number(x.value), count: Number(x.count) })) }
          : {}),
      };
    }),
    ...(endings.length
      ? { endings: endings.map((e) => ({ ref: e.ref, title: e.title, count: reached.get(e.ref) ?? 0 })) }
      : {}),
  };
}

export interface StoredResponse {
  submittedAt: Date;
  answers: Record<string, unknown>;
  /** The blocks its path showed; none recorded (null, absent): every block. */
  shown?: string[] | null;
  /** When it started as a partial (null, absent: it did not). */
  startedAt?: Date | null;
}

/**
 * The bucket the kept histogram counts a time to complete in (ResponseStatsRepository's
 * SECONDS_BUCKET): whole seconds under 10 minutes, 10 s under an hour, a minute under a day, an hour beyond.
 */
export function completionBucket(seconds: number): number {
  const s = Math.max(0, seconds);
  const step = s < 600 ? 1 : s < 3600 ? 10 : s < 86400 ? 60 : 3600;
  return Math.floor(s / step) * step;
}

/** What a summary is made from: maintained stats (the service) or a recount (the reference below). */
export interface SummarySource {
  total: number;
  first: Date | null;
  last: Date | null;
  /** The median time to complete (seconds, bucketed: completionBucket); absent: null. */
  medianSeconds?: number | null;
  answered(blockId: string): number;
  /** How many responses were shown the block; absent on forms without rules (every response saw every block). */
  shown?: (blockId: string) => number;
  sum(blockId: string): number;
  /** Answers holding this value: a choice id, "true"/"false", ... */
  count(blockId: string, value: string): number;
  range(blockId: string): { min: number | string | null; max: number | string | null };
  /** Latest text answers, newest first. */
  latest(blockId: string): Array<{ value: string; submittedAt: string }>;
}

/** The summary of every answerable block, in the form's order. */
export function summaryFromStats(blocks: Block[], src: SummarySource): FormSummary {
  return {
    total: src.total,
    firstSubmittedAt: src.first ? new Date(src.first).toISOString() : null,
    lastSubmittedAt: src.last ? new Date(src.last).toISOString() : null,
    medianSecondsToComplete: src.medianSeconds ?? null,
    blocks: blocks
      .filter((b) => takesAnswer(b.type))
      .map((b) => {
        const answered = src.answered(b.id);
        const shown = src.shown?.(b.id);
        const s: BlockSummary = {
          blockId: b.id,
          type: b.type,
          title: b.title,
          answered,
          ...(shown === undefined ? {} : { shown }),
          skipped: Math.max(0, (shown ?? src.total) - answered),
        };
        if (b.type === 'ranking') {
          s.choices = rankedChoices(b, src, answered);
        } else if (b.type === 'matrix') {
          s.rows = (b.rows ?? []).map((r) => ({
            id: r.id,
            label: r.label,
            columns: (b.columns ?? []).map((c) => {
              const count = src.count(b.id, matrixValue(r.id, c.id));
              return { id: c.id, label: c.label, count, share: answered ? round(count / answered) : 0 };
            }),
          }));
        } else if (b.choices) {
          s.choices = b.choices.map((c) => {
            const count = src.count(b.id, c.id);
            return { id: c.id, label: c.label, count, share: answered ? round(count / answered) : 0 };
          });
        } else if (b.type === 'yes_no') {
          s.yes = src.count(b.id, 'true');
          s.no = src.count(b.id, 'false');
        } else if (NUMERIC_TYPES.includes(b.type)) {
          const { min, max } = src.range(b.id);
          s.min = min === null ? null : Number(min);
          s.max = max === null ? null : Number(max);
          s.mean = answered ? round(src.sum(b.id) / answered) : null;
          if (b.type !== 'number')
            s.distribution = scaleOf(b).map((value) => ({ value, count: src.count(b.id, String(value)) }));
          if (b.type === 'nps') Object.assign(s, npsOf(s.distribution!, answered));
        } else if (b.type === 'date') {
          Object.assign(s, src.range(b.id));
        } else if (TEXT_TYPES.includes(b.type)) {
          s.latest = src
            .latest(b.id)
            .slice(0, LATEST_TEXTS)
            .map((l) => ({ value: l.value, submittedAt: new Date(l.submittedAt).toISOString() }));
        }
        return s;
      }),
  };
}

/**
 * The reference summary, recounted from the responses themselves. The maintained aggregates must
 * always equal it; tests compare the two. Responses are taken oldest first (a stable sort, so ties
 * keep the order given: pass them in seq order).
 */
export function summarize(blocks: Block[], responses: Iterable<StoredResponse>): FormSummary {
  const list = [...responses].sort((a, b) => a.submittedAt.getTime() - b.submittedAt.getTime());
  const values = (id: string) => list.map((r) => r.answers[id]).filter((v) => v !== undefined && v !== null);
  const recorded = list.some((r) => Array.isArray(r.shown));
  const ranked = new Set(blocks.filter((b) => b.type === 'ranking').map((b) => b.id));
  const matrices = new Set(blocks.filter((b) => b.type === 'matrix').map((b) => b.id));
  return summaryFromStats(blocks, {
    total: list.length,
    shown:
      hasLogic(blocks) || recorded
        ? (id) => list.filter((r) => !Array.isArray(r.shown) || r.shown.includes(id)).length
        : undefined,
    first: list.length ? list[0].submittedAt : null,
    last: list.length ? list[list.length - 1].submittedAt : null,
    medianSeconds: lowerMedian(
      list
        .filter((r) => r.startedAt)
        .map((r) => completionBucket((r.submittedAt.getTime() - r.startedAt!.getTime()) / 1000)),
    ),
    answered: (id) => values(id).length,
    sum: (id) => values(id).reduce((acc: number, v) => acc + (typeof v === 'number' ? v : 0), 0),
    count: (id, value) =>
      values(id).reduce(
        (acc: number, v) =>
          acc +
          (matrices.has(id)
            ? matrixValues(v).filter((x) => x === value).length
            : ranked.has(id) && Array.isArray(v)
              ? v.filter((x, i) => rankedValue(String(x), i + 1) === value).length
              : Array.isArray(v)
                ? v.filter((x) => String(x) === value).length
                : String(v) === value
                  ? 1
                  : 0),
        0,
      ),
    range: (id) => {
      const vs = values(id) as Array<number | string>;
      if (vs.length === 0) return { min: null, max: null };
      return { min: vs.reduce((a, b) => (b < a ? b : a)), max: vs.reduce((a, b) => (b > a ? b : a)) };
    },
    latest: (id) =>
      list
        .filter((r) => typeof r.answers[id] === 'string')
        .slice(-LATEST_TEXTS)
        .reverse()
        .map((r) => ({ value: r.answers[id] as string, submittedAt: r.submittedAt.toISOString() })),
  });
}

/** The value at position ceil(n / 2) in order (percentile_disc(0.5)); null for none. */
function lowerMedian(values: number[]): number | null {
  if (!values.length) return null;
  return [...values].sort((a, b) => a - b)[Math.ceil(values.length / 2) - 1];
}

/** The values of a rating (1..max) or linear scale (min..max) block. */
/**
 * The values of a block whose answers a summary counts, as summaryFromStats asks for them (choice
 * ids, true/false, the scale's values); none for the other blocks.
 */
export function countedValues(b: Block): string[] {
  if (b.type === 'ranking') return rankedValues(b);
  if (b.type === 'matrix') return (b.rows ?? []).flatMap((r) => (b.columns ?? []).map((c) => matrixValue(r.id, c.id)));
  if (b.choices) return b.choices.map((c) => c.id);
  if (b.type === 'yes_no') return ['true', 'false'];
  if (SCALE_TYPES.includes(b.type)) return scaleOf(b).map(String);
  return [];
}

function scaleOf(b: Block): number[] {
  const { min: lo, max: hi } = scaleBounds(b);
  return Array.from({ length: Math.max(0, hi - lo + 1) }, (_, i) => lo + i);
}

/** The Net Promoter Score of an NPS block's distribution: promoters answer 9-10, passives 7-8, detractors 0-6. */
function npsOf(
  distribution: Array<{ value: number; count: number }>,
  answered: number,
): Pick<BlockSummary, 'nps' | 'promoters' | 'passives' | 'detractors'> {
  const among = (lo: number, hi: number) =>
    distribution.filter((d) => d.value >= lo && d.value <= hi).reduce((n, d) => n + d.count, 0);
  const promoters = among(9, 10);
  const detractors = among(0, 6);
  const nps = answered ? Math.round(((promoters - detractors) / answered) * 1000) / 10 : null;
  return { nps, promoters, passives: among(7, 8), detractors };
}

/** How the counts name a column picked in a row of a matrix: "<row id>:<column id>", as the stats' SQL makes it. */
export const matrixValue = (rowId: string, columnId: string) => `${rowId}:${columnId}`;

/** A stored matrix answer's counted values. */
function matrixValues(v: unknown): string[] {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return [];
  return Object.entries(v as Record<string, unknown>).flatMap(([row, cols]) =>
    (Array.isArray(cols) ? cols : typeof cols === 'string' ? [cols] : []).map((c) => matrixValue(row, String(c))),
  );
}

/** How the counts name a choice ranked at a place (1 is best): "<choice id>:<place>", as the stats' SQL makes it. */
export const rankedValue = (choiceId: string, place: number) => `${choiceId}:${place}`;

function rankedValues(b: Block): string[] {
  const places = b.rankTop ?? b.choices?.length ?? 0;
  return (b.choices ?? []).flatMap((c) => Array.from({ length: places }, (_, i) => rankedValue(c.id, i + 1)));
}

/** A ranking's choices: how many ranked each, how often it was first, and its mean place. */
function rankedChoices(b: Block, src: SummarySource, answered: number): NonNullable<BlockSummary['choices']> {
  const places = b.rankTop ?? b.choices?.length ?? 0;
  return (b.choices ?? []).map((c) => {
    const at = Array.from({ length: places }, (_, i) => src.count(b.id, rankedValue(c.id, i + 1)));
    const count = at.reduce((n, x) => n + x, 0);
    const sum = at.reduce((n, x, i) => n + x * (i + 1), 0);
    return {
      id: c.id,
      label: c.label,
      count,
      share: answered ? round(count / answered) : 0,
      first: at[0] ?? 0,
      meanRank: count ? round(sum / count) : null,
    };
  });
}

function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}

import { Block, NUMERIC_TYPES, TEXT_TYPES } from '../forms/blocks';

/** How many of the latest answers a text block's summary shows. */
export const LATEST_TEXTS = 5;

export interface BlockSummary {
  blockId: string;
  type: string;
  title: string;
  answered: number;
  skipped: number;
  choices?: Array<{ id: string; label: string; count: number; share: number }>;
  yes?: number;
  no?: number;
  min?: number | string | null;
  max?: number | string | null;
  mean?: number | null;
  latest?: Array<{ value: string; submittedAt: string }>;
}

export interface FormSummary {
  total: number;
  firstSubmittedAt: string | null;
  lastSubmittedAt: string | null;
  blocks: BlockSummary[];
}

export interface StoredResponse {
  submittedAt: Date;
  answers: Record<string, unknown>;
}

/**
 * Aggregates per block from the responses themselves: the reference definition of a summary
 * (what maintained aggregates must equal).
 */
export function summarize(blocks: Block[], responses: Iterable<StoredResponse>): FormSummary {
  const answerable = blocks.filter((b) => b.type !== 'statement');
  const acc = answerable.map((b) => ({
    block: b,
    answered: 0,
    counts: new Map<string, number>(),
    sum: 0,
    min: undefined as number | string | undefined,
    max: undefined as number | string | undefined,
    latest: [] as Array<{ value: string; at: Date }>,
  }));
  let total = 0;
  let first: Date | null = null;
  let last: Date | null = null;
  for (const r of responses) {
    total += 1;
    if (!first || r.submittedAt < first) first = r.submittedAt;
    if (!last || r.submittedAt > last) last = r.submittedAt;
    for (const a of acc) {
      const value = r.answers[a.block.id];
      if (value === undefined || value === null) continue;
      a.answered += 1;
      const type = a.block.type;
      if (type === 'checkboxes' && Array.isArray(value)) for (const id of value) a.counts.set(String(id), (a.counts.get(String(id)) ?? 0) + 1);
      else if (type === 'multiple_choice' || type === 'dropdown') a.counts.set(String(value), (a.counts.get(String(value)) ?? 0) + 1);
      else if (type === 'yes_no') a.counts.set(String(value), (a.counts.get(String(value)) ?? 0) + 1);
      else if (NUMERIC_TYPES.includes(type) && typeof value === 'number') {
        a.sum += value;
        if (a.min === undefined || value < (a.min as number)) a.min = value;
        if (a.max === undefined || value > (a.max as number)) a.max = value;
      } else if (type === 'date' && typeof value === 'string') {
        if (a.min === undefined || value < (a.min as string)) a.min = value;
        if (a.max === undefined || value > (a.max as string)) a.max = value;
      } else if (TEXT_TYPES.includes(type) && typeof value === 'string') {
        a.latest.push({ value, at: r.submittedAt });
        a.latest.sort((x, y) => y.at.getTime() - x.at.getTime());
        if (a.latest.length > LATEST_TEXTS) a.latest.length = LATEST_TEXTS;
      }
    }
  }
  return {
    total,
    firstSubmittedAt: first?.toISOString() ?? null,
    lastSubmittedAt: last?.toISOString() ?? null,
    blocks: acc.map((a) => {
      const s: BlockSummary = { blockId: a.block.id, type: a.block.type, title: a.block.title, answered: a.answered, skipped: total - a.answered };
      const type = a.block.type;
      if (a.block.choices) {
        s.choices = a.block.choices.map((c) => {
          const count = a.counts.get(c.id) ?? 0;
          return { id: c.id, label: c.label, count, share: a.answered ? round(count / a.answered) : 0 };
        });
      } else if (type === 'yes_no') {
        s.yes = a.counts.get('true') ?? 0;
        s.no = a.counts.get('false') ?? 0;
      } else if (NUMERIC_TYPES.includes(type)) {
        s.min = a.min ?? null;
        s.max = a.max ?? null;
        s.mean = a.answered ? round(a.sum / a.answered) : null;
      } else if (type === 'date') {
        s.min = a.min ?? null;
        s.max = a.max ?? null;
      } else if (TEXT_TYPES.includes(type)) {
        s.latest = a.latest.map((l) => ({ value: l.value, submittedAt: l.at.toISOString() }));
      }
      return s;
    }),
  };
}

function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}

/**
 * The responses page's filter: one block's answer (block, operator, value) and a time range
 * (days, UTC), from the page's GET fields, made into the filter the tools take (a `where` in the
 * condition language, since/until) and passed through the same list and export paths.
 */
import type { Condition } from '../forms/conditions';
import { ApiError } from '../common/errors/api-error';
import type { FormRecord } from '../forms/forms.service';
import type { ResponseFilter } from '../responses/response-filter';
import { text } from '../settings/settings-http';
import type { FieldErrors } from '../settings/ui';

/** The operators the page offers, worded for people, with the value they take. */
export const OPERATORS: Record<string, { label: string; takesValue: boolean }> = {
  equals: { label: 'is', takesValue: true },
  not_equals: { label: 'is not', takesValue: true },
  contains: { label: 'contains', takesValue: true },
  not_contains: { label: 'does not contain', takesValue: true },
  gt: { label: 'is more than', takesValue: true },
  gte: { label: 'is at least', takesValue: true },
  lt: { label: 'is less than', takesValue: true },
  lte: { label: 'is at most', takesValue: true },
  in: { label: 'is one of (comma-separated)', takesValue: true },
  answered: { label: 'is answered', takesValue: false },
  not_answered: { label: 'is not answered', takesValue: false },
};

/** The fields of the filter form, as sent (the page shows them back). */
export interface FilterFields {
  block: string;
  op: string;
  value: string;
  since: string;
  until: string;
}

export const FILTER_FIELDS = ['block', 'op', 'value', 'since', 'until'] as const;

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** The filter fields of a query (missing ones empty). */
export function filterFields(query: Record<string, unknown>): FilterFields {
  const [block, op, value, since, until] = FILTER_FIELDS.map((k) => text(query[k]).slice(0, 500));
  return { block, op: op || 'equals', value, since, until };
}

/** The non-empty fields, to keep in links (paging, the download). */
export function filterQuery(f: FilterFields): Record<string, string> {
  if (!f.block && !f.since && !f.until) return {};
  return Object.fromEntries(FILTER_FIELDS.filter((k) => f[k] && (k !== 'op' || f.block)).map((k) => [k, f[k]]));
}

/** A value typed on the page as the block's type takes it (numbers, yes/no, lists for `in`). */
function valueFor(type: string, op: string, raw: string): unknown {
  if (op === 'in' || (type === 'checkboxes' && (op === 'equals' || op === 'not_equals')))
    return raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map((s) => valueFor(type, 'equals', s));
  if (['number', 'rating', 'linear_scale'].includes(type) && raw !== '' && Number.isFinite(Number(raw)))
    return Number(raw);
  if (type === 'yes_no' && /^(yes|true)$/i.test(raw)) return true;
  if (type === 'yes_no' && /^(no|false)$/i.test(raw)) return false;
  return raw;
}

/** The day after a YYYY-MM-DD (the range's last day is included; `until` is exclusive). */
function nextDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString();
}

/**
 * The filter the fields describe, or the problems with them by field id. Block, operator and
 * value are checked by the tools' own check (checkResponseFilter, through the list path); here
 * only what the page itself adds: days and a known operator.
 */
export function toFilter(form: FormRecord, f: FilterFields): { filter: ResponseFilter; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const filter: ResponseFilter = {};
  if (f.since && !DAY.test(f.since)) errors.since = 'Enter the first day as YYYY-MM-DD.';
  else if (f.since) filter.since = `${f.since}T00:00:00.000Z`;
  if (f.until && !DAY.test(f.until)) errors.until = 'Enter the last day as YYYY-MM-DD.';
  else if (f.until) filter.until = nextDay(f.until);
  if (f.block) {
    const block = form.blocks.find((b) => b.id === f.block);
    const op = OPERATORS[f.op];
    if (!block) errors.block = 'Choose a question of this form.';
    else if (!op) errors.op = 'Choose a condition.';
    else if (op.takesValue && f.value === '') errors.value = 'Enter the value to compare with.';
    else
      filter.where = {
        block: block.id,
        op: f.op,
        ...(op.takesValue ? { value: valueFor(block.type, f.op, f.value) } : {}),
      } as Condition;
  }
  return { filter, errors };
}

/** The problems of a filter the tools' check refused (400 invalid_arguments), by the page's field. */
export function filterErrors(err: unknown): FieldErrors | undefined {
  if (!(err instanceof ApiError) || err.code !== 'invalid_arguments') return undefined;
  const errors: FieldErrors = {};
  for (const d of err.details ?? []) {
    const field = d.path.startsWith('/since')
      ? 'since'
      : d.path.startsWith('/until')
        ? 'until'
        : d.path.endsWith('/op')
          ? 'op'
          : 'value';
    errors[field] ??= `The ${field === 'value' ? 'value' : field} ${d.message}.`;
  }
  if (!Object.keys(errors).length) errors.value = err.message;
  return errors;
}

/**
 * The results pages' filter: one question's answer (a block, or a hidden field) with a condition
 * and a value, and a range of days (UTC), from the page's GET fields (or the Download post), made
 * into the filter the tools take (a `where` in the condition language, since/until) and passed
 * through the same list, summary and export paths. The page checks what it offers itself and says
 * what is wrong in its own words; the tools' check still runs behind it.
 */
import {
  Condition,
  OPERATOR_TABLE,
  OPERATORS as ALL_OPERATORS,
  Operator,
  operatorsOf,
  SUBJECT_KINDS,
  SubjectKind,
} from '../forms/conditions';
import { ApiError } from '../common/errors/api-error';
import type { FormRecord } from '../forms/forms.service';
import type { ResponseFilter } from '../responses/response-filter';
import type { ResponseStatus } from '../responses/responses.service';
import { text } from '../settings/settings-http';
import type { FieldErrors } from '../settings/ui';

/** The Question field names a hidden field as `hidden:<name>` (block ids never start so). */
export const HIDDEN_PREFIX = 'hidden:';

/** The conditions, worded for people. */
const LABELS: Record<Operator, string> = {
  equals: 'is',
  not_equals: 'is not',
  contains: 'contains',
  not_contains: 'does not contain',
  gt: 'is more than',
  gte: 'is at least',
  lt: 'is less than',
  lte: 'is at most',
  in: 'is one of (comma-separated)',
  answered: 'is answered',
  not_answered: 'is not answered',
};

/** Where a kind of question words a condition otherwise. */
const KIND_LABELS: Partial<Record<SubjectKind | 'hidden', Partial<Record<Operator, string>>>> = {
  date: { gt: 'is after', gte: 'is on or after', lt: 'is before', lte: 'is on or before' },
  choices: { contains: 'includes', not_contains: 'does not include' },
  hidden: { answered: 'is given', not_answered: 'is not given' },
};

/**
 * The conditions the page offers per kind: those the condition language takes (OPERATOR_TABLE)
 * that one text field or one select can express. Choices are picked one at a time, so `in` and
 * the exact set of checkboxes are left to the tools. A kind not listed offers all of its own.
 */
export const PAGE_OPERATORS: Partial<Record<SubjectKind, Operator[]>> = {
  text: ['equals', 'not_equals', 'contains', 'not_contains', 'in', 'answered', 'not_answered'],
  number: ['equals', 'not_equals', 'gt', 'gte', 'lt', 'lte', 'in', 'answered', 'not_answered'],
  date: ['equals', 'not_equals', 'gt', 'gte', 'lt', 'lte', 'answered', 'not_answered'],
  choice: ['equals', 'not_equals', 'answered', 'not_answered'],
  choices: ['contains', 'not_contains', 'answered', 'not_answered'],
  boolean: ['equals', 'not_equals', 'answered', 'not_answered'],
  files: ['answered', 'not_answered'],
};

/** Whether a condition compares with a value. */
const takesValue = (op: Operator, kind: SubjectKind) => OPERATOR_TABLE[kind][op] !== 'none';

/** What the Question field may name: a block that takes an answer, or a hidden field (text). */
export interface Question {
  /** Its value in the Question field: the block's id, or `hidden:<name>`. */
  key: string;
  title: string;
  kind: SubjectKind;
  /** A block's id, or a hidden field's name. */
  block?: string;
  hidden?: string;
  /** The choices a select offers, as [value, label]: a block's choice labels, or Yes and No. */
  choices?: Array<[string, string]>;
  /** The conditions it takes, as [operator, label]. */
  ops: Array<[Operator, string]>;
}

const opsOf = (kind: SubjectKind, hidden: boolean): Array<[Operator, string]> =>
  (PAGE_OPERATORS[kind] ?? operatorsOf(kind)).map((op) => [
    op,
    KIND_LABELS[hidden ? 'hidden' : kind]?.[op] ?? LABELS[op],
  ]);

/** Every condition the page offers, for "Any question" (the page script narrows them to a question's). */
export const ANY_OPS: Array<[Operator, string]> = ALL_OPERATORS.filter((op) =>
  Object.values(PAGE_OPERATORS).some((ops) => ops?.includes(op)),
).map((op) => [op, LABELS[op]]);

/** The questions of a form the filter offers, in the form's order, then its hidden fields. */
export function questionsOf(form: FormRecord): Question[] {
  const blocks = form.blocks.flatMap((b): Question[] => {
    const kind = SUBJECT_KINDS[b.type];
    if (!kind) return [];
    const choices: Array<[string, string]> | undefined =
      kind === 'boolean'
        ? [
            ['yes', 'Yes'],
            ['no', 'No'],
          ]
        : kind === 'choice' || kind === 'choices'
          ? (b.choices ?? []).map((c) => [c.label, c.label])
          : undefined;
    return [{ key: b.id, title: b.title, kind, block: b.id, choices, ops: opsOf(kind, false) }];
  });
  const hidden = (form.hiddenFields ?? []).map((h): Question => ({
    key: `${HIDDEN_PREFIX}${h}`,
    title: h,
    kind: 'text',
    hidden: h,
    ops: opsOf('text', true),
  }));
  return [...blocks, ...hidden];
}

/** The fields of the filter form, as sent (the page shows them back). */
export interface FilterFields {
  block: string;
  op: string;
  value: string;
  since: string;
  until: string;
}

export const FILTER_FIELDS = ['block', 'op', 'value', 'since', 'until'] as const;

/** The filter fields of a query (missing ones empty). */
export function filterFields(query: Record<string, unknown>): FilterFields {
  const [block, op, value, since, until] = FILTER_FIELDS.map((k) => text(query[k]).slice(0, 500));
  return { block, op: op || 'equals', value, since, until };
}

/** The non-empty fields, to keep in links (paging, the download, the other tab). */
export function filterQuery(f: FilterFields): Record<string, string> {
  if (!f.block && !f.since && !f.until) return {};
  return Object.fromEntries(FILTER_FIELDS.filter((k) => f[k] && (k !== 'op' || f.block)).map((k) => [k, f[k]]));
}

/** The Responses page's Status field (issue 45): which responses it lists, as list_responses' `status`. */
export const STATUS_LABELS: Record<ResponseStatus, string> = {
  completed: 'Completed',
  partial: 'In progress',
  all: 'Completed and in progress',
};

/**
 * The `status` of a query: completed when absent or empty; anything else that is not a status is
 * refused in the page's words (the page again, 400, the problem beside the field).
 */
export function statusField(query: Record<string, unknown>): { status: ResponseStatus; errors: FieldErrors } {
  const raw = text(query.status).trim();
  if (raw === '') return { status: 'completed', errors: {} };
  if (Object.hasOwn(STATUS_LABELS, raw)) return { status: raw as ResponseStatus, errors: {} };
  return {
    status: 'completed',
    errors: { status: `Choose which responses to show: ${Object.values(STATUS_LABELS).join(', ')}.` },
  };
}

/** The status in links (paging, the other tab, the download): none for the default. */
export const statusQuery = (status: ResponseStatus): Record<string, string> =>
  status === 'completed' ? {} : { status };

/** A YYYY-MM-DD that exists, years 1 to 9999, as its UTC midnight; undefined otherwise. */
function day(s: string): Date | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d); // not Date.UTC, which reads years 0-99 as 1900-1999
  const exists = date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
  return exists && y >= 1 ? date : undefined;
}

/** A choice of a question by its value or label, exactly or else ignoring case. */
export function choiceOf(q: Question, raw: string): string | undefined {
  const wanted = raw.trim();
  const choices = q.choices ?? [];
  return (choices.find(([v]) => v === wanted) ?? choices.find(([v]) => v.toLowerCase() === wanted.toLowerCase()))?.[0];
}

/** One value typed or picked on the page as the question's kind takes it, or the problem in the page's words. */
function valueOf(q: Question, raw: string): { value: string | number | boolean } | { error: string } {
  const s = raw.trim();
  switch (q.kind) {
    case 'number':
      return s !== '' && Number.isFinite(Number(s))
        ? { value: Number(s) }
        : { error: `Enter a number for “${q.title}”.` };
    case 'date':
      return day(s) ? { value: s } : { error: `Enter a day for “${q.title}” as YYYY-MM-DD.` };
    case 'boolean':
      if (/^(yes|true)$/i.test(s)) return { value: true };
      if (/^(no|false)$/i.test(s)) return { value: false };
      return { error: `Choose Yes or No for “${q.title}”.` };
    case 'choice':
    case 'choices': {
      const choice = choiceOf(q, s);
      if (choice !== undefined) return { value: choice };
      const all = (q.choices ?? []).map(([, label]) => label).join(', ');
      return { error: `Choose one of the choices of “${q.title}”: ${all}.` };
    }
    default:
      return { value: raw };
  }
}

/** The value of a condition: one, or a comma-separated list for "is one of". */
function conditionValue(q: Question, op: Operator, raw: string): { value: unknown } | { error: string } {
  if (op !== 'in') return valueOf(q, raw);
  const values = [];
  for (const item of raw.split(',').filter((s) => s.trim())) {
    const v = valueOf(q, q.kind === 'text' ? item.trim() : item);
    if ('error' in v) return v;
    values.push(v.value);
  }
  return values.length ? { value: values } : { error: `Enter the values to compare with, separated by commas.` };
}

const words = (ops: Array<[Operator, string]>) =>
  ops
    .map(([, label]) => label.replace(/ \(.*\)$/, ''))
    .join(', ')
    .replace(/, ([^,]*)$/, ' or $1');

/**
 * The filter the fields describe, or the problems with them by field id, in the page's words:
 * days that exist; a question of this form with a condition it takes; a value of its kind (a
 * choice among its choices, ignoring case); no value without a question.
 */
export function toFilter(form: FormRecord, f: FilterFields): { filter: ResponseFilter; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const filter: ResponseFilter = {};
  const since = f.since ? day(f.since) : undefined;
  const until = f.until ? day(f.until) : undefined;
  if (f.since && !since) errors.since = 'Enter the first day (From) as a date that exists, YYYY-MM-DD.';
  else if (since) filter.since = since.toISOString();
  if (f.until && !until) errors.until = 'Enter the last day (To) as a date that exists, YYYY-MM-DD.';
  else if (since && until && until < since) errors.until = 'The last day (To) is before the first day (From).';
  else if (until && until.getUTCFullYear() < 9999) {
    until.setUTCDate(until.getUTCDate() + 1); // the last day is included; `until` is exclusive
    filter.until = until.toISOString();
  } // (until 9999-12-31 includes every time there is: no bound)
  if (!f.block) {
    if (f.value.trim()) errors.value = 'Choose the question to compare this value with, or leave the value empty.';
    return { filter, errors };
  }
  const q = questionsOf(form).find((x) => x.key === f.block);
  if (!q) {
    errors.block = 'Choose a question of this form.';
    return { filter, errors };
  }
  const op = q.ops.find(([o]) => o === f.op)?.[0];
  if (!op) {
    errors.op = `“${q.title}” takes these conditions: ${words(q.ops)}. Choose one of them.`;
    return { filter, errors };
  }
  const subject = q.hidden !== undefined ? { hidden: q.hidden } : { block: q.block! };
  if (!takesValue(op, q.kind)) filter.where = { ...subject, op } as Condition;
  else if (f.value.trim() === '') errors.value = 'Enter the value to compare with.';
  else {
    const v = conditionValue(q, op, f.value);
    if ('error' in v) errors.value = v.error;
    else filter.where = { ...subject, op, value: v.value } as Condition;
  }
  return { filter, errors };
}

/**
 * The problems of a filter the tools' check refused (400 invalid_arguments), by the page's field,
 * in the page's words (the tools' messages name operators as the API does). The page's own check
 * comes first, so this is a fallback.
 */
export function filterErrors(err: unknown): FieldErrors | undefined {
  if (!(err instanceof ApiError) || err.code !== 'invalid_arguments') return undefined;
  const errors: FieldErrors = {};
  for (const d of err.details ?? []) {
    if (d.path.startsWith('/since')) errors.since = 'Enter a first day (From) between the years 1 and 9999.';
    else if (d.path.startsWith('/until')) errors.until = 'Enter a last day (To) between the years 1 and 9999.';
    else if (d.path.endsWith('/op')) errors.op = 'Choose a condition this question takes.';
    else if (/\/(block|hidden)$/.test(d.path)) errors.block = 'Choose a question of this form.';
    else errors.value = 'Enter a value this question takes.';
  }
  if (!Object.keys(errors).length) errors.value = 'This filter does not fit this form: change it or clear it.';
  return errors;
}

/**
 * Reads under the filter the fields describe (`read`: the tool's path), or says what is wrong with
 * the filter: the page's own check, then the tools' (their 400 as the page's words). Any other
 * failure is thrown.
 */
export async function underFilter<T>(
  form: FormRecord,
  fields: FilterFields,
  read: (filter: ResponseFilter) => Promise<T>,
): Promise<{ found?: T; errors: FieldErrors }> {
  const { filter, errors } = toFilter(form, fields);
  if (Object.keys(errors).length) return { errors };
  try {
    return { found: await read(filter), errors };
  } catch (err) {
    const problems = filterErrors(err);
    if (!problems) throw err;
    return { errors: problems };
  }
}

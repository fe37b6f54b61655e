/**
 * Response filters (issue 26): `where`, a condition in the language of form logic, and `since` /
 * `until` on submittedAt. One definition for every tool that reads responses (list_responses,
 * summarize_responses, export_responses): the arguments they spread into their input, the check
 * that refuses a filter with 400 invalid_arguments at its path, and its SQL over a `responses` row.
 */
import { Type } from '@sinclair/typebox';
import type { EntityManager } from 'typeorm';
import { ApiError, ErrorDetail } from '../common/errors/api-error';
import {
  BlockSubject,
  checkCondition,
  Condition,
  ConditionSchema,
  ENDING_VARIABLE,
  isBlockLeaf,
  isHiddenLeaf,
  MAX_CONDITION_LIST,
  Subjects,
} from '../forms/conditions';
import { conditionSql } from '../forms/conditions/sql';
import type { Block } from '../forms/blocks';
import type { FormCompute } from '../forms/compute';
import { formVariables } from '../forms/form-logic';

/**
 * The most leaves (conditions naming a block or hidden field) one filter may have. Each leaf is
 * evaluated on every row a filtered read scans (a text contains costs some microseconds a row),
 * and binds at most 3 parameters (a list is one array parameter), so this also keeps every
 * filtered statement far below PostgreSQL's 65,535. docs/tools.md has the figures.
 */
export const MAX_FILTER_LEAVES = 20;
/** The most bytes `where` may take as JSON, as sent and as stored (blocks and choices by id). */
export const MAX_FILTER_BYTES = 8 * 1024;

export const WHERE_DESCRIPTION =
  'Only responses for which this condition (on any block of the form) holds; e.g. people who rated 2 or less: { "block": "rating", "op": "lte", "value": 2 }. ' +
  `At most ${MAX_FILTER_LEAVES} conditions and ${MAX_FILTER_BYTES / 1024} KB of JSON. ` +
  'A workspace runs a few filtered reads and export downloads at once (2 by default): more get 429 rate_limited with Retry-After.';

/** The filter arguments, spread into the input schema of every tool that reads responses. */
export const responseFilterArguments = {
  // Typed as a Condition: checkResponseFilter checks what the schema cannot (blocks, operators, values).
  where: Type.Optional(Type.Unsafe<Condition>(ConditionSchema(WHERE_DESCRIPTION))),
  since: Type.Optional(
    Type.String({ format: 'date-time', description: 'Only responses submitted at or after this time (inclusive).' }),
  ),
  until: Type.Optional(
    Type.String({ format: 'date-time', description: 'Only responses submitted before this time (exclusive).' }),
  ),
};

/**
 * A filter as a tool receives it. `where` as sent (blocks by id or ref, choices by label or id)
 * until checkResponseFilter has checked it; as stored (blocks and choices by id) after.
 */
export interface ResponseFilter {
  where?: Condition;
  since?: string;
  until?: string;
}

/** What a filter needs of a form: its blocks (id, type, title, ref, choices) and hidden fields. A FormRecord is one. */
export interface FilterForm {
  blocks: ReadonlyArray<BlockSubject & { ref?: string | null }>;
  hiddenFields?: readonly string[] | null;
  /** Its variables (issue 46): a filter may name them too. */
  compute?: FormCompute | null;
}

/** The widest UTC offset PostgreSQL reads in a timestamp (RFC 3339 allows up to ±23:59; real zones stop at +14:00). */
const MAX_OFFSET_MINUTES = 15 * 60 + 59;

/** A time argument as PostgreSQL can take it (the schema has already checked it is an RFC 3339 date-time). */
function checkTime(name: 'since' | 'until', time: string, details: ErrorDetail[]): void {
  const offset = /[+-](\d{2}):?(\d{2})?$/.exec(time); // +hh:mm, +hhmm or +hh, as the format allows
  if (offset && Number(offset[1]) * 60 + Number(offset[2] ?? 0) > MAX_OFFSET_MINUTES) {
    details.push({ path: `/${name}`, message: 'must have a UTC offset between -15:59 and +15:59' });
    return;
  }
  const year = new Date(time).getUTCFullYear();
  if (!(year >= 1 && year <= 9999))
    details.push({ path: `/${name}`, message: 'must be a date-time between the years 1 and 9999' });
}

/** What a filter may name: any block of the form that takes an answer (by id or ref), and its declared hidden fields. */
export function filterSubjects(form: FilterForm): Subjects {
  const byKey = new Map<string, BlockSubject>();
  for (const b of form.blocks) {
    byKey.set(b.id, b);
    if (b.ref) byKey.set(b.ref, b);
  }
  const hidden = new Set(form.hiddenFields ?? []);
  return {
    block: (key) =>
      byKey.get(key) ?? { error: 'is not the id or ref of a block of this form; get_form shows its blocks' },
    hidden: (name) =>
      hidden.has(name) || {
        error: `is not a hidden field of this form; its hidden fields are ${[...hidden].join(', ') || 'none'}`,
      },
    variable: variableSubjects(form),
  };
}

/**
 * A filter may name any variable of the form (issue 46), and on a form with endings "ending": the
 * ending a response reached (by ref), unless a variable has that name.
 */
function variableSubjects(form: FilterForm): Subjects['variable'] {
  const variables: Array<{ name: string; type: 'number' | 'text'; stored?: string }> = [
    ...formVariables(form as { blocks: Block[]; compute?: FormCompute | null }),
  ];
  if (form.compute?.endings?.length && !variables.some((v) => v.name === 'ending'))
    variables.push(
      { name: 'ending', type: 'text', stored: ENDING_VARIABLE },
      { name: ENDING_VARIABLE, type: 'text' }, // as stored: a checked filter checks again
    );
  const names = variables.filter((v) => v.name !== ENDING_VARIABLE).map((v) => v.name);
  return (name) =>
    variables.find((v) => v.name === name) ?? {
      error: `is not a variable of this form; its variables are ${names.join(', ') || 'none'}`,
    };
}

/** The leaves of a condition as sent (not yet checked: anything that is not a combinator counts as one). */
function leavesOf(input: unknown): number {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return 1;
  const node = input as Record<string, unknown>;
  let n = 0;
  let combinator = false;
  for (const key of ['all', 'any'] as const)
    if (Array.isArray(node[key])) {
      combinator = true;
      for (const c of node[key] as unknown[]) n += leavesOf(c);
    }
  if ('not' in node) {
    combinator = true;
    n += leavesOf(node.not);
  }
  return combinator ? n : 1;
}

function filterTooBig(message: string): ApiError {
  return new ApiError('invalid_arguments', {
    message,
    hint: `A filter takes at most ${MAX_FILTER_LEAVES} conditions and ${MAX_FILTER_BYTES} bytes of JSON: use in with a list (up to ${MAX_CONDITION_LIST} values) rather than many equals, or split the read by since/until.`,
    details: [{ path: '/where', message }],
  });
}

/**
 * Checks a filter against the form. Throws 400 invalid_arguments with a detail per problem, at
 * /where/..., /since, /until, and for a filter over MAX_FILTER_LEAVES or MAX_FILTER_BYTES.
 * Returns the filter with `where` as stored (blocks and choices by id).
 */
export function checkResponseFilter(form: FilterForm, filter: ResponseFilter): ResponseFilter {
  const details: ErrorDetail[] = [];
  let where: Condition | undefined;
  if (filter.where !== undefined) {
    const leaves = leavesOf(filter.where);
    if (leaves > MAX_FILTER_LEAVES)
      throw filterTooBig(`has ${leaves} conditions; a filter takes at most ${MAX_FILTER_LEAVES}`);
    const checked = checkCondition(filter.where, filterSubjects(form), '/where');
    details.push(...checked.details);
    where = checked.condition;
    // As sent and as stored (a choice's id may be longer than its label): a checked filter checks again.
    const bytes = Math.max(jsonBytes(filter.where), where ? jsonBytes(where) : 0);
    if (bytes > MAX_FILTER_BYTES)
      throw filterTooBig(`takes ${bytes} bytes as JSON; a filter takes at most ${MAX_FILTER_BYTES}`);
  }
  if (filter.since !== undefined) checkTime('since', filter.since, details);
  if (filter.until !== undefined) checkTime('until', filter.until, details);
  if (details.length)
    throw new ApiError('invalid_arguments', {
      message: 'The filter does not fit this form.',
      hint: 'Name blocks by id or ref as get_form shows them, with operators that fit their type; give times in UTC (ending in Z).',
      details,
    });
  return { ...filter, ...(where ? { where } : {}) };
}

/**
 * The filter as a SQL boolean over the `responses` row `alias` (its answers, hidden and
 * submitted_at): values pushed onto `params` and named $n, never written into the text. 'TRUE'
 * without a filter. Checks the filter first (checkResponseFilter: a checked one passes again), so
 * that what is translated is always a condition that fits the form.
 */
export function responseFilterSql(form: FilterForm, filter: ResponseFilter, params: unknown[], alias = 'r'): string {
  filter = checkResponseFilter(form, filter);
  const parts: string[] = [];
  if (filter.since !== undefined) parts.push(`${alias}.submitted_at >= $${params.push(filter.since)}::timestamptz`);
  if (filter.until !== undefined) parts.push(`${alias}.submitted_at < $${params.push(filter.until)}::timestamptz`);
  if (filter.where !== undefined) parts.push(conditionSql(filter.where, params, alias));
  return parts.length ? parts.join(' AND ') : 'TRUE';
}

const jsonBytes = (x: unknown): number => Buffer.byteLength(JSON.stringify(x));

/** Whether a filter filters anything. */
export const isFiltered = (filter: ResponseFilter): boolean =>
  filter.where !== undefined || filter.since !== undefined || filter.until !== undefined;

/**
 * Turns PostgreSQL's JIT off until the transaction ends, for a filtered read's statements: their
 * estimated cost (a filter on a big form) passes jit_above_cost, and compiling their many
 * aggregate expressions took 1 to 4 s on 2 cores, where the read itself took 0.1 s (a 0.1% filter
 * served by the GIN index at 10M responses) and where JIT saved less than it cost (a 10% one).
 * Run it inside the read's transaction (outside one it lasts a single statement: no effect).
 */
export async function withoutJit(manager: EntityManager): Promise<void> {
  await manager.query(`SELECT set_config('jit', 'off', true)`);
}

/**
 * A segment (issue 38): the responses that hold one value, whose summary is kept like the form's
 * (ResponseStatsRepository.readSegmentSummary) rather than computed from the matching rows. A
 * response is in it when its `kind` column (answers or hidden) contains `match` (jsonb @>), the
 * test conditionSql makes of the same condition: { name: value } for a hidden field's value or a
 * choice (yes/no: the boolean), { block: [choice] } for a ticked checkbox.
 */
export interface ResponseSegment {
  kind: 'answers' | 'hidden';
  match: Record<string, string | boolean | string[]>;
}

/** The block types whose one answer a segment may name (with equals); checkboxes name a ticked choice (contains). */
const SEGMENT_BLOCK_TYPES = ['multiple_choice', 'dropdown', 'yes_no'];

/**
 * The segment a checked filter (checkResponseFilter) selects, if it is one: no since/until and a
 * single condition naming one value, a hidden field `equals` a string (or `in` a list of one), a
 * single-choice block or yes/no `equals` its value, checkboxes `contains` a choice. Anything else
 * (more conditions, other operators, "" which matches nothing) is not a segment: undefined.
 */
export function segmentOf(form: FilterForm, filter: ResponseFilter): ResponseSegment | undefined {
  const where = filter.where;
  if (!where || filter.since !== undefined || filter.until !== undefined) return undefined;
  if (isHiddenLeaf(where)) {
    const value =
      where.op === 'equals'
        ? where.value
        : where.op === 'in' && Array.isArray(where.value) && where.value.length === 1
          ? where.value[0]
          : undefined;
    return typeof value === 'string' && value !== '' ? { kind: 'hidden', match: { [where.hidden]: value } } : undefined;
  }
  if (!isBlockLeaf(where)) return undefined;
  const block = form.blocks.find((b) => b.id === where.block);
  if (!block) return undefined;
  const value = where.value;
  if (block.type === 'checkboxes')
    return where.op === 'contains' && typeof value === 'string' && value !== ''
      ? { kind: 'answers', match: { [block.id]: [value] } }
      : undefined;
  if (!SEGMENT_BLOCK_TYPES.includes(block.type) || where.op !== 'equals') return undefined;
  if (block.type === 'yes_no')
    return typeof value === 'boolean' ? { kind: 'answers', match: { [block.id]: value } } : undefined;
  return typeof value === 'string' && value !== '' ? { kind: 'answers', match: { [block.id]: value } } : undefined;
}

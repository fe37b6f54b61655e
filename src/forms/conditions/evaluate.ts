import { Condition, isBlockLeaf, isVariableLeaf, Leaf } from './condition.types';
import { foldCase } from './fold';

/**
 * What a condition is evaluated against. `answer` gives a block's stored answer (choice ids, a
 * list of them for checkboxes), or undefined when the block was not shown or not answered;
 * `hidden` a hidden field's value, or undefined when none was given.
 */
export interface Facts {
  answer(blockId: string): unknown;
  hidden(name: string): string | undefined;
  /** A variable's value so far (issue 46); absent where no condition can name one. */
  variable?(name: string): number | string | undefined;
}

/**
 * Evaluates a checked condition (blocks by id, choices by id). The one table, shared with the SQL
 * translation of filters: a block not shown or not answered (a hidden field not given) makes
 * `answered` false, `not_answered` true and every other operator false, `not_equals` and
 * `not_contains` included; `not` negates its whole condition; `all` of nothing holds, `any` of
 * nothing does not.
 */
export function evaluate(condition: Condition, facts: Facts): boolean {
  if ('all' in condition) return condition.all.every((c) => evaluate(c, facts));
  if ('any' in condition) return condition.any.some((c) => evaluate(c, facts));
  if ('not' in condition) return !evaluate(condition.not, facts);
  return evaluateLeaf(
    condition,
    isBlockLeaf(condition)
      ? rowOr(placeOr(facts.answer(condition.block), condition.choice), condition.row)
      : isVariableLeaf(condition)
        ? facts.variable?.(condition.variable)
        : facts.hidden(condition.hidden),
  );
}

/** A ranking leaf's subject: the choice's place in the answer (1 is first), undefined when not ranked; else the answer. */
export function placeOr(x: unknown, choice: string | undefined): unknown {
  if (choice === undefined) return x;
  const i = Array.isArray(x) ? x.indexOf(choice) : -1;
  return i < 0 ? undefined : i + 1;
}

/** A matrix leaf's subject: the row's column(s), undefined when the row is not answered; else the answer. */
export function rowOr(x: unknown, row: string | undefined): unknown {
  if (row === undefined) return x;
  return typeof x === 'object' && x !== null && !Array.isArray(x) ? (x as Record<string, unknown>)[row] : undefined;
}

function isMissing(x: unknown): boolean {
  return x === undefined || x === null || x === '' || (Array.isArray(x) && x.length === 0);
}

/** One leaf against the value it names (the operator table is in condition.types.ts). */
export function evaluateLeaf(leaf: Leaf, x: unknown): boolean {
  if (isMissing(x)) return leaf.op === 'not_answered';
  const v = leaf.value;
  switch (leaf.op) {
    case 'answered':
      return true;
    case 'not_answered':
      return false;
    case 'equals':
      return equals(x, v);
    case 'not_equals':
      return !equals(x, v);
    case 'in':
      if (!Array.isArray(v)) return false;
      // checkboxes: at least one of the listed choices is ticked
      return Array.isArray(x) ? x.some((e) => v.includes(e as string)) : v.includes(x as string | number);
    case 'contains':
      return contains(x, v);
    case 'not_contains':
      return !contains(x, v);
    case 'gt':
      return compare(x, v) > 0;
    case 'gte':
      return compare(x, v) >= 0;
    case 'lt':
      return compare(x, v) < 0;
    case 'lte':
      return compare(x, v) <= 0;
  }
}

/** Scalars by value; checkboxes as the exact set ticked. */
function equals(x: unknown, v: unknown): boolean {
  if (Array.isArray(x)) {
    if (!Array.isArray(v)) return false;
    const set = new Set(x);
    return set.size === new Set(v).size && v.every((e) => set.has(e));
  }
  return x === v;
}

/** Text: a substring, ignoring case (foldCase on both); checkboxes: the choice is ticked. */
function contains(x: unknown, v: unknown): boolean {
  if (Array.isArray(x)) return x.includes(v);
  if (typeof x === 'string' && typeof v === 'string') return foldCase(x).includes(foldCase(v));
  return false;
}

/** Numbers as numbers, dates (YYYY-MM-DD) as text; NaN (no order) when the types differ. */
function compare(x: unknown, v: unknown): number {
  if (typeof x === 'number' && typeof v === 'number') return x - v;
  if (typeof x === 'string' && typeof v === 'string') return x < v ? -1 : x > v ? 1 : 0;
  return NaN;
}

import { ErrorDetail } from '../../common/errors/api-error';
import {
  Condition,
  ConditionValue,
  Leaf,
  MAX_DEPTH,
  OPERATOR_TABLE,
  OPERATORS,
  Operator,
  operatorsOf,
  SUBJECT_KINDS,
  SubjectKind,
} from './condition.types';

/** A block as a condition sees it. */
export interface BlockSubject {
  id: string;
  type: string;
  title: string;
  ref?: string | null;
  choices?: Array<{ id: string; label: string }>;
  rows?: Array<{ id: string; label: string }>;
  columns?: Array<{ id: string; label: string }>;
  multiple?: boolean;
}

/**
 * What a condition may name where it stands. `block` resolves an id or a ref to a block the
 * condition may name (for form logic: an earlier block), or says why it may not; `hidden` does the
 * same for a hidden field's name. `note` may add why a block no longer fits (an edit retyped it or
 * removed a choice), so a refusal says what the edit took away.
 */
export interface Subjects {
  block(key: string): BlockSubject | { error: string };
  hidden(name: string): true | { error: string };
  /** A variable's type (issue 46), or why it may not be named here; absent: no variable may be. */
  variable?(name: string): { type: 'number' | 'text'; stored?: string } | { error: string };
  note?(blockId: string, problem: { choice?: string }): string | undefined;
}

/** Longest text a condition compares with. */
export const MAX_CONDITION_TEXT = 1000;
/** Longest list a condition takes (in, equals on checkboxes). */
export const MAX_CONDITION_LIST = 200;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * Type-checks a condition against what it names (see Subjects): structure, depth, operators that
 * fit the named block's kind, values of the right type, choices that exist. Returns the condition
 * as stored (blocks by id, choices by id) or the details of every problem, at JSON Pointers under
 * `path`.
 */
export function checkCondition(
  input: unknown,
  subjects: Subjects,
  path: string,
): { condition?: Condition; details: ErrorDetail[] } {
  const details: ErrorDetail[] = [];
  const condition = check(input, subjects, path, 1, details);
  return details.length ? { details } : { condition, details };
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function check(
  input: unknown,
  subjects: Subjects,
  path: string,
  depth: number,
  details: ErrorDetail[],
): Condition | undefined {
  const bad = (at: string, message: string) => {
    details.push({ path: at, message });
    return undefined;
  };
  if (!isObject(input))
    return bad(
      path,
      'must be a condition: { block, op, value? }, { hidden, op, value? }, { variable, op, value? }, { all }, { any } or { not }',
    );
  for (const combinator of ['all', 'any', 'not'] as const) {
    if (!(combinator in input)) continue;
    if (Object.keys(input).length !== 1) return bad(path, `must have only "${combinator}"`);
    if (depth >= MAX_DEPTH)
      return bad(path, `conditions nest at most ${MAX_DEPTH} levels deep (e.g. all, then any, then a leaf)`);
    const inner = input[combinator];
    if (combinator === 'not') {
      const c = check(inner, subjects, `${path}/not`, depth + 1, details);
      return c && { not: c };
    }
    if (!Array.isArray(inner) || inner.length === 0)
      return bad(`${path}/${combinator}`, 'must be a non-empty list of conditions');
    if (inner.length > MAX_CONDITION_LIST)
      return bad(`${path}/${combinator}`, `must have at most ${MAX_CONDITION_LIST} conditions`);
    const list = inner.map((c, i) => check(c, subjects, `${path}/${combinator}/${i}`, depth + 1, details));
    if (list.some((c) => c === undefined)) return undefined;
    return combinator === 'all' ? { all: list as Condition[] } : { any: list as Condition[] };
  }
  return checkLeaf(input, subjects, path, details);
}

function checkLeaf(
  input: Record<string, unknown>,
  subjects: Subjects,
  path: string,
  details: ErrorDetail[],
): Leaf | undefined {
  const bad = (at: string, message: string) => {
    details.push({ path: at, message });
    return undefined;
  };
  const hasHidden = 'hidden' in input;
  const hasVariable = 'variable' in input;
  if (['block', 'hidden', 'variable'].filter((k) => k in input).length !== 1)
    return bad(path, 'must name one of: a block (by id or ref), a hidden field or a variable');
  for (const key of Object.keys(input)) {
    if (!['block', 'choice', 'row', 'hidden', 'variable', 'op', 'value'].includes(key))
      return bad(`${path}/${key}`, 'is not a field of a condition');
  }
  const op = input.op as Operator;
  if (!OPERATORS.includes(op)) return bad(`${path}/op`, `must be one of ${OPERATORS.join(', ')}`);

  let kind: SubjectKind;
  let block: BlockSubject | undefined;
  let leaf: Leaf;
  let subject: string;
  if (hasVariable) {
    if (typeof input.variable !== 'string') return bad(`${path}/variable`, 'must be the name of a variable');
    const found = subjects.variable?.(input.variable) ?? { error: 'no variable can be named here' };
    if ('error' in found) return bad(`${path}/variable`, found.error);
    kind = found.type;
    leaf = { variable: found.stored ?? input.variable, op };
    subject = `the variable "${input.variable}" (${found.type})`;
  } else if (hasHidden) {
    if (typeof input.hidden !== 'string') return bad(`${path}/hidden`, 'must be the name of a hidden field');
    const found = subjects.hidden(input.hidden);
    if (found !== true) return bad(`${path}/hidden`, found.error);
    kind = 'text';
    leaf = { hidden: input.hidden, op };
    subject = `the hidden field "${input.hidden}"`;
  } else {
    if (typeof input.block !== 'string') return bad(`${path}/block`, 'must be the id or ref of a block');
    const found = subjects.block(input.block);
    if ('error' in found) return bad(`${path}/block`, found.error);
    block = found;
    const k = SUBJECT_KINDS[block.type];
    subject = `"${block.title}" (${block.ref ?? block.id}, ${block.type})`;
    if (!k) return bad(`${path}/block`, `${subject} takes no answer, so no condition can test it`);
    kind = k;
    leaf = { block: block.id, op };
    if ('choice' in input || block.type === 'ranking') {
      const choice = rankedChoice(input.choice, block, subject);
      if (typeof choice !== 'string') return bad(`${path}/${'choice' in input ? 'choice' : 'block'}`, choice.error);
      if (choice) {
        kind = 'number';
        leaf = { block: block.id, choice, op };
        subject = `the place of a choice of ${subject}`;
      }
    }
    if ('row' in input || block.type === 'matrix') {
      const row = matrixRow(input.row, block, subject);
      if (typeof row !== 'string') return bad(`${path}/${'row' in input ? 'row' : 'block'}`, row.error);
      if (row) {
        kind = block.multiple ? 'choices' : 'choice';
        leaf = { block: block.id, row, op };
        subject = `a row of ${subject}`;
        // Its values are the matrix's columns, checked as a choice block's choices.
        block = { ...block, choices: block.columns };
      }
    }
  }

  const shape = OPERATOR_TABLE[kind][op];
  const note = block && subjects.note?.(block.id, {});
  if (!shape)
    return bad(
      `${path}/op`,
      `${op} does not fit ${subject}; it takes ${operatorsOf(kind).join(', ')}${note ? ` (${note})` : ''}`,
    );
  if (shape === 'none') {
    if ('value' in input) return bad(`${path}/value`, `${op} takes no value`);
    return leaf;
  }
  if (!('value' in input)) return bad(`${path}/value`, `is required by ${op}`);
  const raw = input.value;
  if (shape === 'list') {
    if (!Array.isArray(raw) || raw.length === 0)
      return bad(`${path}/value`, `${op} on ${subject} takes a non-empty list`);
    if (raw.length > MAX_CONDITION_LIST) return bad(`${path}/value`, `must have at most ${MAX_CONDITION_LIST} items`);
    const values = raw.map((v, i) => checkValue(v, kind, block, subjects, `${path}/value/${i}`, details));
    if (values.some((v) => v === undefined)) return undefined;
    leaf.value = values as Array<string | number>;
    return leaf;
  }
  if (Array.isArray(raw)) return bad(`${path}/value`, `${op} on ${subject} takes one value, not a list`);
  const value = checkValue(raw, kind, block, subjects, `${path}/value`, details);
  if (value === undefined) return undefined;
  leaf.value = value;
  return leaf;
}

/**
 * A ranking leaf's choice, by label or id, as its id; '' for a ranking leaf without one (it takes
 * answered, not_answered only).
 */
function rankedChoice(raw: unknown, block: BlockSubject, subject: string): string | { error: string } {
  if (block.type !== 'ranking') return { error: `only a ranking's conditions name a choice; ${subject} is not one` };
  if (raw === undefined) return '';
  const found =
    typeof raw === 'string' ? block.choices?.find((c) => c.id === raw || c.label === raw.trim()) : undefined;
  if (!found)
    return { error: `must be one of ${(block.choices ?? []).map((c) => JSON.stringify(c.label)).join(', ')}` };
  return found.id;
}

/** A matrix leaf's row, by label or id, as its id; '' for a matrix leaf without one (answered, not_answered only). */
function matrixRow(raw: unknown, block: BlockSubject, subject: string): string | { error: string } {
  if (block.type !== 'matrix') return { error: `only a matrix's conditions name a row; ${subject} is not one` };
  if (raw === undefined) return '';
  const rows = block.rows ?? [];
  const found =
    typeof raw === 'string' ? (rows.find((r) => r.id === raw) ?? rows.find((r) => r.label === raw.trim())) : undefined;
  if (!found) return { error: `must be one of the rows ${rows.map((r) => JSON.stringify(r.label)).join(', ')}` };
  return found.id;
}

/** One value of a leaf, as stored (a choice by its id), or undefined with a detail. */
function checkValue(
  raw: unknown,
  kind: SubjectKind,
  block: BlockSubject | undefined,
  subjects: Subjects,
  path: string,
  details: ErrorDetail[],
): ConditionValue | undefined {
  const bad = (message: string) => {
    details.push({ path, message });
    return undefined;
  };
  switch (kind) {
    case 'text':
      if (typeof raw !== 'string') return bad('must be a string');
      if (raw.length > MAX_CONDITION_TEXT) return bad(`must be at most ${MAX_CONDITION_TEXT} characters`);
      return raw;
    case 'number':
      if (typeof raw !== 'number' || !Number.isFinite(raw)) return bad('must be a number');
      return raw;
    case 'date': {
      const m = typeof raw === 'string' ? DATE.exec(raw) : null;
      if (!m) return bad('must be a date (YYYY-MM-DD)');
      const d = new Date(0);
      d.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
      if (d.getUTCMonth() !== Number(m[2]) - 1 || d.getUTCDate() !== Number(m[3])) return bad('is not a real date');
      return raw as string;
    }
    case 'boolean':
      if (typeof raw !== 'boolean') return bad('must be true or false');
      return raw;
    case 'choice':
    case 'choices': {
      if (typeof raw !== 'string') return bad('must be a choice label (or choice id)');
      const wanted = raw.trim();
      const choices = block?.choices ?? [];
      const choice = choices.find((c) => c.id === wanted) ?? choices.find((c) => c.label === wanted);
      if (choice) return choice.id;
      const note = block && subjects.note?.(block.id, { choice: wanted });
      return bad(
        `"${wanted}" is not a choice of "${block?.title}"; its choices are ${choices.map((c) => JSON.stringify(c.label)).join(', ')}${note ? ` (${note})` : ''}`,
      );
    }
  }
}

/** A stored condition for callers: blocks named by `name` (their ref where they have one). */
export function conditionView(condition: Condition, name: (blockId: string) => string): Condition {
  if ('all' in condition) return { all: condition.all.map((c) => conditionView(c, name)) };
  if ('any' in condition) return { any: condition.any.map((c) => conditionView(c, name)) };
  if ('not' in condition) return { not: conditionView(condition.not, name) };
  if ('block' in condition) return { ...condition, block: name(condition.block) };
  return { ...condition };
}

/** Every block id, hidden field and variable a stored condition names. */
export function namesOf(
  condition: Condition,
  out: { blocks: Set<string>; hidden: Set<string>; variables?: Set<string> } = {
    blocks: new Set<string>(),
    hidden: new Set<string>(),
    variables: new Set<string>(),
  },
) {
  if ('all' in condition) condition.all.forEach((c) => namesOf(c, out));
  else if ('any' in condition) condition.any.forEach((c) => namesOf(c, out));
  else if ('not' in condition) namesOf(condition.not, out);
  else if ('block' in condition) out.blocks.add(condition.block);
  else if ('variable' in condition) out.variables?.add(condition.variable);
  else out.hidden.add(condition.hidden);
  return out;
}

/** A condition in one line, for hints ("shown only when ..."). */
export function describeCondition(condition: Condition, name: (blockId: string) => string = (id) => id): string {
  return JSON.stringify(conditionView(condition, name));
}

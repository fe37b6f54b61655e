/**
 * The condition language: one definition shared by form logic (showIf, jumps) and, next, by
 * response filters. A condition is a leaf naming a block or a hidden field, or all/any/not of
 * conditions, at most MAX_DEPTH levels deep (the leaf counts as a level).
 */
export const OPERATORS = [
  'equals',
  'not_equals',
  'in',
  'contains',
  'not_contains',
  'gt',
  'gte',
  'lt',
  'lte',
  'answered',
  'not_answered',
] as const;
export type Operator = (typeof OPERATORS)[number];

/** A condition nests at most this many levels: e.g. all -> any -> a leaf. */
export const MAX_DEPTH = 3;

/** What a leaf compares with: one value, or a list (in; equals/not_equals on checkboxes). */
export type ConditionValue = string | number | boolean | Array<string | number>;

export interface BlockLeaf {
  /** A block's id or ref on input; its id once checked (stored). */
  block: string;
  /** A ranking's choice (its id once checked): the leaf tests the choice's place, 1 being first. */
  choice?: string;
  /** A matrix's row (its id once checked): the leaf tests that row's column(s), as a choice (choices when multiple). */
  row?: string;
  op: Operator;
  value?: ConditionValue;
}

export interface HiddenLeaf {
  /** A hidden field's name. */
  hidden: string;
  op: Operator;
  value?: ConditionValue;
}

/** A form's variable (issue 46), as computed so far on the respondent's path. */
export interface VariableLeaf {
  variable: string;
  op: Operator;
  value?: ConditionValue;
}

export type Leaf = BlockLeaf | HiddenLeaf | VariableLeaf;

/**
 * A response filter's { "variable": "ending" } as stored (issue 46): the ending a response reached
 * (its ref), a text. No variable's name holds a colon.
 */
export const ENDING_VARIABLE = ':ending';

export type Condition = Leaf | { all: Condition[] } | { any: Condition[] } | { not: Condition };

export const isBlockLeaf = (c: Condition): c is BlockLeaf => 'block' in c;
export const isHiddenLeaf = (c: Condition): c is HiddenLeaf => 'hidden' in c;
export const isVariableLeaf = (c: Condition): c is VariableLeaf => 'variable' in c;

/**
 * The kinds of value a condition can test, each with its operators. A block's type decides its
 * kind (see SUBJECT_KINDS); hidden fields are text.
 *  - text: equals / not_equals (exact), in (one of a list), contains / not_contains (ignoring case);
 *  - number, date: equals / not_equals, in, gt / gte / lt / lte (dates compare as YYYY-MM-DD);
 *  - choice (one choice): equals / not_equals (a choice), in (a list of choices);
 *  - choices (checkboxes): contains / not_contains (a choice is / is not ticked), equals /
 *    not_equals (the exact set ticked, a list), in (at least one of a list);
 *  - boolean (yes_no): equals / not_equals;
 *  - files (file_upload): answered / not_answered only.
 * Every kind takes answered / not_answered (no value).
 */
export type SubjectKind = 'text' | 'number' | 'date' | 'choice' | 'choices' | 'boolean' | 'files';

/** The value an operator takes: none, one, or a non-empty list. */
export type ValueShape = 'none' | 'one' | 'list';

/** Numbers and dates take the same operators: they are ordered. */
const ORDERED_OPERATORS: Partial<Record<Operator, ValueShape>> = {
  equals: 'one',
  not_equals: 'one',
  in: 'list',
  gt: 'one',
  gte: 'one',
  lt: 'one',
  lte: 'one',
  answered: 'none',
  not_answered: 'none',
};

export const OPERATOR_TABLE: Record<SubjectKind, Partial<Record<Operator, ValueShape>>> = {
  text: {
    equals: 'one',
    not_equals: 'one',
    in: 'list',
    contains: 'one',
    not_contains: 'one',
    answered: 'none',
    not_answered: 'none',
  },
  number: ORDERED_OPERATORS,
  date: ORDERED_OPERATORS,
  choice: { equals: 'one', not_equals: 'one', in: 'list', answered: 'none', not_answered: 'none' },
  choices: {
    contains: 'one',
    not_contains: 'one',
    equals: 'list',
    not_equals: 'list',
    in: 'list',
    answered: 'none',
    not_answered: 'none',
  },
  boolean: { equals: 'one', not_equals: 'one', answered: 'none', not_answered: 'none' },
  files: { answered: 'none', not_answered: 'none' },
};

/** The kind of each block type that takes an answer (statement and page_break take none). */
export const SUBJECT_KINDS: Readonly<Record<string, SubjectKind>> = {
  short_text: 'text',
  long_text: 'text',
  email: 'text',
  url: 'text',
  phone: 'text',
  number: 'number',
  rating: 'number',
  linear_scale: 'number',
  nps: 'number',
  date: 'date',
  multiple_choice: 'choice',
  dropdown: 'choice',
  checkboxes: 'choices',
  yes_no: 'boolean',
  file_upload: 'files',
  ranking: 'files', // a choice's place: { block, choice, op, value } (a number)
  matrix: 'files', // a row's column(s): { block, row, op, value } (a choice, or choices when multiple)
};

/** The operators a kind takes, for messages. */
export function operatorsOf(kind: SubjectKind): Operator[] {
  return Object.keys(OPERATOR_TABLE[kind]) as Operator[];
}

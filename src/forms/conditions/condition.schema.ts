import { Type } from '@sinclair/typebox';
import { sharedRef } from '../../common/validation/schema-definitions';
import { MAX_CONDITION_LIST, MAX_CONDITION_TEXT } from './check';
import { MAX_DEPTH, OPERATORS } from './condition.types';

export const CONDITION_DESCRIPTION =
  'A leaf { "block": id or ref | "hidden": name | "variable": name, "op", "value"? }, ' +
  `or all / any (a list) or not (one) of conditions, at most ${MAX_DEPTH} levels (all > any > leaf). ` +
  'ops: any block: answered, not_answered; all but file_upload: equals, not_equals; and text, hidden: in, ' +
  'contains, not_contains (substring, any case); number, rating, linear_scale, nps, date (YYYY-MM-DD): in, gt, gte, lt, lte; ' +
  'ranking + choice: its place; matrix + row: as a choice block; multiple_choice, dropdown: in; checkboxes: contains, not_contains (one ticked), in (any ticked), equals, ' +
  "not_equals (that set). A choice by label or id; a variable: its type's ops. in and sets take a list. " +
  'A block not shown or not answered fails every op but not_answered.';

const text = { type: 'string', maxLength: MAX_CONDITION_TEXT };
const name = { type: 'string', minLength: 1, maxLength: 64 };
const list = (items: object) => ({ type: 'array', items, minItems: 1, maxItems: MAX_CONDITION_LIST });
const self = { $ref: '#/$defs/condition' };

/**
 * The JSON Schema of a condition: one definition that refers to itself for all, any and not, so
 * it is written out once per tool (see schema-definitions.ts). Each condition is one object whose
 * fields are those of a leaf and the combinators; which go together (exactly one of block, hidden,
 * all, any, not) and how deep they nest is checked by checkCondition, with a message that says so,
 * rather than by a union whose every branch would report its own error, or by a schema unrolled
 * to MAX_DEPTH levels (it was 13 copies of the leaf per condition). Arguments nest at most
 * MAX_ARGUMENT_DEPTH levels before the schema is tried, so the recursion is bounded.
 */
const CONDITION_DEFINITION = {
  type: 'object',
  description: CONDITION_DESCRIPTION,
  properties: {
    block: name,
    choice: { type: 'string' },
    row: { type: 'string' },
    hidden: name,
    variable: name,
    op: { type: 'string', enum: [...OPERATORS] },
    value: { anyOf: [text, { type: 'number' }, { type: 'boolean' }, list({ anyOf: [text, { type: 'number' }] })] },
    all: list(self),
    any: list(self),
    not: self,
  },
  additionalProperties: false,
};

/** A condition as callers send it (blocks by id or ref, choices by label or id); `description` says what it decides. */
export const ConditionSchema = (description?: string) =>
  Type.Unsafe<Record<string, unknown>>(
    sharedRef('condition', CONDITION_DEFINITION, description ? { description } : {}),
  );

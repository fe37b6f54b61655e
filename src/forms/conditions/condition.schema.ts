import { TSchema, Type } from '@sinclair/typebox';
import { StringEnum } from '../../common/validation/schema-validator';
import { MAX_CONDITION_LIST, MAX_CONDITION_TEXT } from './check';
import { MAX_DEPTH, OPERATORS } from './condition.types';

/**
 * The JSON Schema of a condition, nested to a fixed depth (MAX_DEPTH levels, the leaf included)
 * rather than recursively, so clients that refuse recursive schemas take it. Each level is one
 * object whose fields are those of a leaf ({ block | hidden, op, value? }) and the combinators
 * (all, any, not) of the level below; which fields go together (exactly one of block, hidden,
 * all, any, not) is checked by checkCondition, with a message that says so, rather than by a
 * union whose every branch would report its own error.
 */
const ConditionValueSchema = Type.Union([
  Type.String({ maxLength: MAX_CONDITION_TEXT }),
  Type.Number(),
  Type.Boolean(),
  Type.Array(Type.Union([Type.String({ maxLength: MAX_CONDITION_TEXT }), Type.Number()]), {
    minItems: 1,
    maxItems: MAX_CONDITION_LIST,
  }),
]);

const leafFields = {
  block: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  hidden: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  op: Type.Optional(StringEnum(OPERATORS)),
  value: Type.Optional(ConditionValueSchema),
};

function level(depth: number): TSchema {
  if (depth === 1) {
    // Combinators are taken here so that checkCondition refuses them with a message about depth.
    const tooDeep = Type.Optional(
      Type.Unknown({ description: `Not at this depth: conditions nest at most ${MAX_DEPTH} levels.` }),
    );
    return Type.Object({ ...leafFields, all: tooDeep, any: tooDeep, not: tooDeep }, { additionalProperties: false });
  }
  const below = level(depth - 1);
  return Type.Object(
    {
      ...leafFields,
      all: Type.Optional(Type.Array(below, { minItems: 1, maxItems: MAX_CONDITION_LIST })),
      any: Type.Optional(Type.Array(below, { minItems: 1, maxItems: MAX_CONDITION_LIST })),
      not: Type.Optional(below),
    },
    { additionalProperties: false },
  );
}

export const CONDITION_DESCRIPTION =
  'A condition: { "block": "(id or ref of an earlier block)", "op", "value"? }, { "hidden": "(hidden field name)", "op", "value"? }, ' +
  `or { "all": [...] }, { "any": [...] }, { "not": {...} }, nested at most ${MAX_DEPTH} levels (e.g. all > any > leaf). ` +
  'ops: equals, not_equals, in (value a list), contains, not_contains (text: substring ignoring case; checkboxes: that choice is ticked), ' +
  'gt, gte, lt, lte (number, rating, linear_scale, date), answered, not_answered (no value). ' +
  'Text blocks and hidden fields: equals, not_equals, in, contains, not_contains. number/rating/linear_scale/date: equals, not_equals, in, gt..lte. ' +
  'multiple_choice/dropdown: equals, not_equals, in (choices by label or id). checkboxes: contains, not_contains (one choice), equals, not_equals (the exact set, a list), in (any of a list). yes_no: equals, not_equals (true/false). ' +
  'A block not shown or not answered makes every op false except not_answered (true); not negates the whole condition.';

/** A condition as callers send it (blocks by id or ref, choices by label or id). */
export const ConditionSchema = (description = CONDITION_DESCRIPTION) =>
  Type.Unsafe<Record<string, unknown>>({ ...level(MAX_DEPTH), description });

/** A condition as read back (blocks by ref where they have one, else id; choices by id): the same language. */
export const ConditionOutputSchema = (description: string) =>
  Type.Unsafe<Record<string, unknown>>({ type: 'object', description });

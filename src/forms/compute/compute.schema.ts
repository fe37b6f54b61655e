import { Type } from '@sinclair/typebox';
import { StringEnum } from '../../common/validation/schema-validator';
import { ConditionSchema } from '../conditions';
import {
  CALCULATION_OPS,
  MAX_CALCULATIONS,
  MAX_ENDINGS,
  MAX_TEXT_VARIABLE,
  MAX_VARIABLES,
  VARIABLE_TYPES,
} from './compute.types';

const Name = Type.String({ pattern: '^[a-z][a-z0-9_]{0,63}$', maxLength: 64 });
const Text = (maxLength: number) => Type.String({ maxLength });

/** create_form / update_form: `variables`. */
export const VariablesSchema = Type.Array(
  Type.Object(
    {
      name: Name,
      type: StringEnum(VARIABLE_TYPES),
      initial: Type.Optional(
        Type.Union([Type.Number(), Text(MAX_TEXT_VARIABLE)], { description: '0 or "" by default' }),
      ),
    },
    { additionalProperties: false },
  ),
  {
    maxItems: MAX_VARIABLES,
    description:
      'Values computed from answers by the blocks\' calculate, e.g. [{"name":"price","type":"number","initial":0}]. Names share the namespace of refs and hidden fields. ' +
      'Blocks with points or correct make a quiz: built-in number variables score and correctCount.',
  },
);

/** create_form / update_form: `endings`. */
export const EndingsSchema = Type.Array(
  Type.Object(
    {
      ref: Name,
      title: Type.String({ minLength: 1, maxLength: 500 }),
      message: Type.Optional(Text(5000)),
      redirectUrl: Type.Optional(Type.String({ maxLength: 2000, description: 'http(s); recall is URL-encoded' })),
    },
    { additionalProperties: false },
  ),
  {
    maxItems: MAX_ENDINGS,
    description:
      'Pages that end the form; a page_break jump goes to one with "to": "ending:<ref>", and a form that ends otherwise shows the first. ' +
      'Titles, descriptions, choice labels and endings recall {{ref}}, {{hidden:name}}, {{variable:name}}.',
  },
);

/** create_form / update_form: `thankYou`, the page after a form without endings. */
export const ThankYouSchema = Type.Object(
  { title: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })), message: Type.Optional(Text(5000)) },
  { additionalProperties: false },
);

/** A block's `calculate`. */
export const CalculateSchema = Type.Array(
  Type.Object(
    {
      if: Type.Optional(ConditionSchema()),
      variable: Type.String({ minLength: 1, maxLength: 64 }),
      op: StringEnum(CALCULATION_OPS),
      value: Type.Union([
        Type.Number(),
        Text(MAX_TEXT_VARIABLE),
        Type.Object({ block: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }),
        Type.Object({ variable: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }),
      ]),
    },
    { additionalProperties: false },
  ),
  {
    maxItems: MAX_CALCULATIONS,
    description:
      "Run in path order when the block is on the respondent's path; if and value may name this block and earlier ones. Text variables take set and add (append).",
  },
);

/** A choice block's `points` and `correct` (quizzes). */
export const PointsSchema = Type.Record(Type.String({ maxLength: 500 }), Type.Number(), {
  description: 'Choice (label or id) -> points added to score when chosen.',
});
export const CorrectSchema = Type.Union(
  [Type.String({ maxLength: 500 }), Type.Array(Type.String({ maxLength: 500 }))],
  {
    description:
      'The right choice (a list on checkboxes: exactly that set); counts in correctCount, and 1 point in score without points.',
  },
);

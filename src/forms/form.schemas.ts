import { Type } from '@sinclair/typebox';
import { StringEnum } from '../common/validation/schema-validator';
import { BLOCK_TYPES } from './blocks';
import { CONDITION_DESCRIPTION, ConditionOutputSchema, ConditionSchema } from './conditions';
import { MAX_HIDDEN_FIELDS, MAX_JUMPS, REF_PATTERN } from './form-logic';
import { FORM_STATUSES } from './entities/form.entity';

/** JSON Schemas of forms and blocks, shared by the form tools' inputs and outputs. */
export const PublicId = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'Public identifier of the form (from list_forms or create_form).',
});

export const ChoiceSchema = Type.Object({ id: Type.String(), label: Type.String() }, { additionalProperties: false });

export const BlockSchema = Type.Object(
  {
    id: Type.String({ description: 'Stable id; answers are keyed by it.' }),
    ref: Type.Optional(
      Type.String({ description: "The block's ref, when it has one: answers may be keyed by it too." }),
    ),
    type: StringEnum(BLOCK_TYPES),
    title: Type.Optional(Type.String({ description: 'Every block has one, except a page_break created without.' })),
    description: Type.Optional(Type.String()),
    required: Type.Boolean(),
    choices: Type.Optional(Type.Array(ChoiceSchema, { description: 'multiple_choice, checkboxes, dropdown' })),
    min: Type.Optional(Type.Number({ description: 'number, linear_scale' })),
    max: Type.Optional(Type.Number({ description: 'number, rating, linear_scale' })),
    minLabel: Type.Optional(Type.String({ description: 'rating, linear_scale: label of the low end' })),
    maxLabel: Type.Optional(Type.String({ description: 'rating, linear_scale: label of the high end' })),
    showIf: Type.Optional(
      ConditionOutputSchema(
        'Shown only when this condition holds (blocks named by ref where they have one, choices by id).',
      ),
    ),
    jumps: Type.Optional(
      Type.Array(
        Type.Object(
          {
            if: ConditionOutputSchema('A condition.'),
            to: Type.String({ description: 'A later page_break\'s ref (or id), or "end".' }),
          },
          { additionalProperties: false },
        ),
        { description: 'page_break: jumps tried in order when leaving the page this page_break closes.' },
      ),
    ),
  },
  { additionalProperties: false },
);

export const FormStatusSchema = StringEnum(FORM_STATUSES);
const Timestamp = Type.String({ format: 'date-time' });

const formFields = {
  publicId: Type.String(),
  url: Type.String({
    format: 'uri',
    description: "The form's share link (PUBLIC_URL/f/{publicId}), where people answer it while it is published.",
  }),
  title: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  status: FormStatusSchema,
  version: Type.Integer({
    description: 'Bumped on every change; send it back to update_form to detect conflicting edits.',
  }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  publishedAt: Type.Union([Timestamp, Type.Null()]),
  closedAt: Type.Union([Timestamp, Type.Null()]),
};

export const FormSummarySchema = Type.Object(
  {
    ...formFields,
    responseCount: Type.Integer({ minimum: 0, description: 'How many responses the form has now.' }),
    lastResponseAt: Type.Union([Timestamp, Type.Null()], {
      description: 'When its latest response was submitted; null before the first.',
    }),
  },
  { additionalProperties: false },
);
export const FormSchema = Type.Object(
  {
    ...formFields,
    hiddenFields: Type.Optional(
      Type.Array(Type.String(), {
        description: 'Names of the hidden fields responses carry (present when there are any).',
      }),
    ),
    blocks: Type.Array(BlockSchema),
  },
  { additionalProperties: false },
);

/** The arguments of the tools that act on one form. */
export const FormRef = Type.Object({ publicId: PublicId }, { additionalProperties: false });

/** A block as callers send it: choices as labels or { id?, label }; an id only for a block the form has. */
export const BlockInputSchema = Type.Object(
  {
    id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'Keep the id of an existing block to keep its answers; omit it for a new block.',
      }),
    ),
    ref: Type.Optional(
      Type.Union([Type.String({ pattern: REF_PATTERN, maxLength: 64 }), Type.Null()], {
        description:
          'Your own stable key for the block (lower-case letters, digits, _; not starting with b_), unique in the form. Conditions, jumps and answers may name the block by it; in update_form a block sent with a known ref and no id is that block. Kept when omitted; null removes it.',
      }),
    ),
    type: StringEnum(BLOCK_TYPES),
    title: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1000, description: 'Required on every block except a page_break.' }),
    ),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 5000 }), Type.Null()])),
    required: Type.Optional(Type.Boolean({ default: false })),
    choices: Type.Optional(
      Type.Array(
        Type.Union([
          Type.String({ minLength: 1, maxLength: 500 }),
          Type.Object(
            {
              id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
              label: Type.String({ minLength: 1, maxLength: 500 }),
            },
            { additionalProperties: false },
          ),
        ]),
        {
          maxItems: 200,
          description:
            'multiple_choice, checkboxes, dropdown: labels, or { id, label } to keep (or rename) an existing choice.',
        },
      ),
    ),
    min: Type.Optional(Type.Number({ description: 'number (any), linear_scale (0 or 1)' })),
    max: Type.Optional(Type.Number({ description: 'number (any), rating (3..10, default 5), linear_scale (2..10)' })),
    minLabel: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'rating, linear_scale: label of the low end ("Unlikely")',
      }),
    ),
    maxLabel: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'rating, linear_scale: label of the high end ("Very likely")',
      }),
    ),
    showIf: Type.Optional(
      ConditionSchema(
        `The block (or, on a page_break, the page it starts) is shown only when this condition holds; it may name only blocks before it. ${CONDITION_DESCRIPTION}`,
      ),
    ),
    jumps: Type.Optional(
      Type.Array(
        Type.Object(
          {
            if: ConditionSchema('Condition on blocks before this page_break (and hidden fields), as in showIf.'),
            to: Type.String({
              minLength: 1,
              maxLength: 64,
              description: 'The ref or id of a LATER page_break (its page comes next), or "end" to finish the form.',
            }),
          },
          { additionalProperties: false },
        ),
        {
          maxItems: MAX_JUMPS,
          description:
            'page_break only: tried in order when the respondent leaves the page this page_break closes (the blocks before it); the first whose if holds is taken; none: the next page follows.',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

/** A form's hidden fields as callers send them. */
export const HiddenFieldsSchema = (description?: string) =>
  Type.Array(Type.String({ pattern: REF_PATTERN, maxLength: 64 }), {
    maxItems: MAX_HIDDEN_FIELDS,
    description:
      description ??
      `Names of values a response carries besides its answers (like refs; at most ${MAX_HIDDEN_FIELDS}): the respondent page takes them from its URL (?source=newsletter), create_response from hidden. Conditions test them with { "hidden": name, "op", "value" }.`,
  });

export const FormTitle = Type.String({ minLength: 1, maxLength: 500 });
export const FormDescription = Type.Union([Type.String({ maxLength: 5000 }), Type.Null()]);

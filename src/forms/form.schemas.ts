import { Type } from '@sinclair/typebox';
import { StringEnum } from '../common/validation/schema-validator';
import { BLOCK_TYPES } from './blocks';
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
    type: StringEnum(BLOCK_TYPES),
    title: Type.String(),
    description: Type.Optional(Type.String()),
    required: Type.Boolean(),
    choices: Type.Optional(Type.Array(ChoiceSchema, { description: 'multiple_choice, checkboxes, dropdown' })),
    min: Type.Optional(Type.Number({ description: 'number, linear_scale' })),
    max: Type.Optional(Type.Number({ description: 'number, rating, linear_scale' })),
  },
  { additionalProperties: false },
);

export const FormStatusSchema = StringEnum(FORM_STATUSES);
const Timestamp = Type.String({ format: 'date-time' });

const formFields = {
  publicId: Type.String(),
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

export const FormSummarySchema = Type.Object(formFields, { additionalProperties: false });
export const FormSchema = Type.Object(
  { ...formFields, blocks: Type.Array(BlockSchema) },
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
    type: StringEnum(BLOCK_TYPES),
    title: Type.String({ minLength: 1, maxLength: 1000 }),
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
  },
  { additionalProperties: false },
);

export const FormTitle = Type.String({ minLength: 1, maxLength: 500 });
export const FormDescription = Type.Union([Type.String({ maxLength: 5000 }), Type.Null()]);

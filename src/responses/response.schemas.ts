import { Type } from '@sinclair/typebox';
import { StringEnum } from '../common/validation/schema-validator';
import { PublicId } from '../forms/form.schemas';

export const ResponseId = Type.String({ minLength: 1, maxLength: 64 });

export const ResponseSchema = Type.Object(
  {
    id: Type.String(),
    submittedAt: Type.String({ format: 'date-time' }),
    answers: Type.Unsafe<Record<string, unknown>>({
      type: 'object',
      description:
        'By block id (or ref, with answersBy "ref"), in the shapes create_response takes (choices by label); blocks not shown on its path have none.',
    }),
    hidden: Type.Optional(
      Type.Unsafe<Record<string, string>>({
        type: 'object',
        additionalProperties: { type: 'string' },
        description: 'The hidden field values it came with.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** How read tools key answers. */
export const AnswersBy = StringEnum(['id', 'ref'] as const, {
  default: 'id',
  description: 'Key answers by block id or by ref (a block without one stays under its id).',
});

/** The arguments of the tools that act on one response. */
export const ResponseRef = Type.Object({ publicId: PublicId, responseId: ResponseId }, { additionalProperties: false });

import { Type } from '@sinclair/typebox';
import { StringEnum } from '../common/validation/schema-validator';
import { PublicId } from '../forms/form.schemas';

export const ResponseId = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'Id of the response (from list_responses).',
});

export const ResponseSchema = Type.Object(
  {
    id: Type.String(),
    submittedAt: Type.String({ format: 'date-time' }),
    answers: Type.Record(Type.String(), Type.Unknown(), {
      description:
        'Answers by block id (or by ref with answersBy "ref"): text, number, the chosen label, a list of labels (checkboxes), an integer (rating, scale), a date, or a boolean. Blocks not shown on the response\'s path have no answer.',
    }),
    hidden: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        description: 'Hidden field values the response came with (on forms with hiddenFields).',
      }),
    ),
  },
  { additionalProperties: false },
);

/** How read tools key answers. */
export const AnswersBy = StringEnum(['id', 'ref'] as const, {
  default: 'id',
  description:
    'Key answers by block id (default) or by the block\'s ref ("ref"; a block without a ref stays under its id).',
});

/** The arguments of the tools that act on one response. */
export const ResponseRef = Type.Object({ publicId: PublicId, responseId: ResponseId }, { additionalProperties: false });

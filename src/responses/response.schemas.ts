import { Type } from '@sinclair/typebox';
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
        'Answers by block id: text, number, the chosen label, a list of labels (checkboxes), an integer (rating, scale), a date, or a boolean.',
    }),
  },
  { additionalProperties: false },
);

/** The arguments of the tools that act on one response. */
export const ResponseRef = Type.Object({ publicId: PublicId, responseId: ResponseId }, { additionalProperties: false });

import { Type } from '@sinclair/typebox';
import { StringEnum } from '../common/validation/schema-validator';
import { PublicId } from '../forms/form.schemas';

export const ResponseId = Type.String({ minLength: 1, maxLength: 64 });

/** What a response to a form that computes carries (issue 46): computed by the server, never sent. */
export const outcomeFields = {
  variables: Type.Optional(Type.Unsafe<Record<string, number | string>>({ type: 'object' })),
  ending: Type.Optional(Type.Union([Type.String(), Type.Null()])),
};

export const ResponseSchema = Type.Object(
  {
    id: Type.String(),
    submittedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'null on a partial.' }),
    answers: Type.Unsafe<Record<string, unknown>>({
      type: 'object',
      description:
        'By block id (or ref: answersBy), as create_response takes them (choices by label); none for blocks off its path.',
    }),
    hidden: Type.Optional(
      Type.Unsafe<Record<string, string>>({
        type: 'object',
        additionalProperties: { type: 'string' },
        description: 'The hidden field values it came with.',
      }),
    ),
    status: Type.Optional(
      StringEnum(['partial', 'completed'] as const, { description: 'partial: not yet completed.' }),
    ),
    startedAt: Type.Optional(
      Type.String({ format: 'date-time', description: 'Its first save (a response never partial: submittedAt).' }),
    ),
    updatedAt: Type.Optional(Type.String({ format: 'date-time' })),
    lastPage: Type.Optional(
      Type.String({ description: "The furthest page it reached: '' the first, else a page_break id." }),
    ),
    ...outcomeFields,
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

/** Which responses a read covers (issue 36). */
export const ResponseStatus = StringEnum(['completed', 'partial', 'all'] as const, {
  default: 'completed',
  description: 'completed (default), partial (not yet completed) or all (completed, then partial).',
});

/** list_responses' status: also the posts judged as spam (issue 47). */
export const ListStatus = StringEnum(['completed', 'partial', 'all', 'spam'] as const, {
  default: 'completed',
  description: 'completed (default), partial (not yet completed) or all (completed, then partial).',
});

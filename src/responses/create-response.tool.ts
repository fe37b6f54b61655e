import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { ApiError } from '../common/errors/api-error';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { ResponseSchema } from './response.schemas';
import { ResponsesService } from './responses.service';
import { PartialResponsesService } from './partial-responses.service';
import { IdempotencyService } from '../idempotency/idempotency.service';

const input = Type.Object(
  {
    publicId: PublicId,
    answers: Type.Unsafe<Record<string, unknown>>({
      type: 'object',
      description:
        'Answers by block id or ref (answered keyed as sent): a string for text types, a number for number, the chosen label (or choice id) for multiple_choice and dropdown, a list of them for checkboxes, an integer for rating, linear_scale, nps, "YYYY-MM-DD" for date, true/false for yes_no.',
    }),
    hidden: Type.Optional(
      Type.Unsafe<Record<string, string>>({
        type: 'object',
        additionalProperties: { type: 'string', maxLength: 1000 },
        description: "Values of the form's hidden fields: { name: value } (undeclared names are refused).",
      }),
    ),
    invite: Type.Optional(Type.String({ maxLength: 100, description: "An invite link's secret: answers it once." })),
    partial: Type.Optional(
      Type.Boolean({
        description:
          'Store a partial response (form setting partialResponses on): checked the same, but required is not enforced; continue it with update_response.',
      }),
    ),
  },
  { additionalProperties: false },
);
const output = ResponseSchema;

@Tool({
  name: 'create_response',
  title: 'Create a response',
  description:
    "Stores a response to a form (scripted imports and tests; people answer on the form's page), on any status. Each answer is checked against its block; if any is invalid nothing is stored and details name each one. On a form with rules, required applies only to blocks shown, and an answer to a block the answers do not show (its showIf fails, or a jump skips its page) is refused, with a hint naming the rule.",
  scope: 'responses:write',
  write: true,
  input,
  output,
})
export class CreateResponseTool implements ToolHandler<typeof input, typeof output> {
  constructor(
    private readonly responses: ResponsesService,
    private readonly partials: PartialResponsesService,
    idempotency: IdempotencyService,
  ) {
    // A keyed submission claims its key in the insert statement that stores it (partials: the usual way).
    idempotency.claimInStatement('create_response', (args) => {
      const { partial, invite } = args as Static<typeof input>;
      return !partial && invite === undefined;
    });
  }

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    if (args.partial) {
      if (args.invite !== undefined)
        throw new ApiError('invalid_arguments', {
          message: 'An invitation is answered by a completed response, not a partial.',
          details: [{ path: '/partial', message: 'must be left out with invite' }],
        });
      return this.partials.createAs(ctx.principal, args.publicId, args.answers, args.hidden);
    }
    return this.responses.createAs(ctx.principal, args.publicId, args.answers, args.hidden, args.invite);
  }
}

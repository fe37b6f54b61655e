import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { StringEnum } from '../common/validation/schema-validator';
import { pageArguments, pageFields } from '../tools/paging';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { responseFilterArguments } from './response-filter';
import { AnswersBy, ResponseSchema } from './response.schemas';
import { ResponsesService } from './responses.service';

const input = Type.Object(
  {
    publicId: PublicId,
    ...pageArguments(200, 50, "Start position; add the previous page's count to get the next page."),
    order: Type.Optional(
      StringEnum(['oldest', 'newest'] as const, {
        default: 'oldest',
        description: 'oldest first (stable for walking every response) or newest first.',
      }),
    ),
    ...responseFilterArguments,
    answersBy: Type.Optional(AnswersBy),
  },
  { additionalProperties: false },
);
const output = Type.Object({ ...pageFields, responses: Type.Array(ResponseSchema) }, { additionalProperties: false });

@Tool({
  name: 'list_responses',
  title: 'List responses',
  description:
    'Pages through the responses of a form, ordered by submission time. To read them all, start at offset 0 and add count to offset until offset reaches total. ' +
    'Filter with where (a condition on answers or hidden fields, the language of form logic: e.g. people who rated 2 or less, { "block": "rating", "op": "lte", "value": 2 }), since (inclusive) and until (exclusive) on submittedAt: total is then the number of matches, and the same walk sees each exactly once. ' +
    'For counts and averages use summarize_responses (it takes the same filters), which is much cheaper.',
  scope: 'responses:read',
  write: false,
  input,
  output,
})
export class ListResponsesTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly responses: ResponsesService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    const offset = args.offset ?? 0;
    const { total, responses } = await this.responses.list(ctx.principal.workspace.id, args.publicId, {
      limit: args.limit ?? 50,
      offset,
      order: args.order ?? 'oldest',
      filter: { where: args.where, since: args.since, until: args.until },
      answersBy: args.answersBy,
    });
    return { total, offset, count: responses.length, responses };
  }
}

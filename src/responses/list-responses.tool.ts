import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { StringEnum } from '../common/validation/schema-validator';
import { pageArguments, pageFields } from '../tools/paging';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { responseFilterArguments } from './response-filter';
import { AnswersBy, ListStatus, ResponseSchema } from './response.schemas';
import { ResponsesService } from './responses.service';
import { readerOf } from '../files/file-links';

const input = Type.Object(
  {
    publicId: PublicId,
    ...pageArguments(200, 50),
    order: Type.Optional(
      StringEnum(['oldest', 'newest'] as const, {
        default: 'oldest',
        description: 'oldest first (stable for walking every response) or newest first.',
      }),
    ),
    ...responseFilterArguments,
    answersBy: Type.Optional(AnswersBy),
    status: Type.Optional(ListStatus),
  },
  { additionalProperties: false },
);
const output = Type.Object({ ...pageFields, responses: Type.Array(ResponseSchema) }, { additionalProperties: false });

@Tool({
  name: 'list_responses',
  title: 'List responses',
  description:
    'Pages through the responses of a form in submission order. To read them all, start at offset 0 and add count to offset until offset reaches total; ' +
    'with a filter (where, since, until), total counts the matches and the walk sees each exactly once. ' +
    'For counts and averages, summarize_responses (same filters) is much cheaper; for bulk reads, export_responses.',
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
      reader: readerOf(ctx.principal),
      status: args.status,
    });
    return { total, offset, count: responses.length, responses };
  }
}

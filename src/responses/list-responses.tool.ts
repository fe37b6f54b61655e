import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { ApiError } from '../common/errors/api-error';
import { StringEnum } from '../common/validation/schema-validator';
import { pageArguments, pageFields } from '../tools/paging';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
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
    since: Type.Optional(
      Type.String({ format: 'date-time', description: 'Only responses submitted at or after this time.' }),
    ),
    answersBy: Type.Optional(AnswersBy),
  },
  { additionalProperties: false },
);
const output = Type.Object({ ...pageFields, responses: Type.Array(ResponseSchema) }, { additionalProperties: false });

@Tool({
  name: 'list_responses',
  title: 'List responses',
  description:
    'Pages through the responses of a form, ordered by submission time. To read them all, start at offset 0 and add count to offset until offset reaches total. For counts and averages use summarize_responses, which is much cheaper.',
  scope: 'responses:read',
  write: false,
  input,
  output,
})
export class ListResponsesTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly responses: ResponsesService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    const offset = args.offset ?? 0;
    if (args.since !== undefined) checkSince(args.since);
    const { total, responses } = await this.responses.list(ctx.principal.workspace.id, args.publicId, {
      limit: args.limit ?? 50,
      offset,
      order: args.order ?? 'oldest',
      since: args.since,
      answersBy: args.answersBy,
    });
    return { total, offset, count: responses.length, responses };
  }
}

/** The widest UTC offset PostgreSQL reads in a timestamp (RFC 3339 allows up to ±23:59; real zones stop at +14:00). */
const MAX_OFFSET_MINUTES = 15 * 60 + 59;

/** `since` as PostgreSQL can take it (the schema has already checked it is an RFC 3339 date-time). */
function checkSince(since: string): void {
  const offset = /[+-](\d{2}):?(\d{2})?$/.exec(since); // +hh:mm, +hhmm or +hh, as the format allows
  if (offset && Number(offset[1]) * 60 + Number(offset[2] ?? 0) > MAX_OFFSET_MINUTES) {
    throw new ApiError('invalid_arguments', {
      message: 'since has a UTC offset out of range.',
      hint: 'Give the time in UTC (ending in Z), or with an offset between -15:59 and +15:59.',
      details: [{ path: '/since', message: 'must have a UTC offset between -15:59 and +15:59' }],
    });
  }
  const year = new Date(since).getUTCFullYear();
  if (!(year >= 1 && year <= 9999)) {
    throw new ApiError('invalid_arguments', {
      message: 'since is out of range.',
      details: [{ path: '/since', message: 'must be a date-time between the years 1 and 9999' }],
    });
  }
}

import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { APP_VIEWS } from '../apps/view-uris';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { responseFilterArguments } from '../responses/response-filter';
import { ResponsesService } from '../responses/responses.service';
import { ResponseStatus } from '../responses/response.schemas';
import type { FormSummary, VariableSummary } from './summarize';

const input = Type.Object(
  { publicId: PublicId, ...responseFilterArguments, status: Type.Optional(ResponseStatus) },
  { additionalProperties: false },
);
const Nullable = <T extends ReturnType<typeof Type.Number>>(t: T) => Type.Union([t, Type.Null()]);
const output = Type.Object(
  {
    publicId: Type.String(),
    total: Type.Integer({ minimum: 0 }),
    firstSubmittedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    lastSubmittedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    medianSecondsToComplete: Nullable(
      Type.Number({
        description:
          'Median seconds from first save to completion, of the completed responses that started as partials; null: none did.',
      }),
    ),
    blocks: Type.Array(
      Type.Object(
        {
          blockId: Type.String(),
          type: Type.String(),
          title: Type.String(),
          answered: Type.Integer({ minimum: 0 }),
          shown: Type.Optional(
            Type.Integer({
              minimum: 0,
              description: 'On forms with rules: responses shown this block (skipped = shown - answered); absent: all.',
            }),
          ),
          skipped: Type.Integer({ minimum: 0 }),
          choices: Type.Optional(
            Type.Array(
              Type.Object(
                {
                  id: Type.String(),
                  label: Type.String(),
                  count: Type.Integer(),
                  share: Type.Number({ description: 'count / answered' }),
                },
                { additionalProperties: false },
              ),
            ),
          ),
          yes: Type.Optional(Type.Integer()),
          no: Type.Optional(Type.Integer()),
          min: Type.Optional(Type.Union([Type.Number(), Type.String(), Type.Null()])),
          max: Type.Optional(Type.Union([Type.Number(), Type.String(), Type.Null()])),
          mean: Type.Optional(Nullable(Type.Number())),
          distribution: Type.Optional(
            Type.Array(
              Type.Object(
                { value: Type.Integer(), count: Type.Integer({ minimum: 0 }) },
                { additionalProperties: false },
              ),
              {
                description:
                  'Rating and linear scale: the answers per value of the scale, lowest value first (values no one gave count 0).',
              },
            ),
          ),
          latest: Type.Optional(
            Type.Array(
              Type.Object(
                { value: Type.String(), submittedAt: Type.String({ format: 'date-time' }) },
                { additionalProperties: false },
              ),
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    // { limit, count } and [{ name, limit, count }] (issue 47): terse, for the tool list's size budget.
    cap: Type.Optional(Type.Unsafe<{ limit: number; count: number }>({ type: 'object' })),
    quotas: Type.Optional(Type.Array(Type.Unsafe<{ name: string; limit: number; count: number }>({ type: 'object' }))),
    // Forms that compute (issue 46): VariableSummary and ending counts (docs/tools.md; untyped here: the list's size).
    variables: Type.Optional(Type.Array(Type.Unsafe<VariableSummary>({ type: 'object' }))),
    endings: Type.Optional(Type.Array(Type.Unsafe<NonNullable<FormSummary['endings']>[number]>({ type: 'object' }))),
    funnel: Type.Optional(
      Type.Array(
        Type.Object(
          {
            page: Type.String(),
            title: Type.Optional(Type.String()),
            reached: Type.Integer(),
            completed: Type.Integer(),
          },
          { additionalProperties: false },
        ),
        {
          description:
            "Forms with partialResponses: per page ('' the first, else its page_break id), responses that reached it and how many of those completed. Not filtered.",
        },
      ),
    ),
  },
  { additionalProperties: false },
);

@Tool({
  name: 'summarize_responses',
  title: 'Summarize responses',
  description:
    "Aggregates of a form's responses per block: answered and skipped counts, counts and shares per choice, min/max/mean of numbers, ratings and scales, the latest text answers. " +
    'With where, since or until, the same summary of the matching responses (a segment: e.g. how the people who answered Yes rated us). ' +
    'Unfiltered it is instant (maintained totals).',
  scope: 'responses:read',
  ui: { resourceUri: APP_VIEWS.results },
  write: false,
  input,
  output,
})
export class SummarizeResponsesTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly responses: ResponsesService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.responses.summarize(
      ctx.principal.workspace.id,
      args.publicId,
      {
        where: args.where,
        since: args.since,
        until: args.until,
      },
      args.status,
    );
  }
}

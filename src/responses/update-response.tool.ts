import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { PublicId } from '../forms/form.schemas';
import { ResponseId, ResponseSchema } from './response.schemas';
import { PartialResponsesService } from './partial-responses.service';

const input = Type.Object(
  {
    publicId: PublicId,
    responseId: ResponseId,
    answers: Type.Unsafe<Record<string, unknown>>({
      type: 'object',
      description: 'The answers to change, as create_response takes them; null clears one. Others stay as stored.',
    }),
    hidden: Type.Optional(
      Type.Unsafe<Record<string, string>>({
        type: 'object',
        description: 'Replaces the hidden values; omitted: kept.',
      }),
    ),
    complete: Type.Optional(
      Type.Boolean({ description: 'Complete it (required enforced): it then counts everywhere.' }),
    ),
  },
  { additionalProperties: false },
);
const output = ResponseSchema;

@Tool({
  name: 'update_response',
  title: 'Update a partial response',
  description:
    'Changes answers of a partial response (create_response partial: true, or saved by the form page): only those sent change, null clears one. May complete it, or restore spam. A completed response is refused (409 response_completed).',
  scope: 'responses:write',
  write: true,
  input,
  output,
  annotations: { destructiveHint: true },
})
export class UpdateResponseTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly partials: PartialResponsesService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.partials.updateAs(ctx.principal, args.publicId, args.responseId, args);
  }
}

import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { AnswersBy, ResponseId, ResponseSchema } from './response.schemas';
import { PublicId } from '../forms/form.schemas';
import { ResponsesService } from './responses.service';
import { readerOf } from '../files/file-links';

const input = Type.Object(
  { publicId: PublicId, responseId: ResponseId, answersBy: Type.Optional(AnswersBy) },
  { additionalProperties: false },
);
const output = ResponseSchema;

@Tool({
  name: 'get_response',
  title: 'Get a response',
  description: 'Returns one response of a form with its answers and hidden field values.',
  scope: 'responses:read',
  write: false,
  input,
  output,
})
export class GetResponseTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly responses: ResponsesService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.responses.get(
      ctx.principal.workspace.id,
      args.publicId,
      args.responseId,
      args.answersBy,
      readerOf(ctx.principal),
    );
  }
}

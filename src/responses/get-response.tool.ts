import { Static } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { ResponseRef, ResponseSchema } from './response.schemas';
import { ResponsesService } from './responses.service';

const input = ResponseRef;
const output = ResponseSchema;

@Tool({
  name: 'get_response',
  title: 'Get a response',
  description: 'Returns one response of a form with its answers by block id.',
  scope: 'responses:read',
  write: false,
  input,
  output,
})
export class GetResponseTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly responses: ResponsesService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.responses.get(ctx.principal.workspace.id, args.publicId, args.responseId);
  }
}

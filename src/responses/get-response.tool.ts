import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { ResponseId, ResponseSchema } from './response.schemas';
import { ResponsesService } from './responses.service';

const input = Type.Object({ publicId: PublicId, responseId: ResponseId }, { additionalProperties: false });
const output = ResponseSchema;

@Tool({
  name: 'get_response',
  title: 'Get a response',
  description: 'Returns one response of a form with its answers by block id.',
  scope: 'responses:read',
  write: false,
  minRole: 'viewer',
  input,
  output,
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
})
export class GetResponseTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly responses: ResponsesService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.responses.get(ctx.principal.workspace.id, args.publicId, args.responseId);
  }
}

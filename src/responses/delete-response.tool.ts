import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { ResponseRef } from './response.schemas';
import { ResponsesService } from './responses.service';

const input = ResponseRef;
const output = Type.Object({ id: Type.String(), deleted: Type.Literal(true) }, { additionalProperties: false });

@Tool({
  name: 'delete_response',
  title: 'Delete a response',
  description: 'Deletes one response of a form, for good.',
  scope: 'responses:write',
  write: true,
  input,
  output,
  annotations: { destructiveHint: true },
})
export class DeleteResponseTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly responses: ResponsesService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.responses.removeAs(ctx.principal, args.publicId, args.responseId);
  }
}

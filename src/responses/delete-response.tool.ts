import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { ResponseId } from './response.schemas';
import { ResponsesService } from './responses.service';

const input = Type.Object({ publicId: PublicId, responseId: ResponseId }, { additionalProperties: false });
const output = Type.Object({ id: Type.String(), deleted: Type.Literal(true) }, { additionalProperties: false });

@Tool({
  name: 'delete_response',
  title: 'Delete a response',
  description: 'Deletes one response of a form, for good.',
  scope: 'responses:write',
  write: true,
  minRole: 'editor',
  input,
  output,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
})
export class DeleteResponseTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly responses: ResponsesService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.responses.removeAs(ctx.principal, args.publicId, args.responseId);
  }
}

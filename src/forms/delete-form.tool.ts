import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { FormRef } from './form.schemas';
import { FormsService } from './forms.service';

const input = FormRef;
const output = Type.Object(
  { publicId: Type.String(), deleted: Type.Literal(true), responsesDeleted: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);

@Tool({
  name: 'delete_form',
  title: 'Delete a form',
  description: 'Deletes a form with all its responses, for good. Needs the admin role.',
  scope: 'forms:write',
  write: true,
  minRole: 'admin',
  input,
  output,
  annotations: { destructiveHint: true },
})
export class DeleteFormTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly forms: FormsService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.forms.remove(ctx.principal, args.publicId);
  }
}

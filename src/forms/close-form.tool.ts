import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { FormSchema, PublicId } from './form.schemas';
import { formView, FormsService } from './forms.service';

const input = Type.Object({ publicId: PublicId }, { additionalProperties: false });
const output = FormSchema;

@Tool({
  name: 'close_form',
  title: 'Close a form',
  description:
    'Stops a published form from taking responses (its responses stay). publish_form reopens it. Closing a closed form changes nothing.',
  scope: 'forms:write',
  write: true,
  minRole: 'editor',
  input,
  output,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
})
export class CloseFormTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly forms: FormsService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return formView(await this.forms.transition(ctx.principal, args.publicId, 'closed'), true) as Static<typeof output>;
  }
}

import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { FormSchema, FormTitle, PublicId } from './form.schemas';
import { FormsService } from './forms.service';

const input = Type.Object({ publicId: PublicId, title: Type.Optional(FormTitle) }, { additionalProperties: false });
const output = FormSchema;

@Tool({
  name: 'duplicate_form',
  title: 'Duplicate a form',
  description:
    'Makes a draft copy of a form: blocks, logic and settings with new ids, titled title (default: its title + " (copy)"); not its schedule or responses.',
  scope: 'forms:write',
  write: true,
  input,
  output,
})
export class DuplicateFormTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly forms: FormsService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.forms.view(await this.forms.duplicateAs(ctx.principal, args.publicId, args.title), true) as Static<
      typeof output
    >;
  }
}

import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { FormSchema, PublicId } from './form.schemas';
import { formView, FormsService } from './forms.service';

const input = Type.Object({ publicId: PublicId }, { additionalProperties: false });
const output = FormSchema;

@Tool({
  name: 'publish_form',
  title: 'Publish a form',
  description:
    'Publishes a draft form so it takes responses, or reopens a closed one. Publishing a published form changes nothing.',
  scope: 'forms:write',
  write: true,
  minRole: 'editor',
  input,
  output,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
})
export class PublishFormTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly forms: FormsService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return formView(await this.forms.transition(ctx.principal, args.publicId, 'published'), true) as Static<
      typeof output
    >;
  }
}

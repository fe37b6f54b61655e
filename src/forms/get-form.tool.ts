import { Static, Type } from '@sinclair/typebox';
import { APP_VIEWS } from '../apps/view-uris';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { FormSchema, PublicId } from './form.schemas';
import { FormsService } from './forms.service';

const input = Type.Object(
  {
    publicId: PublicId,
    language: Type.Optional(Type.String({ maxLength: 35, description: 'Texts in this language.' })),
  },
  { additionalProperties: false },
);
const output = FormSchema;

@Tool({
  name: 'get_form',
  title: 'Get a form',
  description: 'Returns one form with its blocks in order.',
  scope: 'forms:read',
  ui: { resourceUri: APP_VIEWS.formPreview },
  write: false,
  input,
  output,
})
export class GetFormTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly forms: FormsService) {}

  /** The view of the form's current version, made (and serialized) once per version: FormsService.getView. */
  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    const view = args.language
      ? await this.forms.getViewIn(ctx.principal.workspace.id, args.publicId, args.language)
      : await this.forms.getView(ctx.principal.workspace.id, args.publicId);
    return view as Static<typeof output>;
  }
}

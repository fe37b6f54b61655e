import { Static } from '@sinclair/typebox';
import { APP_VIEWS } from '../apps/view-uris';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { FormRef, FormSchema } from './form.schemas';
import { FormRecord, FormsService } from './forms.service';

const input = FormRef;
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

  /**
   * The answer per version of a form: FormsRepository gives the same blocks array for as long as
   * a form stays at a version, so the view is built once (by FormsService.view, as every form
   * tool's answer) and served as it is while the form's row, read fresh on each call, is the same.
   */
  private readonly views = new WeakMap<FormRecord['blocks'], { row: string; view: Static<typeof output> }>();

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    const form = await this.forms.get(ctx.principal.workspace.id, args.publicId);
    const row = JSON.stringify(form, (key, value: unknown) => (key === 'blocks' ? undefined : value));
    const kept = this.views.get(form.blocks);
    if (kept?.row === row) return kept.view;
    const view = this.forms.view(form, true) as Static<typeof output>;
    this.views.set(form.blocks, { row, view });
    return view;
  }
}

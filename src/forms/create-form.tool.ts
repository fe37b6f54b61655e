import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { BlockInputSchema, FormDescription, FormSchema, FormTitle } from './form.schemas';
import { formView, FormsService } from './forms.service';

const input = Type.Object(
  {
    title: FormTitle,
    description: Type.Optional(FormDescription),
    blocks: Type.Optional(
      Type.Array(BlockInputSchema, {
        maxItems: 200,
        description: 'The blocks in order. Formwork assigns every block and choice its id.',
      }),
    ),
  },
  { additionalProperties: false },
);
const output = FormSchema;

@Tool({
  name: 'create_form',
  title: 'Create a form',
  description:
    'Creates a draft form with its blocks. Block types: short_text, long_text, email, url, phone, number (min, max), multiple_choice, checkboxes, dropdown (choices), rating (max 3..10), linear_scale (min 0|1, max 2..10), date, yes_no, statement. The result shows every block and choice with its new id. Publish it with publish_form.',
  scope: 'forms:write',
  write: true,
  input,
  output,
})
export class CreateFormTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly forms: FormsService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return formView(await this.forms.createAs(ctx.principal, args), true) as Static<typeof output>;
  }
}

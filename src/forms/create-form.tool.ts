import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { BlockInputSchema, FormDescription, FormSchema, FormTitle, HiddenFieldsSchema } from './form.schemas';
import { FormsService } from './forms.service';

const input = Type.Object(
  {
    title: FormTitle,
    description: Type.Optional(FormDescription),
    blocks: Type.Optional(
      Type.Array(BlockInputSchema, {
        maxItems: 200,
        description:
          'The blocks in order. Formwork assigns every block and choice its id; give a block a ref to name it in rules and answers before any id exists.',
      }),
    ),
    hiddenFields: Type.Optional(HiddenFieldsSchema()),
  },
  { additionalProperties: false },
);
const output = FormSchema;

@Tool({
  name: 'create_form',
  title: 'Create a form',
  description:
    'Creates a draft form with its blocks. Block types: short_text, long_text, email, url, phone, number (min, max), multiple_choice, checkboxes, dropdown (choices), rating (max 3..10), linear_scale (min 0|1, max 2..10; rating and linear_scale take minLabel, maxLabel), date, yes_no, statement (text only), page_break (starts a new page; optional title, description). The result shows every block and choice with its new id. Publish it with publish_form.\n\n' +
    'Logic: give blocks a ref (your own key, e.g. "likes") to name them before ids exist. showIf on a block (or a page_break: its whole page) shows it only when a condition holds; jumps on a page_break are tried when leaving the page it closes: the first whose if holds goes to a later page_break (by ref) or "end". Conditions name only earlier blocks: { "block": ref, "op", "value" } or { "hidden": name, "op", "value" }, combined with all/any/not. hiddenFields declares values a response carries (from the page URL ?source=..., or create_response hidden). A rule that does not fit is refused (400 invalid_arguments) at its JSON path.\n\n' +
    'Example (skip to the end on No, ask why only on a low score, tag the source):\n' +
    '{"title":"Feedback","hiddenFields":["source"],"blocks":[' +
    '{"ref":"happy","type":"yes_no","title":"Did you enjoy it?","required":true},' +
    '{"type":"page_break","title":"Details","jumps":[{"if":{"block":"happy","op":"equals","value":false},"to":"end"}]},' +
    '{"ref":"score","type":"rating","title":"How much?","max":5,"minLabel":"A bit","maxLabel":"A lot"},' +
    '{"ref":"why","type":"long_text","title":"What could be better?","showIf":{"any":[{"block":"score","op":"lte","value":2},{"hidden":"source","op":"equals","value":"support"}]}}]}',
  scope: 'forms:write',
  write: true,
  input,
  output,
})
export class CreateFormTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly forms: FormsService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.forms.view(await this.forms.createAs(ctx.principal, args), true) as Static<typeof output>;
  }
}

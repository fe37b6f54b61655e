import { Static, Type } from '@sinclair/typebox';
import { APP_VIEWS } from '../apps/view-uris';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import {
  BlockInputSchema,
  computeArguments,
  DryRunArgument,
  FormDescription,
  FormSchema,
  FormTitle,
  HiddenFieldsSchema,
  ScheduleFields,
  LimitFields,
  SpamProtectionField,
  ReceiptField,
  LanguagesField,
} from './form.schemas';
import { FormsService } from './forms.service';
import { PartialResponsesSetting } from './partial-setting';

const input = Type.Object(
  {
    title: FormTitle,
    description: Type.Optional(FormDescription),
    blocks: Type.Optional(Type.Array(BlockInputSchema, { maxItems: 200, description: 'The blocks, in order.' })),
    hiddenFields: Type.Optional(HiddenFieldsSchema()),
    partialResponses: Type.Optional(PartialResponsesSetting),
    ...computeArguments,
    ...ScheduleFields,
    ...LimitFields,
    ...SpamProtectionField,
    ...ReceiptField,
    ...LanguagesField,
    dryRun: DryRunArgument,
  },
  { additionalProperties: false },
);
const output = FormSchema;

@Tool({
  name: 'create_form',
  title: 'Create a form',
  description:
    'Creates a draft form (publish_form publishes it); the answer gives each block and choice its id.\n\nExample:\n' +
    '{"title":"Feedback","blocks":[' +
    '{"ref":"happy","type":"yes_no","title":"Enjoyed it?","required":true},' +
    '{"type":"page_break","jumps":[{"if":{"block":"happy","op":"equals","value":false},"to":"end"}]},' +
    '{"ref":"score","type":"rating","title":"How much?"},' +
    '{"ref":"why","type":"long_text","title":"Why?","showIf":{"block":"score","op":"lte","value":2}}]}',
  scope: 'forms:write',
  ui: { resourceUri: APP_VIEWS.formPreview },
  write: true,
  input,
  output,
})
export class CreateFormTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly forms: FormsService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    if (args.dryRun) return this.forms.createDryRun(ctx.principal.workspace.id, args) as Static<typeof output>;
    return this.forms.view(await this.forms.createAs(ctx.principal, args), true) as Static<typeof output>;
  }
}

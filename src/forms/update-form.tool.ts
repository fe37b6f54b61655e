import { Static, Type } from '@sinclair/typebox';
import { APP_VIEWS } from '../apps/view-uris';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import {
  BlockInputSchema,
  computeUpdateArguments,
  DryRunArgument,
  FormDescription,
  FormSchema,
  FormTitle,
  HiddenFieldsSchema,
  ScheduleFields,
  LimitUpdateFields,
  SpamProtectionField,
  ReceiptUpdateField,
  LanguagesField,
  PublicId,
} from './form.schemas';
import { FormsService } from './forms.service';
import { PartialResponsesSetting } from './partial-setting';

const input = Type.Object(
  {
    publicId: PublicId,
    ifVersion: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: 'The version you read; if the form changed since, the update is refused (409 version_conflict).',
      }),
    ),
    version: Type.Optional(Type.Integer({ minimum: 1, description: 'Older name of ifVersion.' })),
    title: Type.Optional(FormTitle),
    description: Type.Optional(FormDescription),
    blocks: Type.Optional(
      Type.Array(BlockInputSchema, {
        maxItems: 200,
        description:
          "The whole new block list, in order: keep a block's id (or ref) and a choice's id to keep their answers; blocks left out are removed; a ref left out is kept, null removes it. A form read with get_form can be sent back as is.",
      }),
    ),
    hiddenFields: Type.Optional(HiddenFieldsSchema('The whole new list of hidden fields, as in create_form.')),
    partialResponses: Type.Optional(PartialResponsesSetting),
    ...computeUpdateArguments,
    ...ScheduleFields,
    ...LimitUpdateFields,
    closeNow: Type.Optional(Type.Boolean({ description: 'A maxResponses below the count: kept, form closed.' })),
    ...SpamProtectionField,
    ...ReceiptUpdateField,
    ...LanguagesField,
    dryRun: DryRunArgument,
    acceptAnswerLoss: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          'Allow a change that discards answers (removing or retyping an answered block, removing a chosen choice).',
      }),
    ),
  },
  { additionalProperties: false },
);
const output = FormSchema;

@Tool({
  name: 'update_form',
  title: 'Update a form',
  description:
    "Changes a form's title, description, hidden fields or blocks (as in create_form); what is omitted is kept. A change that would discard answers is refused (400 tool_error, details say which) unless acceptAnswerLoss is true. Removing or retyping a block, or removing a choice or hidden field, that a rule names is refused (400 invalid_arguments at the rule's path) unless the same update changes the rule, whatever acceptAnswerLoss says.",
  scope: 'forms:write',
  ui: { resourceUri: APP_VIEWS.formPreview },
  write: true,
  input,
  output,
  annotations: { destructiveHint: true },
})
export class UpdateFormTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly forms: FormsService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    if (args.dryRun)
      return (await this.forms.update(ctx.principal, { ...args, dryRun: true })) as Static<typeof output>;
    return this.forms.view(await this.forms.update(ctx.principal, args), true) as Static<typeof output>;
  }
}

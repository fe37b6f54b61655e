import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../../tools/tool.decorator';
import { PublicId } from '../form.schemas';
import { FormsService } from '../forms.service';

const input = Type.Object(
  {
    publicId: PublicId,
    language: Type.String({ maxLength: 35, description: 'Not the default.' }),
    texts: Type.Record(Type.String(), Type.String(), {
      maxProperties: 2000,
      description:
        'Keys: title, description, blocks/ID/title|description|minLabel|maxLabel, blocks/ID/choices/CHOICE_ID, endings/REF/title|message, thankYou/title|message.',
    }),
  },
  { additionalProperties: false },
);
const output = Type.Object({ version: Type.Integer(), missingTexts: Type.Array(Type.String()) });

@Tool({
  name: 'set_translation',
  title: 'Translate a form',
  description:
    "Replaces a form's texts in one of its languages (update_form sets them); keys left out fall back to the default.",
  scope: 'forms:write',
  write: true,
  annotations: { idempotentHint: true, destructiveHint: true },
  input,
  output,
})
export class SetTranslationTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly forms: FormsService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.forms.setTranslation(ctx.principal, args);
  }
}

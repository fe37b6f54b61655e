/** The one implementation of publish_form and close_form, which differ only by the status they move a form to. */
import { Injectable } from '@nestjs/common';
import { Static } from '@sinclair/typebox';
import { FormRef, FormSchema } from './form.schemas';
import { FormsService } from './forms.service';
import { ToolContext, ToolHandler } from '../tools/tool.decorator';

type Input = typeof FormRef;
type Output = typeof FormSchema;

/** What the two tools declare alike: moving a form to the status it has already changes nothing. */
export const FORM_TRANSITION = {
  scope: 'forms:write',
  write: true,
  input: FormRef,
  output: FormSchema,
  annotations: { idempotentHint: true },
} as const;

@Injectable()
export abstract class FormTransitionTool implements ToolHandler<Input, Output> {
  /** The status the tool moves the form to. */
  protected abstract readonly target: 'published' | 'closed';

  constructor(private readonly forms: FormsService) {}

  async run(args: Static<Input>, ctx: ToolContext): Promise<Static<Output>> {
    return this.forms.view(
      await this.forms.transition(ctx.principal, args.publicId, this.target),
      true,
    ) as Static<Output>;
  }
}

import { Static, Type } from '@sinclair/typebox';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { pageArguments, pageFields } from '../tools/paging';
import { FormStatusSchema, FormSummarySchema } from './form.schemas';
import { FormsService } from './forms.service';

const input = Type.Object(
  {
    ...pageArguments(200, 100),
    status: Type.Optional(FormStatusSchema),
  },
  { additionalProperties: false },
);
const output = Type.Object({ ...pageFields, forms: Type.Array(FormSummarySchema) }, { additionalProperties: false });

@Tool({
  name: 'list_forms',
  title: 'List forms',
  description: "Lists the workspace's forms, oldest first, a page at a time, with response counts (blocks: get_form).",
  scope: 'forms:read',
  write: false,
  input,
  output,
})
export class ListFormsTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly forms: FormsService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    const limit = args.limit ?? 100;
    const offset = args.offset ?? 0;
    const { total, forms } = await this.forms.list(ctx.principal.workspace.id, { limit, offset, status: args.status });
    return {
      total,
      offset,
      count: forms.length,
      forms: forms.map((f) => ({
        ...this.forms.view(f),
        responseCount: f.responseCount,
        lastResponseAt: f.lastResponseAt?.toISOString() ?? null,
      })) as Static<typeof output>['forms'],
    };
  }
}

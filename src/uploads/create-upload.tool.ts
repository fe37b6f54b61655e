import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { FormsService } from '../forms/forms.service';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { UploadsService } from './uploads.service';

const input = Type.Object(
  {
    publicId: PublicId,
    block: Type.String({ minLength: 1, maxLength: 64, description: 'Id or ref.' }),
    filename: Type.String({ minLength: 1, maxLength: 10000 }),
    contentType: Type.String({ minLength: 1, maxLength: 255 }),
    size: Type.Integer({ minimum: 1, description: 'Bytes.' }),
  },
  { additionalProperties: false },
);
const output = Type.Object(
  {
    uploadId: Type.String(),
    url: Type.String(),
    method: Type.Literal('PUT'),
    headers: Type.Record(Type.String(), Type.String()),
    expiresAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

@Tool({
  name: 'create_upload',
  title: 'Create an upload',
  description:
    "A file for a file_upload block: your HTTP client (not a tool) PUTs its exact bytes to url with headers within 15 minutes, then create_response names uploadId as the block's answer, which checks size and type. Unnamed uploads go after 24 hours.",
  scope: 'responses:write',
  write: true,
  input,
  output,
})
export class CreateUploadTool implements ToolHandler<typeof input, typeof output> {
  constructor(
    private readonly forms: FormsService,
    private readonly uploads: UploadsService,
  ) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    const { workspace } = ctx.principal;
    const form = await this.forms.get(workspace.id, args.publicId);
    return this.uploads.create({ ...args, workspaceId: workspace.id, plan: workspace.plan, form });
  }
}

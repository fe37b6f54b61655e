import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { FormsService } from '../forms/forms.service';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { UploadsService } from './uploads.service';

const input = Type.Object(
  {
    publicId: PublicId,
    block: Type.String({ minLength: 1, maxLength: 64, description: 'A file_upload block: id or ref.' }),
    filename: Type.String({ minLength: 1, maxLength: 10000 }),
    contentType: Type.String({ minLength: 1, maxLength: 255, description: 'e.g. "application/pdf".' }),
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
    "Starts a file for a file_upload block. Your HTTP client (not this tool) then PUTs the file's exact bytes to url with the headers given, within 15 minutes; then name uploadId in create_response's answer to the block. The file is checked then (size, type by its bytes); unnamed uploads are deleted after 24 hours.",
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

import { Static, Type } from '@sinclair/typebox';
import { ApiError } from '../common/errors/api-error';
import { TOOL_ROUTE_BODY_LIMIT } from '../common/http/body';
import { PublicId } from '../forms/form.schemas';
import { FormsService } from '../forms/forms.service';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { CONTENT_LIMIT_BYTES, UploadsService } from './uploads.service';

/** 5 MB as base64 (4 characters per 3 bytes), and the JSON around it. */
const CONTENT_BASE64_LENGTH = Math.ceil(CONTENT_LIMIT_BYTES / 3) * 4;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const input = Type.Object(
  {
    publicId: PublicId,
    block: Type.String({ minLength: 1, maxLength: 64, description: 'Id or ref.' }),
    filename: Type.String({ minLength: 1, maxLength: 10000 }),
    contentType: Type.String({ minLength: 1, maxLength: 255 }),
    size: Type.Optional(Type.Integer({ minimum: 1, description: 'Bytes (not needed with contentBase64).' })),
    contentBase64: Type.Optional(
      Type.String({ maxLength: CONTENT_BASE64_LENGTH, description: 'The file itself (up to 5 MB): stored now.' }),
    ),
  },
  { additionalProperties: false },
);
const output = Type.Object(
  {
    uploadId: Type.String(),
    url: Type.Optional(Type.String()),
    method: Type.Optional(Type.Literal('PUT')),
    headers: Type.Optional(Type.Record(Type.String(), Type.String())),
    expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { additionalProperties: false },
);

@Tool({
  name: 'create_upload',
  title: 'Create an upload',
  description:
    "A file for a file_upload block: with contentBase64 it is stored and checked now; else your HTTP client (not a tool) PUTs its exact bytes to url with headers within 15 minutes. Then create_response names uploadId as the block's answer. Unnamed uploads go after 24 hours.",
  bodyLimit: TOOL_ROUTE_BODY_LIMIT,
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
    const { contentBase64, size, ...file } = args;
    const upload = { ...file, workspaceId: workspace.id, plan: workspace.plan, form };
    if (contentBase64 !== undefined) {
      const { uploadId } = await this.uploads.createWithContent({ ...upload, size }, decodeBase64(contentBase64));
      return { uploadId };
    }
    if (size === undefined)
      throw new ApiError('invalid_arguments', {
        message: 'size is required without contentBase64.',
        details: [{ path: '/size', message: 'is required without contentBase64' }],
        hint: 'Send the file in contentBase64 (up to 5 MB), or its size in bytes to get an upload URL.',
      });
    return this.uploads.create({ ...upload, size });
  }
}

/** Standard base64 (RFC 4648 section 4, padded), or 400 at /contentBase64: Node's decoder would skip what is not. */
function decodeBase64(text: string): Buffer {
  if (text.length === 0 || text.length % 4 !== 0 || !BASE64.test(text))
    throw new ApiError('invalid_arguments', {
      message: 'contentBase64 is not the base64 of a file.',
      details: [{ path: '/contentBase64', message: text.length ? 'is not padded standard base64' : 'is empty' }],
      hint: "Send the file's bytes as standard base64 (A-Z a-z 0-9 + /, padded with =), without line breaks.",
    });
  return Buffer.from(text, 'base64');
}

import { Static, Type } from '@sinclair/typebox';
import { StringEnum } from '../common/validation/schema-validator';
import { PublicId } from '../forms/form.schemas';
import { responseFilterArguments } from '../responses/response-filter';
import { AnswersBy, ResponseStatus } from '../responses/response.schemas';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { ExportsService } from './exports.service';
import { currentJob } from '../jobs/current-job';

const FORMATS = ['csv', 'ndjson'] as const;
const MIME_TYPES = { csv: 'text/csv', ndjson: 'application/x-ndjson' } as const;

const input = Type.Object(
  {
    publicId: PublicId,
    format: Type.Optional(
      StringEnum(FORMATS, {
        default: 'csv',
        description:
          'csv: a row per response (id, submittedAt, with status partial or all also status and startedAt, a column per block headed by its title, or ref with answersBy "ref", for a file block its names then their download links, then per hidden field), UTF-8 with a byte order mark. ndjson: a get_response object per line.',
      }),
    ),
    ...responseFilterArguments,
    answersBy: Type.Optional(AnswersBy),
    status: Type.Optional(ResponseStatus),
  },
  { additionalProperties: false },
);
const output = Type.Object(
  {
    url: Type.String({
      format: 'uri',
      description:
        'A link that downloads the export with a plain GET and no other credential. It acts for the credential that made it: treat it as a secret, and expect it to stop when that credential is revoked.',
    }),
    expiresAt: Type.String({ format: 'date-time', description: 'When the link stops serving (15 minutes).' }),
    format: StringEnum(FORMATS),
  },
  { additionalProperties: false },
);
type Output = Static<typeof output>;

@Tool({
  name: 'export_responses',
  title: 'Export responses',
  description:
    "Makes a link that downloads a form's responses (all, or those the filter matches) as CSV or NDJSON, in submission order, with a plain GET: any number of responses. For spreadsheets and bulk reads instead of paging list_responses. As a task (respond-async), the export is written first and the link serves that file.",
  scope: 'responses:read',
  write: false,
  input,
  output,
})
export class ExportResponsesTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly exports: ExportsService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Output> {
    const { publicId, format, answersBy, status, ...filter } = args;
    const opts = { format: format ?? 'csv', answersBy: answersBy ?? 'id', filter, status: status ?? 'completed' };
    // As a job (the client consented: MCP task, Prefer: respond-async), the export is read now into a stored file.
    const job = currentJob();
    return job
      ? this.exports.exportAsJob(ctx.principal, publicId, opts, job)
      : this.exports.createLink(ctx.principal, publicId, opts);
  }

  /** Over MCP, the link also as a resource_link content item (see src/mcp/mcp-content.ts). */
  mcpContent(result: Output) {
    return [
      {
        type: 'resource_link' as const,
        uri: result.url,
        name: `responses.${result.format}`,
        mimeType: MIME_TYPES[result.format],
        description: `The export, until ${result.expiresAt}.`,
      },
    ];
  }
}

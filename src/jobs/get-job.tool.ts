import { Static, Type } from '@sinclair/typebox';
import { StringEnum } from '../common/validation/schema-validator';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { JobsService } from './jobs.service';

const input = Type.Object(
  {
    jobId: Type.String({ pattern: '^job_[0-9a-f]{32}$' }),
    cancel: Type.Optional(Type.Boolean({ description: 'Stop it' })),
  },
  { additionalProperties: false },
);
// The job as JobsService tells it (jobId, times, pollIntervalMs...); only what a caller branches on is spelled out.
const output = Type.Object({
  status: StringEnum(['working', 'completed', 'failed', 'cancelled'] as const),
  result: Type.Optional(Type.Unknown({ description: "The tool's answer" })),
  error: Type.Optional(Type.Unknown({ description: "The tool's refusal" })),
});

/** The job resource of a call answered 202 (see jobs.service.ts): polled, or cancelled, here. */
@Tool({
  name: 'get_job',
  title: 'Get a job',
  description:
    'A background job (a call sent with Prefer: respond-async, answered 202): its status and result. cancel stops it.',
  scope: 'responses:read',
  write: false,
  input,
  output,
})
export class GetJobTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly jobs: JobsService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    const workspaceId = ctx.principal.workspace.id;
    return (
      args.cancel ? this.jobs.cancel(workspaceId, args.jobId) : this.jobs.get(workspaceId, args.jobId)
    ) as Promise<Static<typeof output>>;
  }
}

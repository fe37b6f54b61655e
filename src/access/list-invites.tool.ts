import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { pageArguments, pageFields } from '../tools/paging';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { InviteState, InvitesService } from './invites.service';

const input = Type.Object({ publicId: PublicId, ...pageArguments(1000, 100) }, { additionalProperties: false });
const Time = Type.Union([Type.String(), Type.Null()]);
const output = Type.Object(
  {
    ...pageFields,
    invites: Type.Array(
      Type.Object(
        {
          id: Type.String(),
          state: Type.Unsafe<InviteState>({ enum: ['unused', 'started', 'completed', 'expired', 'revoked'] }),
          email: Type.Union([Type.String(), Type.Null()]),
          hidden: Type.Unsafe<Record<string, string>>({ type: 'object' }),
          createdAt: Type.String(),
          expiresAt: Time,
          completedAt: Time,
          responseId: Time,
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

@Tool({
  name: 'list_invites',
  title: 'List invitations',
  description: "A form's invitations, oldest first, each with its state (never its secret).",
  scope: 'forms:read',
  write: false,
  input,
  output,
})
export class ListInvitesTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly invites: InvitesService) {}

  async run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    const offset = args.offset ?? 0;
    const { total, invites } = await this.invites.list(
      ctx.principal.workspace.id,
      args.publicId,
      args.limit ?? 100,
      offset,
    );
    return { total, offset, count: invites.length, invites };
  }
}

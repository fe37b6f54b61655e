import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { InvitesService } from './invites.service';

const input = Type.Object(
  { publicId: PublicId, ids: Type.Array(Type.String(), { minItems: 1, maxItems: 1000 }) },
  { additionalProperties: false },
);
const output = Type.Object(
  { revoked: Type.Array(Type.String()), unchanged: Type.Array(Type.String()) },
  { additionalProperties: false },
);

@Tool({
  name: 'revoke_invites',
  title: 'Revoke invitations',
  description: 'Ends invitations by id; answered ones stay (unchanged).',
  scope: 'forms:write',
  write: true,
  annotations: { destructiveHint: true, idempotentHint: true },
  input,
  output,
})
export class RevokeInvitesTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly invites: InvitesService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.invites.revoke(ctx.principal, args.publicId, args.ids);
  }
}

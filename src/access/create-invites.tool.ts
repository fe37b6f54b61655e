import { Static, Type } from '@sinclair/typebox';
import { PublicId } from '../forms/form.schemas';
import { Tool, ToolContext, ToolHandler } from '../tools/tool.decorator';
import { InvitesService } from './invites.service';

const Hidden = Type.Unsafe<Record<string, string>>({
  type: 'object',
  additionalProperties: { type: 'string', maxLength: 1000 },
});

const input = Type.Object(
  {
    publicId: PublicId,
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    invites: Type.Optional(
      Type.Array(
        Type.Object(
          { hidden: Type.Optional(Hidden), email: Type.Optional(Type.String({ maxLength: 320 })) },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: 1000 },
      ),
    ),
    expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { additionalProperties: false },
);
const output = Type.Object(
  {
    expiresAt: Type.Union([Type.String(), Type.Null()]),
    invites: Type.Array(Type.Object({ id: Type.String(), url: Type.String() }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

@Tool({
  name: 'create_invites',
  title: 'Create invitations',
  description:
    'Single-use links to answer the form once (count, or invites with fixed hidden values). Shown only here.',
  scope: 'forms:write',
  write: true,
  input,
  output,
})
export class CreateInvitesTool implements ToolHandler<typeof input, typeof output> {
  constructor(private readonly invites: InvitesService) {}

  run(args: Static<typeof input>, ctx: ToolContext): Promise<Static<typeof output>> {
    return this.invites.create(ctx.principal, args.publicId, args);
  }
}

import { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ResponseStatsRepository } from '../../src/summaries/response-stats.repository';
import { Plan, Role, Scope } from '../../src/common/access/roles';
import { BlockInput } from '../../src/forms/blocks';
import { FormRecord, FormsService } from '../../src/forms/forms.service';
import { FormStatus } from '../../src/forms/entities/form.entity';
import { OAuthService } from '../../src/oauth/oauth.service';
import { ResponsesService } from '../../src/responses/responses.service';
import { TokensService } from '../../src/tokens/tokens.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';

const unique = () => randomBytes(4).toString('hex');

export interface TestWorkspace {
  id: string;
  slug: string;
  ownerId: string;
}

/** A workspace with an owner, through the same service the CLI uses. */
export async function createWorkspace(app: INestApplication, plan: Plan = 'pro'): Promise<TestWorkspace> {
  const slug = `ws-${unique()}`;
  const { workspace, owner } = await app
    .get(WorkspacesService)
    .create({ name: `Workspace ${slug}`, slug, plan, ownerEmail: `owner-${slug}@example.com` });
  return { id: workspace.id, slug, ownerId: owner.id };
}

export async function createToken(
  app: INestApplication,
  ws: TestWorkspace,
  opts: { role?: Role; scopes?: Scope[]; expiresAt?: Date; creatorUserId?: string } = {},
): Promise<{ token: string; id: string }> {
  const { token, view } = await app
    .get(TokensService)
    .create({ workspaceSlug: ws.slug, name: `token ${unique()}`, role: opts.role ?? 'admin', ...opts });
  return { token, id: view.id };
}

export const ALL_TYPES_BLOCKS: BlockInput[] = [
  { type: 'short_text', title: 'Name', required: true },
  { type: 'email', title: 'Email' },
  { type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Green', 'Blue'] },
  { type: 'checkboxes', title: 'Pets', choices: ['Cat', 'Dog'] },
  { type: 'rating', title: 'Rating', max: 5 },
  { type: 'number', title: 'Age', min: 0, max: 150 },
  { type: 'yes_no', title: 'Subscribe?' },
];

export async function createForm(
  app: INestApplication,
  ws: TestWorkspace,
  opts: { title?: string; blocks?: BlockInput[]; status?: FormStatus } = {},
): Promise<FormRecord> {
  const forms = app.get(FormsService);
  const form = await forms.create(ws.id, {
    title: opts.title ?? `Form ${unique()}`,
    blocks: opts.blocks ?? ALL_TYPES_BLOCKS,
  });
  if (opts.status && opts.status !== 'draft') {
    await forms.setStatus(form.id, 'published');
    if (opts.status === 'closed') await forms.setStatus(form.id, 'closed');
  }
  return forms.get(ws.id, form.publicId);
}

/** n responses to a form made by createForm with the default blocks; submittedAt spread one second apart (or all equal). */
export async function createResponses(
  app: INestApplication,
  form: FormRecord,
  n: number,
  opts: { sameTime?: boolean; start?: Date } = {},
): Promise<string[]> {
  const responses = app.get(ResponsesService);
  const ids: string[] = [];
  const base = opts.start?.getTime() ?? Date.UTC(2026, 0, 1);
  const [name, , colour, , rating] = form.blocks.map((b) => b.id);
  for (let i = 0; i < n; i++) {
    const r = await responses.create(
      form,
      { [name]: `Person ${i}`, [colour]: ['Red', 'Green', 'Blue'][i % 3], [rating]: 1 + (i % 5) },
      { source: 'import', submittedAt: new Date(opts.sameTime ? base : base + i * 1000) },
    );
    ids.push(r.id);
  }
  return ids;
}

/**
 * Loads n responses into a form straight through SQL (fast, as an import would), then rebuilds the
 * form's aggregates. Answers cycle over the form's first blocks as createResponses does.
 */
export async function bulkLoadResponses(app: INestApplication, form: FormRecord, n: number): Promise<void> {
  const ds = app.get(DataSource);
  const [name, , colour, , rating] = form.blocks;
  await ds.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO responses (form_id, seq, submitted_at, answers, source)
       SELECT $1, c.last_seq + g, timestamptz '2026-01-01' + g * interval '1 second',
              jsonb_build_object($3::text, 'Person ' || g, $4::text, ($5::text[])[1 + g % 3], $6::text, 1 + g % 5), 'import'
         FROM response_counters c, generate_series(1, $2::int) g WHERE c.form_id = $1`,
      [form.id, n, name.id, colour.id, colour.choices!.map((c) => c.id), rating.id],
    );
    await tx.query(
      `UPDATE response_counters SET last_seq = last_seq + $2, last_submitted_at = timestamptz '2026-01-01' + $2 * interval '1 second' WHERE form_id = $1`,
      [form.id, n],
    );
    await new ResponseStatsRepository().recomputeResponseStats(tx, form.id);
  });
}

/**
 * An OAuth grant in `workspaceId` for the person, and one access token of it, stored as the
 * authorization server stores them (jest cannot load oidc-provider: see test/oauth for the flow).
 */
export async function createOAuthAccessToken(
  app: INestApplication,
  opts: { workspaceId: string; userId: string; clientName?: string; scope?: string; aud?: string; expiresIn?: number },
): Promise<{ token: string; grantId: string }> {
  const grantId = randomBytes(16).toString('base64url');
  const token = randomBytes(32).toString('base64url');
  await app.get(OAuthService).recordGrant({
    grantId,
    workspaceId: opts.workspaceId,
    userId: opts.userId,
    clientId: 'client-1',
    clientName: opts.clientName ?? 'Agent',
    scopes: ['forms:read'],
  });
  const expiresIn = opts.expiresIn ?? 3600;
  const exp = Math.floor(Date.now() / 1000) + expiresIn;
  await app
    .get(DataSource)
    .query(
      `INSERT INTO oauth_models (model, id, payload, grant_id, expires_at) VALUES ('AccessToken', $1, $2::jsonb, $3, to_timestamp($4))`,
      [
        token,
        JSON.stringify({
          jti: token,
          grantId,
          accountId: opts.userId,
          aud: opts.aud ?? 'http://formwork.test/api/v1',
          scope: opts.scope ?? 'forms:read',
          exp,
        }),
        grantId,
        exp,
      ],
    );
  return { token, grantId };
}

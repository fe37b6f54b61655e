import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { isRole, Plan, Role, roleAtLeast } from '../common/access/roles';
import { currentRequestContext } from '../common/request-context';
import { OAuthService } from '../oauth/oauth.service';
import { TokensService } from '../tokens/tokens.service';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { Session, SessionsService } from './sessions.service';

/** A page's refusal: rendered as an HTML page with this status. */
export class PageError extends Error {
  constructor(
    readonly status: 400 | 403 | 404,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = () => new PageError(404, 'Not found', 'There is nothing here, or you have no access to it.');

export interface Access {
  session: Session;
  workspace: { id: string; slug: string; name: string; plan: Plan; embedOrigins: string[] };
  role: Role;
}

export interface MemberView {
  userId: string;
  email: string;
  role: Role;
  hasPassword: boolean;
  joinedAt: Date;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What the settings pages do, each action checked here against the person's role in the chosen
 * workspace (never trusting what the page offered), and every change recorded in the audit log.
 * An id that is not the workspace's is "not found", whether it exists elsewhere or not.
 */
@Injectable()
export class SettingsService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly workspaces: WorkspacesService,
    private readonly tokens: TokensService,
    private readonly oauth: OAuthService,
    private readonly sessions: SessionsService,
  ) {}

  /** The person's role in a workspace: 404 when not a member (no existence leak), 403 below `minimum`. */
  async access(session: Session, slug: string, minimum: Role = 'viewer'): Promise<Access> {
    if (!/^[a-z0-9-]{1,64}$/.test(slug)) throw notFound();
    const [row] = await this.db.query(
      `SELECT w.id, w.slug, w.name, w.plan, w.embed_origins, m.role FROM workspaces w JOIN memberships m ON m.workspace_id = w.id AND m.user_id = $2 WHERE w.slug = $1`,
      [slug, session.userId],
    );
    if (!row || !isRole(row.role)) throw notFound();
    if (!roleAtLeast(row.role, minimum)) {
      throw new PageError(
        403,
        'Not allowed',
        `This page is for a workspace ${minimum}${minimum === 'owner' ? '' : ' or above'}; you are ${row.role} in ${row.name}.`,
      );
    }
    return {
      session,
      role: row.role,
      workspace: { id: row.id, slug: row.slug, name: row.name, plan: row.plan, embedOrigins: row.embed_origins },
    };
  }

  async workspacesOf(userId: string) {
    return this.oauth.workspacesOf(userId);
  }

  /** Records a settings action in the workspace's audit log, as done by the signed-in person. */
  async audit(
    a: Access,
    action: string,
    subjectId: string,
    details: Record<string, unknown> = {},
    manager: EntityManager = this.db.manager,
  ): Promise<void> {
    await manager.query(
      `INSERT INTO audit_events (workspace_id, action, subject_id, actor_kind, actor_id, actor_user_id, details, request_id)
       VALUES ($1, $2, $3, 'session', $4::text, $4::uuid, $5::jsonb, $6)`,
      [
        a.workspace.id,
        action,
        subjectId,
        a.session.userId,
        JSON.stringify(details),
        currentRequestContext()?.requestId ?? null,
      ],
    );
  }

  // --- tokens -------------------------------------------------------------------------------------

  async listTokens(a: Access) {
    const rows = await this.db.query(
      `SELECT t.id, t.name, t.token_prefix, t.role, t.scopes, t.created_at, t.last_used_at, t.expires_at, u.email AS creator
         FROM api_tokens t LEFT JOIN users u ON u.id = t.created_by_user_id
        WHERE t.workspace_id = $1 AND t.revoked_at IS NULL ORDER BY t.created_at DESC`,
      [a.workspace.id],
    );
    return rows as Array<{
      id: string;
      name: string;
      token_prefix: string;
      role: Role;
      scopes: string[] | null;
      created_at: Date;
      last_used_at: Date | null;
      expires_at: Date | null;
      creator: string | null;
    }>;
  }

  async findToken(a: Access, id: string) {
    if (!UUID.test(id)) throw notFound();
    const [row] = await this.db.query(
      'SELECT id, name, token_prefix FROM api_tokens WHERE id = $1 AND workspace_id = $2 AND revoked_at IS NULL',
      [id, a.workspace.id],
    );
    if (!row) throw notFound();
    return row as { id: string; name: string; token_prefix: string };
  }

  async createToken(a: Access, input: { name: string; role: Role; scopes: string[]; expiresAt?: Date }) {
    // The token and its audit record commit together, or neither does.
    return this.db.transaction(async (tx) => {
      const created = await this.tokens.create(
        {
          workspaceSlug: a.workspace.slug,
          name: input.name,
          role: input.role,
          scopes: input.scopes as never,
          expiresAt: input.expiresAt,
          creatorUserId: a.session.userId,
        },
        tx,
      );
      await this.audit(
        a,
        'token.create',
        created.view.id,
        { name: input.name, role: input.role, scopes: input.scopes },
        tx,
      );
      return created;
    });
  }

  async revokeToken(a: Access, id: string) {
    const token = await this.findToken(a, id);
    await this.db.transaction(async (tx) => {
      await this.tokens.revoke(token.id, tx);
      await this.audit(a, 'token.revoke', token.id, { name: token.name }, tx);
    });
  }

  // --- members ------------------------------------------------------------------------------------

  async listMembers(a: Access): Promise<MemberView[]> {
    const rows = await this.db.query(
      `SELECT u.id, u.email, m.role, u.password_hash IS NOT NULL AS has_password, m.created_at
         FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 ORDER BY u.email`,
      [a.workspace.id],
    );
    return rows.map((r: Record<string, never>) => ({
      userId: r.id,
      email: r.email,
      role: r.role,
      hasPassword: r.has_password,
      joinedAt: r.created_at,
    }));
  }

  async findMember(a: Access, userId: string): Promise<MemberView> {
    if (!UUID.test(userId)) throw notFound();
    const member = (await this.listMembers(a)).find((m) => m.userId === userId);
    if (!member) throw notFound();
    return member;
  }

  /** Which roles this person may hand out: up to their own; only an owner names an owner. */
  grantable(a: Access): Role[] {
    return (['viewer', 'editor', 'admin', 'owner'] as Role[]).filter((r) => roleAtLeast(a.role, r));
  }

  /** Adds a member; a person with no password yet gets a one-time link (returned, shown once). */
  async addMember(a: Access, email: string, role: Role): Promise<{ link?: string; existing: boolean }> {
    this.mayGrant(a, role);
    const existing = await this.workspaces.findUserByEmail(email);
    if (existing && (await this.workspaces.findMembership(a.workspace.id, existing.id))) return { existing: true };
    const { user } = await this.workspaces.addMember(a.workspace.slug, email, role);
    await this.audit(a, 'member.add', user.id, { email: user.email, role });
    if (user.passwordHash) return { existing: false };
    return { link: await this.sessions.passwordLink(user.id), existing: false };
  }

  async changeRole(a: Access, userId: string, role: Role): Promise<void> {
    const member = await this.findMember(a, userId);
    this.mayGrant(a, role);
    this.mayChange(a, member);
    await this.db.transaction(async (tx) => {
      if (member.role === 'owner' && role !== 'owner') await this.notLastOwner(a, tx);
      await tx.query('UPDATE memberships SET role = $3 WHERE workspace_id = $1 AND user_id = $2', [
        a.workspace.id,
        userId,
        role,
      ]);
      await this.audit(a, 'member.role', userId, { email: member.email, from: member.role, to: role }, tx);
    });
  }

  async removeMember(a: Access, userId: string): Promise<void> {
    const member = await this.findMember(a, userId);
    this.mayChange(a, member);
    await this.db.transaction(async (tx) => {
      if (member.role === 'owner') await this.notLastOwner(a, tx);
      await tx.query('DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2', [a.workspace.id, userId]);
      await this.audit(a, 'member.remove', userId, { email: member.email }, tx);
    });
  }

  async newLink(a: Access, userId: string): Promise<{ email: string; link: string }> {
    const member = await this.findMember(a, userId);
    this.mayChange(a, member);
    const link = await this.sessions.passwordLink(userId);
    await this.audit(a, 'member.password_link', userId, { email: member.email });
    return { email: member.email, link };
  }

  private mayGrant(a: Access, role: Role) {
    if (!roleAtLeast(a.role, role))
      throw new PageError(403, 'Not allowed', `Only an owner can grant the ${role} role.`);
  }

  private mayChange(a: Access, member: MemberView) {
    if (member.role === 'owner' && a.role !== 'owner')
      throw new PageError(403, 'Not allowed', 'Only an owner can change or remove an owner.');
  }

  /** Locks the owners' rows, so two owners demoting each other at once cannot leave none. */
  private async notLastOwner(a: Access, tx: EntityManager) {
    const owners: unknown[] = await tx.query(
      `SELECT user_id FROM memberships WHERE workspace_id = $1 AND role = 'owner' FOR UPDATE`,
      [a.workspace.id],
    );
    if (owners.length <= 1)
      throw new PageError(
        403,
        'Not allowed',
        'The last owner can be neither demoted nor removed: make someone else an owner first.',
      );
  }

  // --- connected apps -----------------------------------------------------------------------------

  /** The apps a person connected here; for an owner or admin, every app connected to the workspace. */
  async listApps(a: Access) {
    const all = roleAtLeast(a.role, 'admin');
    const rows = await this.db.query(
      `SELECT g.grant_id, g.client_name, g.client_id, g.scopes, g.created_at, u.email,
              (SELECT to_timestamp(max((o.payload->>'iat')::bigint)) FROM oauth_models o WHERE o.grant_id = g.grant_id AND o.model = 'AccessToken') AS last_used
         FROM oauth_grants g JOIN users u ON u.id = g.user_id
        WHERE g.workspace_id = $1 AND g.revoked_at IS NULL AND ($2 OR g.user_id = $3)
        ORDER BY g.created_at DESC`,
      [a.workspace.id, all, a.session.userId],
    );
    return rows as Array<{
      grant_id: string;
      client_name: string | null;
      client_id: string;
      scopes: string[];
      created_at: Date;
      email: string;
      last_used: Date | null;
    }>;
  }

  async disconnect(a: Access, grantId: string): Promise<void> {
    if (grantId.length > 200) throw notFound();
    const app = (await this.listApps(a)).find((g) => g.grant_id === grantId);
    if (!app) throw notFound();
    await this.oauth.revokeGrant(grantId);
    await this.audit(a, 'app.disconnect', grantId, { app: app.client_name ?? app.client_id, person: app.email });
  }

  // --- audit log ----------------------------------------------------------------------------------

  async auditLog(a: Access, filter: { actor?: string; action?: string; page: number }, pageSize = 50) {
    const where = ['e.workspace_id = $1'];
    const params: unknown[] = [a.workspace.id];
    if (filter.action) where.push(`e.action = $${params.push(filter.action)}`);
    if (filter.actor) where.push(`e.actor_id = $${params.push(filter.actor)}`);
    const rows = await this.db.query(
      `SELECT e.at, e.action, e.subject_id, e.actor_kind, e.actor_id, e.request_id, u.email, t.name AS token_name, COALESCE(g.client_name, g.client_id) AS app
         FROM audit_events e
         LEFT JOIN users u ON u.id = e.actor_user_id
         LEFT JOIN api_tokens t ON e.actor_kind = 'api_token' AND t.id::text = e.actor_id
         LEFT JOIN oauth_grants g ON e.actor_kind = 'oauth' AND g.grant_id = e.actor_id
        WHERE ${where.join(' AND ')}
        ORDER BY e.at DESC, e.id DESC LIMIT ${pageSize + 1} OFFSET ${(filter.page - 1) * pageSize}`,
      params,
    );
    const actors = await this.db.query(
      `SELECT DISTINCT e.actor_kind, e.actor_id, u.email, t.name AS token_name, COALESCE(g.client_name, g.client_id) AS app
         FROM audit_events e
         LEFT JOIN users u ON u.id = e.actor_user_id
         LEFT JOIN api_tokens t ON e.actor_kind = 'api_token' AND t.id::text = e.actor_id
         LEFT JOIN oauth_grants g ON e.actor_kind = 'oauth' AND g.grant_id = e.actor_id
        WHERE e.workspace_id = $1 LIMIT 200`,
      [a.workspace.id],
    );
    const actions = await this.db.query(
      'SELECT DISTINCT action FROM audit_events WHERE workspace_id = $1 ORDER BY action LIMIT 200',
      [a.workspace.id],
    );
    return {
      rows: rows.slice(0, pageSize),
      more: rows.length > pageSize,
      actors,
      actions: actions.map((r: { action: string }) => r.action),
    };
  }

  // --- plan and embedding -------------------------------------------------------------------------

  async setPlan(a: Access, plan: Plan): Promise<void> {
    if (plan === a.workspace.plan) return;
    await this.db.transaction(async (tx) => {
      await tx.query('UPDATE workspaces SET plan = $2 WHERE id = $1', [a.workspace.id, plan]);
      await this.audit(a, 'workspace.plan', a.workspace.slug, { from: a.workspace.plan, to: plan }, tx);
    });
  }

  /** Throws ApiError invalid_arguments (with details) for a bad origin; nothing changes then. */
  async setEmbedOrigins(a: Access, origins: string[]): Promise<void> {
    const saved = await this.workspaces.setEmbedOrigins(a.workspace.slug, origins);
    await this.audit(a, 'workspace.embed_origins', a.workspace.slug, { origins: saved.embedOrigins });
  }
}

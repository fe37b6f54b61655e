/** The SQL of the settings pages (SettingsRepository): their reads across a workspace's tables and the changes only they make. */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Plan, Role } from '../common/access/roles';
import type { WorkspaceEntity } from '../workspaces/entities/workspace.entity';

export interface MemberView {
  userId: string;
  email: string;
  role: Role;
  hasPassword: boolean;
  /** Their password was set through another workspace's link, so it does not act here (PASSWORD_BINDING). */
  passwordElsewhere: boolean;
  /** This workspace's admins may be shown a set-password link for them (PASSWORD_BINDING, 1). */
  linkAllowed: boolean;
  joinedAt: Date;
}

/** What decides whether a workspace's admin may be shown a set-password link for a person (PASSWORD_BINDING). */
export interface PasswordStanding {
  userId: string;
  email: string;
  /** A member of the workspace asking. */
  member: boolean;
  hasPassword: boolean;
  /** The workspace the password is bound to; null when none, or set by the operator. */
  passwordWorkspaceId: string | null;
  /** How many workspaces besides the one asking the person belongs to. */
  otherWorkspaces: number;
}

/** A line of the audit log page: the record, and the names of who did it. */
export interface AuditLogRow {
  at: Date;
  action: string;
  subject_id: string;
  actor_kind: string;
  actor_id: string;
  request_id: string | null;
  email: string | null;
  token_name: string | null;
  app: string | null;
}

/** Who appears in a workspace's audit log, with their names. */
const ACTORS_OF_EVENTS = `audit_events e
         LEFT JOIN users u ON u.id = e.actor_user_id
         LEFT JOIN api_tokens t ON e.actor_kind = 'api_token' AND t.id::text = e.actor_id
         LEFT JOIN oauth_grants g ON e.actor_kind = 'oauth' AND g.grant_id = e.actor_id`;

/**
 * The SQL of the settings pages: what they show of a workspace (its members, tokens, connected
 * apps and audit log, read across those tables in one statement each) and the changes to
 * memberships and the plan that only these pages make.
 */
@Injectable()
export class SettingsRepository {
  /**
   * The workspace with this slug, and the person's role there (undefined when not a member, or when
   * their password is bound to another workspace: PASSWORD_BINDING in settings.service.ts).
   */
  async findAccess(
    manager: EntityManager,
    slug: string,
    userId: string,
  ): Promise<(Pick<WorkspaceEntity, 'id' | 'slug' | 'name' | 'plan' | 'embedOrigins'> & { role: string }) | undefined> {
    const [row] = await manager.query(
      `SELECT w.id, w.slug, w.name, w.plan, w.embed_origins AS "embedOrigins", m.role
         FROM workspaces w JOIN memberships m ON m.workspace_id = w.id AND m.user_id = $2 JOIN users u ON u.id = m.user_id
        WHERE w.slug = $1 AND (u.password_workspace_id IS NULL OR u.password_workspace_id = w.id)`,
      [slug, userId],
    );
    return row;
  }

  /** The workspace's live tokens, newest first, with their creator's email. */
  listTokens(
    manager: EntityManager,
    workspaceId: string,
  ): Promise<
    Array<{
      id: string;
      name: string;
      token_prefix: string;
      role: Role;
      scopes: string[] | null;
      created_at: Date;
      last_used_at: Date | null;
      expires_at: Date | null;
      creator: string | null;
    }>
  > {
    return manager.query(
      `SELECT t.id, t.name, t.token_prefix, t.role, t.scopes, t.created_at, t.last_used_at, t.expires_at, u.email AS creator
         FROM api_tokens t LEFT JOIN users u ON u.id = t.created_by_user_id
        WHERE t.workspace_id = $1 AND t.revoked_at IS NULL ORDER BY t.created_at DESC`,
      [workspaceId],
    );
  }

  /** A live token of the workspace. */
  async findToken(
    manager: EntityManager,
    workspaceId: string,
    id: string,
  ): Promise<{ id: string; name: string; token_prefix: string } | undefined> {
    const [row] = await manager.query(
      'SELECT id, name, token_prefix FROM api_tokens WHERE id = $1 AND workspace_id = $2 AND revoked_at IS NULL',
      [id, workspaceId],
    );
    return row;
  }

  /** The workspace's members by email. */
  listMembers(manager: EntityManager, workspaceId: string): Promise<MemberView[]> {
    return manager.query(
      `SELECT u.id AS "userId", u.email, m.role, u.password_hash IS NOT NULL AS "hasPassword",
              u.password_hash IS NOT NULL AND u.password_workspace_id IS NOT NULL AND u.password_workspace_id <> m.workspace_id AS "passwordElsewhere",
              NOT EXISTS (SELECT 1 FROM memberships o WHERE o.user_id = u.id AND o.workspace_id <> m.workspace_id)
                AND (u.password_hash IS NULL OR u.password_workspace_id IS NOT DISTINCT FROM m.workspace_id) AS "linkAllowed",
              m.created_at AS "joinedAt"
         FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 ORDER BY u.email`,
      [workspaceId],
    );
  }

  /**
   * A person (by id, or by normalized email), seen from a workspace: whether they are its member,
   * whether they have a password and to which workspace it is bound, and how many other workspaces
   * they belong to. Undefined when there is no such person.
   */
  async passwordStanding(
    manager: EntityManager,
    workspaceId: string,
    person: { userId: string } | { email: string },
  ): Promise<PasswordStanding | undefined> {
    const [row] = await manager.query(
      `SELECT u.id AS "userId", u.email,
              EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = u.id AND m.workspace_id = $1) AS member,
              u.password_hash IS NOT NULL AS "hasPassword", u.password_workspace_id AS "passwordWorkspaceId",
              (SELECT count(*)::int FROM memberships m WHERE m.user_id = u.id AND m.workspace_id <> $1) AS "otherWorkspaces"
         FROM users u WHERE ${'userId' in person ? 'u.id = $2' : 'u.email = $2'}`,
      [workspaceId, 'userId' in person ? person.userId : person.email],
    );
    return row;
  }

  async setRole(tx: EntityManager, workspaceId: string, userId: string, role: Role): Promise<void> {
    await tx.query('UPDATE memberships SET role = $3 WHERE workspace_id = $1 AND user_id = $2', [
      workspaceId,
      userId,
      role,
    ]);
  }

  async removeMembership(tx: EntityManager, workspaceId: string, userId: string): Promise<void> {
    await tx.query('DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2', [workspaceId, userId]);
  }

  /** Locks the owners' memberships until the transaction ends; how many owners there are. */
  async lockOwners(tx: EntityManager, workspaceId: string): Promise<number> {
    const owners: unknown[] = await tx.query(
      `SELECT user_id FROM memberships WHERE workspace_id = $1 AND role = 'owner' FOR UPDATE`,
      [workspaceId],
    );
    return owners.length;
  }

  /** The apps connected to the workspace (by `userId` only, when given), newest first. */
  listApps(
    manager: EntityManager,
    workspaceId: string,
    userId?: string,
  ): Promise<
    Array<{
      grant_id: string;
      client_name: string | null;
      client_id: string;
      scopes: string[];
      created_at: Date;
      email: string;
      last_used: Date | null;
    }>
  > {
    return manager.query(
      `SELECT g.grant_id, g.client_name, g.client_id, g.scopes, g.created_at, u.email,
              (SELECT to_timestamp(max((o.payload->>'iat')::bigint)) FROM oauth_models o WHERE o.grant_id = g.grant_id AND o.model = 'AccessToken') AS last_used
         FROM oauth_grants g JOIN users u ON u.id = g.user_id
        WHERE g.workspace_id = $1 AND g.revoked_at IS NULL AND ($2::uuid IS NULL OR g.user_id = $2)
        ORDER BY g.created_at DESC`,
      [workspaceId, userId ?? null],
    );
  }

  /** A page of the workspace's audit log, newest first, with the actors and actions to filter by. */
  async auditLog(
    manager: EntityManager,
    workspaceId: string,
    filter: { actor?: string; action?: string; limit: number; offset: number },
  ): Promise<{ rows: AuditLogRow[]; actors: AuditLogRow[]; actions: string[] }> {
    const where = ['e.workspace_id = $1'];
    const params: unknown[] = [workspaceId];
    if (filter.action) where.push(`e.action = $${params.push(filter.action)}`);
    if (filter.actor) where.push(`e.actor_id = $${params.push(filter.actor)}`);
    const rows = await manager.query(
      `SELECT e.at, e.action, e.subject_id, e.actor_kind, e.actor_id, e.request_id, u.email, t.name AS token_name, COALESCE(g.client_name, g.client_id) AS app
         FROM ${ACTORS_OF_EVENTS}
        WHERE ${where.join(' AND ')}
        ORDER BY e.at DESC, e.id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, filter.limit, filter.offset],
    );
    const actors = await manager.query(
      `SELECT DISTINCT e.actor_kind, e.actor_id, u.email, t.name AS token_name, COALESCE(g.client_name, g.client_id) AS app
         FROM ${ACTORS_OF_EVENTS}
        WHERE e.workspace_id = $1 LIMIT 200`,
      [workspaceId],
    );
    const actions: Array<{ action: string }> = await manager.query(
      'SELECT DISTINCT action FROM audit_events WHERE workspace_id = $1 ORDER BY action LIMIT 200',
      [workspaceId],
    );
    return { rows, actors, actions: actions.map((r) => r.action) };
  }

  async setPlan(tx: EntityManager, workspaceId: string, plan: Plan): Promise<void> {
    await tx.query('UPDATE workspaces SET plan = $2 WHERE id = $1', [workspaceId, plan]);
  }
}

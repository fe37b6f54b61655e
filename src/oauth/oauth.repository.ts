/** The SQL of the OAuth server's grants, sign-in failures and access-token check (OAuthRepository); what oidc-provider stores goes through pg-adapter.ts. */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { UserEntity } from '../workspaces/entities/user.entity';
import type { WorkspaceEntity } from '../workspaces/entities/workspace.entity';
import type { LoginFailureEntity } from './entities/login-failure.entity';
import type { OAuthGrantEntity } from './entities/oauth-grant.entity';

/** The purges delete at most PURGE_BATCH rows per statement. */
export const PURGE_BATCH = 1_000;

/** What an access token's check reads in one round trip: the token's payload, its grant, and the person's current role. */
export type AccessTokenRow = {
  payload: { exp?: number; aud?: string | string[]; scope?: string; grantId?: string };
  grant: (Pick<OAuthGrantEntity, 'grantId' | 'clientName' | 'userId'> & { revoked: boolean }) | null;
  workspace: Pick<WorkspaceEntity, 'id' | 'name' | 'slug' | 'plan'> | null;
  role: string | null;
};

/**
 * The SQL of the OAuth server's own tables besides what its adapter stores (pg-adapter.ts):
 * grants bound to workspaces, sign-in failures, and the sign-in's read of users.
 */
@Injectable()
export class OAuthRepository {
  /**
   * Deletes one batch of OAuth records expired for an hour; how many. The grants of a client that
   * goes (unused for CLIENT_TTL_DAYS) end with it, as revoked: none of their tokens works any more,
   * and the lists of connected apps stop showing them.
   */
  async purgeExpiredModels(manager: EntityManager): Promise<number> {
    const [{ n }] = await manager.query(
      `WITH gone AS (
         DELETE FROM oauth_models WHERE ctid = ANY (ARRAY(
           SELECT ctid FROM oauth_models WHERE expires_at < now() - interval '1 hour' LIMIT ${PURGE_BATCH}))
         RETURNING model, id),
       ended AS (
         UPDATE oauth_grants SET revoked_at = now()
          WHERE revoked_at IS NULL AND client_id IN (SELECT id FROM gone WHERE model = 'Client'))
       SELECT count(*)::int AS n FROM gone`,
    );
    return n;
  }

  /** Deletes one batch of sign-in failures whose last one is older than `hours`; how many. */
  async purgeOldFailures(manager: EntityManager, hours: number): Promise<number> {
    const [, count] = (await manager.query(
      `DELETE FROM login_failures WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM login_failures WHERE last_failure_at < now() - make_interval(hours => $1) LIMIT ${PURGE_BATCH}))`,
      [hours],
    )) as [unknown, number];
    return count;
  }

  /** The email's failure row, created (with no failure) if missing, and locked until the transaction ends. */
  async lockFailures(
    tx: EntityManager,
    email: string,
  ): Promise<Pick<LoginFailureEntity, 'failures' | 'lastFailureAt'>> {
    // One statement creates or locks the row, so a purge between two statements cannot lose it.
    const [row] = await tx.query(
      `INSERT INTO login_failures (email, failures, last_failure_at) VALUES ($1, 0, now())
       ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email RETURNING failures, last_failure_at AS "lastFailureAt"`,
      [email],
    );
    return row;
  }

  async setFailures(tx: EntityManager, email: string, failures: number): Promise<void> {
    await tx.query(`UPDATE login_failures SET failures = $2, last_failure_at = now() WHERE email = $1`, [
      email,
      failures,
    ]);
  }

  async clearFailures(manager: EntityManager, email: string): Promise<void> {
    await manager.query('DELETE FROM login_failures WHERE email = $1', [email]);
  }

  async findUserByEmail(
    manager: EntityManager,
    email: string,
  ): Promise<Pick<UserEntity, 'id' | 'passwordHash' | 'passwordMustChange'> | undefined> {
    const [user] = await manager.query(
      `SELECT id, password_hash AS "passwordHash", password_must_change AS "passwordMustChange" FROM users WHERE email = $1`,
      [email],
    );
    return user;
  }

  /**
   * Sets the password's hash, whether it must be changed at its first sign-in, and the workspace
   * it is bound to ('unchanged': keeps the binding).
   */
  async setPasswordHash(
    manager: EntityManager,
    userId: string,
    passwordHash: string,
    boundTo: string | null | 'unchanged',
    mustChange: boolean,
  ): Promise<void> {
    if (boundTo === 'unchanged')
      await manager.query('UPDATE users SET password_hash = $2, password_must_change = $3 WHERE id = $1', [
        userId,
        passwordHash,
        mustChange,
      ]);
    else
      await manager.query(
        'UPDATE users SET password_hash = $2, password_must_change = $3, password_workspace_id = $4 WHERE id = $1',
        [userId, passwordHash, mustChange, boundTo],
      );
  }

  /**
   * The workspaces of a person, with their role in each, by name: those where their password acts
   * (all of them, unless it is bound to one workspace: PASSWORD_BINDING in settings.service.ts).
   */
  workspacesOf(
    manager: EntityManager,
    userId: string,
  ): Promise<Array<{ id: string; slug: string; name: string; role: string }>> {
    return manager.query(
      `SELECT w.id, w.slug, w.name, m.role
         FROM memberships m JOIN workspaces w ON w.id = m.workspace_id JOIN users u ON u.id = m.user_id
        WHERE m.user_id = $1 AND (u.password_workspace_id IS NULL OR u.password_workspace_id = w.id)
        ORDER BY w.name, w.slug`,
      [userId],
    );
  }

  /** Inserts a grant, or updates the scopes of a live grant of the same workspace. */
  async upsertGrant(
    manager: EntityManager,
    grant: Pick<OAuthGrantEntity, 'grantId' | 'workspaceId' | 'userId' | 'clientId' | 'clientName' | 'scopes'>,
  ): Promise<boolean> {
    const rows = (await manager.query(
      `INSERT INTO oauth_grants (grant_id, workspace_id, user_id, client_id, client_name, scopes) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (grant_id) DO UPDATE SET scopes = EXCLUDED.scopes
        WHERE oauth_grants.workspace_id = EXCLUDED.workspace_id AND oauth_grants.revoked_at IS NULL
       RETURNING grant_id`,
      [grant.grantId, grant.workspaceId, grant.userId, grant.clientId, grant.clientName, grant.scopes],
    )) as unknown[];
    return rows.length > 0;
  }

  /** A grant as the audit log names it: its workspace, person, app and scopes, and whether it is revoked. */
  async grantForAudit(
    manager: EntityManager,
    grantId: string,
  ): Promise<
    | (Pick<OAuthGrantEntity, 'workspaceId' | 'userId' | 'clientId' | 'clientName' | 'scopes' | 'revokedAt'> & {
        email: string;
      })
    | undefined
  > {
    const [row] = await manager.query(
      `SELECT g.workspace_id AS "workspaceId", g.user_id AS "userId", g.client_id AS "clientId",
              g.client_name AS "clientName", g.scopes, g.revoked_at AS "revokedAt", u.email
         FROM oauth_grants g JOIN users u ON u.id = g.user_id WHERE g.grant_id = $1`,
      [grantId],
    );
    return row;
  }

  async findGrant(
    manager: EntityManager,
    grantId: string,
  ): Promise<Pick<OAuthGrantEntity, 'grantId' | 'workspaceId' | 'revokedAt'> | undefined> {
    const [row] = await manager.query(
      'SELECT grant_id AS "grantId", workspace_id AS "workspaceId", revoked_at AS "revokedAt" FROM oauth_grants WHERE grant_id = $1',
      [grantId],
    );
    return row;
  }

  /** A workspace's grants, oldest first, with the email of the person who made each. */
  listGrants(
    manager: EntityManager,
    workspaceId: string,
  ): Promise<
    Array<
      Pick<OAuthGrantEntity, 'grantId' | 'clientId' | 'clientName' | 'scopes' | 'createdAt' | 'revokedAt'> & {
        email: string;
      }
    >
  > {
    return manager.query(
      `SELECT g.grant_id AS "grantId", g.client_id AS "clientId", g.client_name AS "clientName", u.email, g.scopes,
              g.created_at AS "createdAt", g.revoked_at AS "revokedAt"
         FROM oauth_grants g JOIN users u ON u.id = g.user_id WHERE g.workspace_id = $1 ORDER BY g.created_at`,
      [workspaceId],
    );
  }

  /**
   * Revokes a grant: its tokens, codes and sessions' references, and the authorization server's own
   * grant record go (left behind, a later authorization would skip consent and get dead tokens).
   */
  async revokeGrant(tx: EntityManager, grantId: string): Promise<void> {
    await tx.query(`DELETE FROM oauth_models WHERE grant_id = $1 OR (model = 'Grant' AND id = $1)`, [grantId]);
    await tx.query('UPDATE oauth_grants SET revoked_at = COALESCE(revoked_at, now()) WHERE grant_id = $1', [grantId]);
  }

  /**
   * An access token with its grant, workspace and the person's role there (null when not a member,
   * or when their password is bound to another workspace: PASSWORD_BINDING in settings.service.ts).
   */
  async findAccessToken(manager: EntityManager, token: string): Promise<AccessTokenRow | undefined> {
    const [row] = await manager.query(
      `SELECT t.payload,
              CASE WHEN g.grant_id IS NULL THEN NULL ELSE json_build_object('grantId', g.grant_id, 'clientName', g.client_name,
                'userId', g.user_id, 'revoked', g.revoked_at IS NOT NULL) END AS grant,
              CASE WHEN w.id IS NULL THEN NULL ELSE json_build_object('id', w.id, 'name', w.name, 'slug', w.slug, 'plan', w.plan) END AS workspace,
              CASE WHEN u.password_workspace_id IS NULL OR u.password_workspace_id = g.workspace_id THEN m.role END AS role
         FROM oauth_models t
         LEFT JOIN oauth_grants g ON g.grant_id = t.grant_id
         LEFT JOIN memberships m ON m.workspace_id = g.workspace_id AND m.user_id = g.user_id
         LEFT JOIN users u ON u.id = g.user_id
         LEFT JOIN workspaces w ON w.id = g.workspace_id
        WHERE t.model = 'AccessToken' AND t.id = $1`,
      [token],
    );
    return row;
  }
}

/** The SQL of api_tokens (TokensRepository), including the one-round-trip read that verifies a token. */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Role } from '../common/access/roles';
import type { WorkspaceEntity } from '../workspaces/entities/workspace.entity';
import { ApiTokenEntity } from './entities/api-token.entity';

/** What verifying a token reads in one round trip: the token, its workspace and its creator's current role. */
export type TokenForVerification = Pick<
  ApiTokenEntity,
  'id' | 'name' | 'role' | 'scopes' | 'expiresAt' | 'revokedAt' | 'createdByUserId'
> & { workspace: Pick<WorkspaceEntity, 'id' | 'name' | 'slug' | 'plan'>; creatorRole: Role | null };

/** The SQL of the table api_tokens. */
@Injectable()
export class TokensRepository {
  insert(
    manager: EntityManager,
    token: Pick<
      ApiTokenEntity,
      'workspaceId' | 'name' | 'tokenHash' | 'tokenPrefix' | 'role' | 'scopes' | 'createdByUserId' | 'expiresAt'
    >,
  ): Promise<ApiTokenEntity> {
    return manager.getRepository(ApiTokenEntity).save(token);
  }

  /** A workspace's tokens, oldest first. */
  listByWorkspace(manager: EntityManager, workspaceId: string): Promise<ApiTokenEntity[]> {
    return manager.getRepository(ApiTokenEntity).find({ where: { workspaceId }, order: { createdAt: 'ASC' } });
  }

  findById(manager: EntityManager, id: string): Promise<ApiTokenEntity | null> {
    return manager.getRepository(ApiTokenEntity).findOneBy({ id });
  }

  /** Marks the token revoked now, unless it already is. */
  async revoke(manager: EntityManager, id: string): Promise<void> {
    await manager.query('UPDATE api_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [id]);
  }

  async findForVerification(manager: EntityManager, tokenHash: string): Promise<TokenForVerification | undefined> {
    const rows: TokenForVerification[] = await manager.query(
      `SELECT t.id, t.name, t.role, t.scopes, t.expires_at AS "expiresAt", t.revoked_at AS "revokedAt",
              t.created_by_user_id AS "createdByUserId",
              json_build_object('id', w.id, 'name', w.name, 'slug', w.slug, 'plan', w.plan) AS workspace,
              m.role AS "creatorRole"
         FROM api_tokens t
         JOIN workspaces w ON w.id = t.workspace_id
         LEFT JOIN memberships m ON m.workspace_id = t.workspace_id AND m.user_id = t.created_by_user_id
        WHERE t.token_hash = $1`,
      [tokenHash],
    );
    return rows[0];
  }

  /** Records a use, unless one was recorded less than `resolutionSeconds` ago. */
  async touchLastUsed(manager: EntityManager, id: string, resolutionSeconds: number): Promise<void> {
    await manager.query(
      `UPDATE api_tokens SET last_used_at = now()
        WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2))`,
      [id, resolutionSeconds],
    );
  }
}

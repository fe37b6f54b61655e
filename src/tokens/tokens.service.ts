import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { CREDENTIAL_CACHE_MS, CredentialVerifier, VerifyResult } from '../auth/credential-verifier';
import { Principal } from '../common/access/principal';
import { isRole, Plan, Role, roleAtLeast, Scope, SCOPES, weakerRole } from '../common/access/roles';
import { ApiError } from '../common/errors/api-error';
import { TtlCache } from '../common/ttl-cache';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { ApiTokenEntity } from './entities/api-token.entity';
import { generateToken, hashToken, isWellFormedToken, TOKEN_PREFIX, tokenDisplayPrefix } from './token-format';

export interface TokenView {
  id: string;
  name: string;
  prefix: string;
  role: Role;
  scopes: Scope[];
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  createdBy: string | null;
}

export interface CreateTokenInput {
  workspaceSlug: string;
  name: string;
  role?: Role;
  scopes?: Scope[];
  expiresAt?: Date;
  /** The member creating it; must be an owner or admin. Absent for an operator at the CLI. */
  creatorUserId?: string;
}

interface TokenRow {
  id: string;
  name: string;
  role: Role;
  scopes: Scope[] | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  created_by_user_id: string | null;
  workspace_id: string;
  workspace_name: string;
  workspace_slug: string;
  workspace_plan: Plan;
  creator_role: Role | null;
}

/** Last-used times are written at most this often per token, off the request path. */
const LAST_USED_RESOLUTION_MS = 60_000;

@Injectable()
export class TokensService implements CredentialVerifier, BeforeApplicationShutdown {
  private readonly logger = new Logger('Tokens');
  private readonly cache = new TtlCache<VerifyResult>(CREDENTIAL_CACHE_MS);
  /** Last-used writes still running (awaited at shutdown, so none is cut off). */
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly workspaces: WorkspacesService,
  ) {}

  /** Creates a token and returns its secret: the only time it is ever shown. `manager`: a caller's transaction (with its audit record). */
  async create(
    input: CreateTokenInput,
    manager: EntityManager = this.db.manager,
  ): Promise<{ token: string; view: TokenView }> {
    const workspace = await this.workspaces.requireBySlug(input.workspaceSlug);
    const role: Role = input.role ?? 'editor';
    if (input.creatorUserId) {
      const membership = await this.workspaces.findMembership(workspace.id, input.creatorUserId);
      if (!membership || !roleAtLeast(membership.role, 'admin')) {
        throw new ApiError('forbidden', { message: 'Only a workspace owner or admin can create API tokens.' });
      }
      if (!roleAtLeast(membership.role, role)) {
        throw new ApiError('forbidden', {
          message: `A token cannot have a stronger role (${role}) than its creator (${membership.role}).`,
          hint: `Pick a role up to ${membership.role}.`,
        });
      }
    }
    const token = generateToken();
    const entity = await manager.getRepository(ApiTokenEntity).save({
      workspaceId: workspace.id,
      name: input.name,
      tokenHash: hashToken(token),
      tokenPrefix: tokenDisplayPrefix(token),
      role,
      scopes: input.scopes && input.scopes.length < SCOPES.length ? [...input.scopes] : null,
      createdByUserId: input.creatorUserId ?? null,
      expiresAt: input.expiresAt ?? null,
    });
    return { token, view: TokensService.view(entity) };
  }

  async list(workspaceSlug: string): Promise<TokenView[]> {
    const workspace = await this.workspaces.requireBySlug(workspaceSlug);
    const tokens = await this.db
      .getRepository(ApiTokenEntity)
      .find({ where: { workspaceId: workspace.id }, order: { createdAt: 'ASC' } });
    return tokens.map((t) => TokensService.view(t));
  }

  /** Revokes a token; every instance refuses it within CREDENTIAL_CACHE_MS. Idempotent. */
  async revoke(id: string, manager: EntityManager = this.db.manager): Promise<TokenView> {
    const repo = manager.getRepository(ApiTokenEntity);
    const token = /^[0-9a-f-]{36}$/i.test(id) ? await repo.findOneBy({ id }) : null;
    if (!token)
      throw new ApiError('not_found', {
        message: `No API token with the id "${id}".`,
        hint: '`token list --workspace S` shows the ids.',
      });
    if (!token.revokedAt) {
      await repo.update({ id }, { revokedAt: () => 'now()' });
    }
    this.cache.delete(token.tokenHash);
    return TokensService.view(await repo.findOneByOrFail({ id }));
  }

  accepts(token: string): boolean {
    return token.startsWith(TOKEN_PREFIX);
  }

  async verify(token: string): Promise<VerifyResult> {
    // The checksum weeds out typos and made-up strings without touching the database.
    if (!isWellFormedToken(token)) return { ok: false, reason: 'unknown' };
    const hash = hashToken(token);
    let result = this.cache.get(hash);
    if (!result) {
      result = await this.lookup(hash);
      this.cache.set(hash, result);
    }
    if (result.ok && result.principal.expiresAt && result.principal.expiresAt.getTime() <= Date.now()) {
      return { ok: false, reason: 'expired' };
    }
    return result;
  }

  private async lookup(hash: string): Promise<VerifyResult> {
    // One round trip: the token, its workspace, and its creator's current role (which caps the token's).
    const rows: TokenRow[] = await this.db.query(
      `SELECT t.id, t.name, t.role, t.scopes, t.expires_at, t.revoked_at, t.created_by_user_id,
              w.id AS workspace_id, w.name AS workspace_name, w.slug AS workspace_slug, w.plan AS workspace_plan,
              m.role AS creator_role
         FROM api_tokens t
         JOIN workspaces w ON w.id = t.workspace_id
         LEFT JOIN memberships m ON m.workspace_id = t.workspace_id AND m.user_id = t.created_by_user_id
        WHERE t.token_hash = $1`,
      [hash],
    );
    const row = rows[0];
    if (!row) return { ok: false, reason: 'unknown' };
    if (row.revoked_at) return { ok: false, reason: 'revoked' };
    if (row.expires_at && row.expires_at.getTime() <= Date.now()) return { ok: false, reason: 'expired' };
    let role = row.role;
    if (row.created_by_user_id) {
      // A token never outlives its creator's access: removal stops it, a demotion caps it.
      if (!row.creator_role || !isRole(row.creator_role)) return { ok: false, reason: 'no_access' };
      role = weakerRole(role, row.creator_role);
    }
    this.touchLastUsed(row.id);
    const principal: Principal = {
      credential: { kind: 'api_token', id: row.id, name: row.name },
      credentialKey: `tok:${row.id}`,
      workspace: { id: row.workspace_id, name: row.workspace_name, slug: row.workspace_slug, plan: row.workspace_plan },
      role,
      scopes: row.scopes ?? SCOPES,
      userId: row.created_by_user_id ?? undefined,
      expiresAt: row.expires_at ?? undefined,
    };
    return { ok: true, principal };
  }

  private touchLastUsed(id: string): void {
    const write = this.db
      .query(
        `UPDATE api_tokens SET last_used_at = now()
          WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2))`,
        [id, LAST_USED_RESOLUTION_MS / 1000],
      )
      .catch((err: Error) => this.logger.warn(`could not record last use of token ${id}: ${err.message}`))
      .finally(() => this.pending.delete(write));
    this.pending.add(write);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  /** A token without its secret (also for a just-saved entity, whose unset dates are undefined). */
  static view(t: ApiTokenEntity): TokenView {
    return {
      id: t.id,
      name: t.name,
      prefix: t.tokenPrefix,
      role: t.role,
      scopes: t.scopes ?? [...SCOPES],
      createdAt: t.createdAt.toISOString(),
      expiresAt: t.expiresAt?.toISOString() ?? null,
      revokedAt: t.revokedAt?.toISOString() ?? null,
      lastUsedAt: t.lastUsedAt?.toISOString() ?? null,
      createdBy: t.createdByUserId,
    };
  }
}

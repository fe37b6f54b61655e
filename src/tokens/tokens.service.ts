import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { CREDENTIAL_CACHE_MS, CredentialVerifier, VerifyResult } from '../auth/credential-verifier';
import { Principal } from '../common/access/principal';
import { isRole, Role, roleAtLeast, Scope, SCOPES, weakerRole } from '../common/access/roles';
import { ApiError } from '../common/errors/api-error';
import { TtlCache } from '../common/ttl-cache';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { ApiTokenEntity } from './entities/api-token.entity';
import { TokensRepository } from './tokens.repository';
import { generateToken, hashToken, isWellFormedToken, TOKEN_PREFIX, tokenDisplayPrefix } from './token-format';
import { currentManager, outsideTransaction } from '../database/transaction';

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

/** Last-used times are written at most this often per token, off the request path. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** The role of a token made without one (the CLI's `token create --help` says it from here). */
export const DEFAULT_TOKEN_ROLE: Role = 'editor';

/**
 * API tokens: creation (a member's role caps the token's), listing, revocation, and verification
 * of a bearer token into a principal (cached for CREDENTIAL_CACHE_MS). The SQL is in TokensRepository.
 */
@Injectable()
export class TokensService implements CredentialVerifier, BeforeApplicationShutdown {
  private readonly logger = new Logger('Tokens');
  private readonly cache = new TtlCache<VerifyResult>(CREDENTIAL_CACHE_MS);
  /** Last-used writes still running (awaited at shutdown, so none is cut off). */
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: TokensRepository,
    private readonly workspaces: WorkspacesService,
  ) {}

  /** Creates a token and returns its secret: the only time it is ever shown. `manager`: a caller's transaction (with its audit record). */
  async create(
    input: CreateTokenInput,
    manager: EntityManager = currentManager(this.db),
  ): Promise<{ token: string; view: TokenView }> {
    const workspace = await this.workspaces.requireBySlug(input.workspaceSlug);
    const role: Role = input.role ?? DEFAULT_TOKEN_ROLE;
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
    const entity = await this.repo.insert(manager, {
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
    const tokens = await this.repo.listByWorkspace(currentManager(this.db), workspace.id);
    return tokens.map((t) => TokensService.view(t));
  }

  /** Revokes a token; every instance refuses it within CREDENTIAL_CACHE_MS. Idempotent. */
  async revoke(id: string, manager: EntityManager = currentManager(this.db)): Promise<TokenView> {
    const token = /^[0-9a-f-]{36}$/i.test(id) ? await this.repo.findById(manager, id) : null;
    if (!token)
      throw new ApiError('not_found', {
        message: `No API token with the id "${id}".`,
        hint: '`token list --workspace S` shows the ids.',
      });
    if (!token.revokedAt) await this.repo.revoke(manager, id);
    this.cache.delete(token.tokenHash);
    return TokensService.view((await this.repo.findById(manager, id))!);
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
    const row = await this.repo.findForVerification(currentManager(this.db), hash);
    if (!row) return { ok: false, reason: 'unknown' };
    if (row.revokedAt) return { ok: false, reason: 'revoked' };
    if (row.expiresAt && row.expiresAt.getTime() <= Date.now()) return { ok: false, reason: 'expired' };
    let role = row.role;
    if (row.createdByUserId) {
      // A token never outlives its creator's access: removal stops it, a demotion caps it.
      if (!row.creatorRole || !isRole(row.creatorRole)) return { ok: false, reason: 'no_access' };
      role = weakerRole(role, row.creatorRole);
    }
    this.touchLastUsed(row.id);
    const principal: Principal = {
      credential: { kind: 'api_token', id: row.id, name: row.name },
      credentialKey: `tok:${row.id}`,
      workspace: row.workspace,
      role,
      scopes: row.scopes ?? SCOPES,
      userId: row.createdByUserId ?? undefined,
      expiresAt: row.expiresAt ?? undefined,
    };
    return { ok: true, principal };
  }

  private touchLastUsed(id: string): void {
    // Not part of any transaction open around the verification: it outlives it.
    const write = outsideTransaction(() =>
      this.repo.touchLastUsed(currentManager(this.db), id, LAST_USED_RESOLUTION_MS / 1000),
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

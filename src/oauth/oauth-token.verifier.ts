/** OAuth access tokens as a kind of bearer credential. */
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { CREDENTIAL_CACHE_MS, CredentialVerifier, VerifyResult } from '../auth/credential-verifier';
import { isRole, isScope, Scope } from '../common/access/roles';
import { TtlCache } from '../common/ttl-cache';
import { APP_CONFIG, AppConfig } from '../config/config';
import { TOKEN_PREFIX } from '../tokens/token-format';
import { resourceIdentifiers } from './oauth-config';
import { OAuthRepository } from './oauth.repository';
import { currentManager } from '../database/transaction';

/**
 * OAuth access tokens (opaque, issued by the built-in authorization server) as a credential kind.
 * Reads the token the server stored, and its grant's workspace and the person's current role there,
 * in one query (no oidc-provider needed, so it also runs where the server is not mounted). Revoked
 * tokens, revoked grants, removed members and role changes are felt within CREDENTIAL_CACHE_MS.
 */
@Injectable()
export class OAuthTokenVerifier implements CredentialVerifier {
  private readonly cache = new TtlCache<VerifyResult>(CREDENTIAL_CACHE_MS);
  private readonly audiences: Set<string>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: OAuthRepository,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.audiences = new Set(resourceIdentifiers(config));
  }

  accepts(token: string): boolean {
    return !token.startsWith(TOKEN_PREFIX) && /^[A-Za-z0-9_-]{20,200}$/.test(token);
  }

  async verify(token: string): Promise<VerifyResult> {
    let result = this.cache.get(token);
    if (!result) {
      result = await this.lookup(token);
      this.cache.set(token, result);
    }
    if (result.ok && result.principal.expiresAt && result.principal.expiresAt.getTime() <= Date.now())
      return { ok: false, reason: 'expired' };
    return result;
  }

  private async lookup(token: string): Promise<VerifyResult> {
    const row = await this.repo.findAccessToken(currentManager(this.db), token);
    if (!row) return { ok: false, reason: 'unknown' };
    const payload = row.payload;
    const expiresAt = payload.exp ? new Date(payload.exp * 1000) : undefined;
    if (expiresAt && expiresAt.getTime() <= Date.now()) return { ok: false, reason: 'expired' };
    // RFC 8707: a token issued for another resource is not a credential here.
    const audiences = Array.isArray(payload.aud) ? payload.aud : payload.aud ? [payload.aud] : [];
    if (!audiences.some((a) => this.audiences.has(a))) return { ok: false, reason: 'unknown' };
    const { grant, workspace } = row;
    if (!grant || grant.revoked) return { ok: false, reason: 'revoked' };
    if (!workspace || !row.role || !isRole(row.role)) return { ok: false, reason: 'no_access' };
    const scopes = (payload.scope ?? '').split(' ').filter(isScope) as Scope[];
    return {
      ok: true,
      principal: {
        credential: { kind: 'oauth', id: grant.grantId, name: grant.clientName ?? undefined },
        // A grant, not a token: refreshing does not reset the budget, and a retry after a refresh still replays.
        credentialKey: `grant:${grant.grantId}`,
        workspace,
        role: row.role,
        scopes,
        userId: grant.userId,
        expiresAt,
      },
    };
  }
}

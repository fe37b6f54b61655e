/** The contract of a kind of bearer credential, and how long a verification is trusted. */
import type { Principal } from '../common/access/principal';

export type VerifyResult =
  { ok: true; principal: Principal } | { ok: false; reason: 'unknown' | 'revoked' | 'expired' | 'no_access' };

/**
 * One kind of bearer credential: workspace API tokens (tokens/tokens.service.ts) and OAuth access
 * tokens (oauth/oauth-token.verifier.ts). The authentication guard asks each registered verifier
 * in turn; adding a kind is adding one.
 */
export interface CredentialVerifier {
  /** Whether the token has this kind's shape (e.g. the fw_ prefix); no I/O. */
  accepts(token: string): boolean;
  verify(token: string): Promise<VerifyResult>;
}

export const CREDENTIAL_VERIFIERS = Symbol('CREDENTIAL_VERIFIERS');

/** How long a verified (or refused) credential is trusted per instance: revocation is felt within this. */
export const CREDENTIAL_CACHE_MS = 4_000;

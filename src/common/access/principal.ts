/** The Principal: who is calling, as the authentication guard establishes it. */
import type { Plan, Role, Scope } from './roles';

/** Who is calling: the credential, the workspace it acts on and what it may do there. */
export interface Principal {
  credential: {
    /** A settings page acts as the signed-in person ('session', with their user id). */
    kind: 'api_token' | 'oauth' | 'session';
    /** The token's id, for OAuth the grant's id, for a session the person's user id. */
    id: string;
    name?: string;
  };
  /**
   * The credential as budgets and Idempotency-Key records know it: an API token, or an OAuth grant
   * (so refreshing a token neither resets the budget nor stops a retry from replaying).
   */
  credentialKey: string;
  workspace: { id: string; name: string; slug: string; plan: Plan };
  role: Role;
  scopes: readonly Scope[];
  /** The person behind the credential, when there is one (OAuth, or a token's creator). */
  userId?: string;
  /** When the credential stops working; checked on every request, even from cache. */
  expiresAt?: Date;
}

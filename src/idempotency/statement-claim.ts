import { currentRequestContext, RequestContext } from '../common/request-context';
import type { KeyId } from './idempotency.repository';

/**
 * An Idempotency-Key that the tool's own write statement claims (issue 38): the statement that
 * stores the write also takes the key and stores the answer, so a keyed call costs what an
 * unkeyed one does (no transaction of its own, no extra round trips). Offered by IdempotencyService
 * to the tools registered for it (IdempotencyService.claimInStatement) while their run has no
 * transaction open.
 *
 * The tool either stores its write with the key (`answer` set), or throws NeedsClaimTransaction
 * without having written anything (its statement found the key held by another call, or the call
 * takes a path the statement does not cover): the call then runs again the usual way, in a
 * transaction that claims the key first, which replays the answer of the call that holds the key,
 * or refuses (422, 409) as for any keyed call.
 */
export interface StatementClaim {
  id: KeyId;
  fingerprint: Buffer;
  workspaceId: string;
  /** Set once the tool's statement stored the write, the key and this answer (JSON text): what the call sends. */
  answer?: string;
}

/**
 * The claim offered to each request's tool call, by the request's context (rather than an
 * AsyncLocalStorage of its own, which every promise of the process would then carry).
 */
const offered = new WeakMap<RequestContext, StatementClaim>();

/**
 * Runs a tool's work with `claim` offered to its write statement. Outside a request's context
 * nothing can be offered: NeedsClaimTransaction at once, before any work.
 */
export async function withStatementClaim<T>(claim: StatementClaim, work: () => Promise<T>): Promise<T> {
  const context = currentRequestContext();
  if (!context) throw new NeedsClaimTransaction();
  offered.set(context, claim);
  try {
    return await work();
  } finally {
    offered.delete(context);
  }
}

/** The key this call's write statement must claim, if one is offered and not yet taken. */
export function statementClaim(): StatementClaim | undefined {
  const context = currentRequestContext();
  const claim = context && offered.get(context);
  return claim?.answer === undefined ? claim : undefined;
}

/** Thrown by a tool before it writes anything: this call needs the key claimed in a transaction first. */
export class NeedsClaimTransaction extends Error {
  constructor() {
    super('This call takes its Idempotency-Key in a transaction of its own.');
  }
}

import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import type { Principal } from '../common/access/principal';
import { ApiError } from '../common/errors/api-error';
import { currentRequestContext } from '../common/request-context';
import { inBatches } from '../database/in-batches';
import { currentManager, inTransaction } from '../database/transaction';
import { fingerprint } from './canonical-json';
import { ClaimRow, IdempotencyRepository, KeyId, PURGE_BATCH } from './idempotency.repository';
import { NeedsClaimTransaction, StatementClaim, withStatementClaim } from './statement-claim';
import { metrics } from '../observability/metrics';

/** Longest Idempotency-Key accepted (Stripe's limit, and the draft's advice to bound it). */
export const MAX_KEY_LENGTH = 255;
export { LOCK_SECONDS, RETENTION_HOURS } from './idempotency.repository';
/** The purge runs every PURGE_EVERY_MS, MAX_BATCHES statements at most (PURGE_BATCH rows each). */
const PURGE_EVERY_MS = 10 * 60_000;

/** A tool call that carries an Idempotency-Key. */
export interface KeyedCall {
  principal: Principal;
  tool: string;
  /** Write tools run inside the transaction that claims the key; read tools under a committed claim. */
  write: boolean;
  key: string;
  /** The validated arguments; their canonical JSON is fingerprinted. */
  args: unknown;
  requestId: string;
}

/** What to send: the tool's answer (first run) or the stored one (replay). */
export interface KeyedOutcome {
  status: number;
  headers: Record<string, string>;
  /** JSON text, sent as is so that a replay is byte for byte the first answer. */
  body: string;
  replayed: boolean;
}

/** Seals a stored answer that holds a secret, and opens it for a replay (see IdempotencyService.sealAnswersOf). */
export interface AnswerSeal {
  seal(body: string): string;
  /** The answer as first sent; a body stored unsealed (before its tool was registered) as it is. */
  open(stored: string): string;
}

/**
 * Idempotent retries of tool calls (Idempotency-Key). A key is claimed atomically per (credential,
 * tool, key) with the SHA-256 of the canonical arguments, by one INSERT ... ON CONFLICT that leaves
 * a live key untouched (it only takes over an expired record, or a run whose lock expired):
 *  - a write tool's claim is made in a transaction that the tool's own writes join, and its answer
 *    is stored in it before the commit: the key, the write and the answer commit together or not at
 *    all, at the price of two statements and no extra commit;
 *  - a read tool's claim is committed as "in progress" with a lock expiry, then completed.
 * The tool's own answers (2xx and 4xx) are stored and replayed; a 5xx leaves no trace, so a retry
 * runs afresh. A tool registered with claimInStatement (create_response) may instead claim the key
 * in its own write statement, with its answer (see statement-claim.ts): one statement, as
 * unkeyed. Failures before the tool ran (authentication, access, arguments, rate limit) never get
 * here.
 */
@Injectable()
export class IdempotencyService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Idempotency');
  private purgeTimer?: NodeJS.Timeout;
  /** The tools whose answers are stored sealed, and their seal. */
  private readonly seals = new Map<string, AnswerSeal>();
  /** The write tools whose statement can claim the key, for the calls whose arguments it covers. */
  private readonly inStatement = new Map<string, (args: unknown) => boolean>();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: IdempotencyRepository,
  ) {}

  /** The Idempotency-Key of a request: undefined when absent, 400 invalid_arguments when empty or too long. */
  static parseKey(header: string | string[] | undefined): string | undefined {
    if (header === undefined) return undefined;
    const key = Array.isArray(header) ? header.join(', ') : header;
    if (key.length === 0 || key.length > MAX_KEY_LENGTH) {
      throw new ApiError('invalid_arguments', {
        message:
          key.length === 0
            ? 'The Idempotency-Key header is empty.'
            : `The Idempotency-Key header is ${key.length} characters long; at most ${MAX_KEY_LENGTH} are accepted.`,
        hint: `Send a new unique value of 1 to ${MAX_KEY_LENGTH} characters for each distinct request (a UUID is a good choice), or leave the header out.`,
      });
    }
    return key;
  }

  /**
   * The answers of these tools hold a secret (a webhook's signing secret, which the database holds
   * only sealed): they are stored sealed too, so that a dump does not give it through a stored
   * answer either, and a replay opens them.
   */
  sealAnswersOf(tools: string[], seal: AnswerSeal): void {
    for (const tool of tools) this.seals.set(tool, seal);
  }

  /** `tool`'s calls whose arguments `covers` claim their key in the tool's write statement (see statement-claim.ts). */
  claimInStatement(tool: string, covers: (args: unknown) => boolean): void {
    this.inStatement.set(tool, covers);
  }

  /** Runs the tool once per key: the first call runs it, a retry with the same arguments replays its answer. */
  async run(call: KeyedCall, runTool: () => Promise<unknown>): Promise<KeyedOutcome> {
    const print = fingerprint(call.args);
    if (!call.write) return this.runUnderCommittedClaim(call, print, runTool);
    return this.inStatement.get(call.tool)?.(call.args)
      ? this.runWithStatementClaim(call, print, runTool)
      : this.runInClaimTransaction(call, print, runTool);
  }

  /**
   * The tool's statement claims the key and stores the answer with its write (no transaction
   * here). When the tool needs the usual way instead (NeedsClaimTransaction, or a refusal, which it
   * gives before writing anything), the call runs again in a claim transaction: its answer, 4xx
   * included, is then stored as usual.
   */
  private async runWithStatementClaim(
    call: KeyedCall,
    print: Buffer,
    runTool: () => Promise<unknown>,
  ): Promise<KeyedOutcome> {
    const claim: StatementClaim = {
      id: keyId(call),
      fingerprint: print,
      workspaceId: call.principal.workspace.id,
    };
    try {
      await withStatementClaim(claim, runTool);
    } catch (err) {
      if (err instanceof NeedsClaimTransaction || (isToolAnswer(err) && claim.answer === undefined))
        return this.runInClaimTransaction(call, print, runTool);
      throw err;
    }
    // A tool that returned without its statement taking the key has a bug: its write is not keyed.
    if (claim.answer === undefined) throw new Error(`${call.tool} returned without claiming its Idempotency-Key`);
    // The stored text itself, so that a replay is byte for byte this answer.
    return { status: 200, headers: {}, body: claim.answer, replayed: false };
  }

  private async runInClaimTransaction(
    call: KeyedCall,
    print: Buffer,
    runTool: () => Promise<unknown>,
  ): Promise<KeyedOutcome> {
    const token = randomUUID();
    let ran = false;
    try {
      const outcome = await inTransaction(this.db, async (tx) => {
        const claim = await this.claim(tx, call, print, token);
        if (!claim.claimed) return claim;
        ran = true;
        const result = await runTool(); // the tool's writes join this transaction (inTransaction)
        const body = JSON.stringify(result ?? null);
        await this.complete(tx, call, token, 200, null, this.sealed(call.tool, body), subjectsOf(call.args, result));
        return { status: 200, headers: {}, body, replayed: false } satisfies KeyedOutcome;
      });
      return 'claimed' in outcome ? this.existing(call, print, outcome) : outcome;
    } catch (err) {
      // The transaction rolled back (the tool's writes with it); the tool's own refusal is its answer.
      if (ran && isToolAnswer(err)) await this.storeRefusal(call, print, err);
      throw err;
    }
  }

  private async runUnderCommittedClaim(
    call: KeyedCall,
    print: Buffer,
    runTool: () => Promise<unknown>,
  ): Promise<KeyedOutcome> {
    const token = randomUUID();
    const claim = await this.claim(currentManager(this.db), call, print, token);
    if (!claim.claimed) return this.existing(call, print, claim);
    let result: unknown;
    try {
      result = await runTool();
    } catch (err) {
      if (isToolAnswer(err)) {
        await this.complete(
          currentManager(this.db),
          call,
          token,
          err.status,
          err.headers ?? null,
          JSON.stringify(err.toJSON(call.requestId)),
          subjectsOf(call.args),
        ).catch((e) => this.logger.warn(`could not store the answer for an Idempotency-Key: ${(e as Error).message}`));
      } else {
        await this.repo.release(currentManager(this.db), keyId(call), token).catch(() => undefined);
      }
      throw err;
    }
    const body = JSON.stringify(result ?? null);
    // A read has no effect to protect: if storing fails, answer anyway (a retry runs it again once the lock expires).
    const stored = this.sealed(call.tool, body);
    await this.complete(currentManager(this.db), call, token, 200, null, stored, subjectsOf(call.args, result)).catch(
      (e) => this.logger.warn(`could not store the answer for an Idempotency-Key: ${(e as Error).message}`),
    );
    return { status: 200, headers: {}, body, replayed: false };
  }

  private claim(manager: EntityManager, call: KeyedCall, print: Buffer, token: string): Promise<ClaimRow> {
    return this.repo.claim(manager, keyId(call), {
      fingerprint: print,
      token,
      workspaceId: call.principal.workspace.id,
      readOnly: !call.write,
    });
  }

  private complete(
    manager: EntityManager,
    call: KeyedCall,
    token: string,
    status: number,
    headers: Record<string, string> | null,
    body: string,
    subjects: Subjects,
  ): Promise<void> {
    return this.repo.complete(manager, keyId(call), token, {
      responseStatus: status,
      responseHeaders: headers,
      responseBody: body,
      formPublicId: subjects.form,
      responseId: subjects.response,
    });
  }

  private async storeRefusal(call: KeyedCall, print: Buffer, err: ApiError) {
    const subjects = subjectsOf(call.args);
    await this.repo
      .store(currentManager(this.db), keyId(call), {
        fingerprint: print,
        responseStatus: err.status,
        responseHeaders: err.headers ?? null,
        responseBody: JSON.stringify(err.toJSON(call.requestId)),
        workspaceId: call.principal.workspace.id,
        readOnly: !call.write,
        formPublicId: subjects.form,
        responseId: subjects.response,
      })
      .catch((e) => this.logger.warn(`could not store the answer for an Idempotency-Key: ${(e as Error).message}`));
  }

  /**
   * The key is taken: the stored answer, or why not (422 for other arguments, 409 while the first
   * call runs). A finished record is answered even when the key's lock is busy, since a lock is
   * also held for a moment by every concurrent retry.
   */
  private existing(call: KeyedCall, print: Buffer, claim: ClaimRow): KeyedOutcome {
    if (claim.fingerprint && !print.equals(claim.fingerprint)) {
      throw new ApiError('idempotency_key_reused', {
        message: `This Idempotency-Key was already used for ${call.tool} with different arguments.`,
      });
    }
    if (claim.responseStatus === null || claim.responseBody === null) {
      throw new ApiError('idempotency_key_in_use', {
        message: `A ${call.tool} call with this Idempotency-Key is still running.`,
        headers: { 'Retry-After': '1' },
      });
    }
    metrics.idempotentReplays.inc();
    return {
      status: claim.responseStatus,
      headers: claim.responseHeaders ?? {},
      body: claim.responseStatus < 300 ? this.opened(call.tool, claim.responseBody) : claim.responseBody,
      replayed: true,
    };
  }

  private sealed(tool: string, body: string): string {
    return this.seals.get(tool)?.seal(body) ?? body;
  }

  private opened(tool: string, stored: string): string {
    return this.seals.get(tool)?.open(stored) ?? stored;
  }

  /**
   * Called by delete_form and delete_response inside their transaction, so that nothing of what
   * they delete stays readable through a replay: the workspace's stored read answers are
   * forgotten, and the stored answers of writes that showed the form (or the response) become a
   * 404 not_found; their keys stay spent, so a retry still does not run the write again.
   */
  async forgetDeleted(
    tx: EntityManager,
    deleted: { workspaceId: string; formPublicId?: string; responseId?: string },
  ): Promise<void> {
    const gone = new ApiError('not_found', {
      message: 'What this request returned has since been deleted.',
      hint: 'The form or response it showed was deleted after this call ran; list_forms and list_responses show what exists now.',
    });
    await this.repo.forget(
      tx,
      {
        workspaceId: deleted.workspaceId,
        formPublicId: deleted.formPublicId ?? null,
        responseId: deleted.responseId ?? null,
      },
      { status: gone.status, body: JSON.stringify(gone.toJSON(currentRequestContext()?.requestId)) },
    );
  }

  /** Deletes records older than the retention, in small batches (each instance runs this every 10 minutes). */
  async purgeExpired(): Promise<number> {
    return inBatches(() => this.repo.purgeBatch(currentManager(this.db)), PURGE_BATCH);
  }

  onModuleInit() {
    this.purgeTimer = setInterval(() => {
      this.purgeExpired()
        .then((n) => n > 0 && this.logger.debug(`purged ${n} expired Idempotency-Key records`))
        .catch((err: Error) => this.logger.warn(`could not purge expired Idempotency-Key records: ${err.message}`));
    }, PURGE_EVERY_MS);
    this.purgeTimer.unref();
  }

  onModuleDestroy() {
    clearInterval(this.purgeTimer);
  }
}

/** The form and response a stored answer shows: named by the arguments, or by the result (a created form or response). */
interface Subjects {
  form: string | null;
  response: string | null;
}

function subjectsOf(args: unknown, result?: unknown): Subjects {
  const a = (args ?? {}) as Record<string, unknown>;
  const r = (result && typeof result === 'object' ? result : {}) as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' ? v : null);
  return { form: text(a.publicId) ?? text(r.publicId), response: text(a.responseId) ?? text(r.id) };
}

function keyId(call: KeyedCall): KeyId {
  return { scope: call.principal.credentialKey, tool: call.tool, key: call.key };
}

/** An answer of the tool itself (stored and replayed), as opposed to a failure of the service (5xx). */
function isToolAnswer(err: unknown): err is ApiError {
  return err instanceof ApiError && err.status < 500;
}

import { BeforeApplicationShutdown, Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { databaseUnavailable } from '../common/errors/database-unavailable';
import { outsideRequestContext } from '../common/request-context';
import { APP_CONFIG, AppConfig } from '../config/config';
import { currentManager, inTransaction, outsideTransaction } from '../database/transaction';
import { IdempotencyService, KeyTaken, WriteAnswer, WriteKey } from '../idempotency/idempotency.service';
import { InsertedResponse, NewResponse, ResponsesRepository } from './responses.repository';

/** Most submissions one statement stores. */
export const MAX_INSERT_BATCH = 64;

/** The Idempotency-Key a submission claims with its insert, and the answer stored with it (IdempotencyService.claimInStatement). */
export interface ResponseClaim {
  key: WriteKey;
  answer: WriteAnswer;
}

/** A submission and the key it claims, if any. */
interface Submission {
  response: NewResponse;
  claim?: ResponseClaim;
}

/** What became of a submission: its row, undefined when its form changed, or its key found taken. */
type Stored = InsertedResponse | undefined | KeyTaken;

interface Waiting extends Submission {
  resolve: (stored: InsertedResponse | undefined) => void;
  reject: (err: unknown) => void;
  /** When it has waited as long as a request may wait for a pooled connection (Date.now()). */
  until: number;
}

/**
 * Group commit for submissions made outside a transaction: while `maxInFlight` insert statements
 * are running, the submissions that arrive wait, and the next statement to start stores the
 * waiting submissions of one workspace (up to MAX_INSERT_BATCH) at once; workspaces take turns.
 * One workspace per statement: a statement touches one tenant's rows, as a single submission
 * does, and a tenant's flood of submissions waits behind its own, not in front of others'.
 *
 * A statement stores each response only if its own form is still at its version, so one is as if
 * stored alone: what it returns is that response's row, or undefined when its form changed. Under
 * light load nothing waits (a statement starts at once with one response); under load the
 * submissions of one statement share its round trip, the forms' share locks and its commit
 * (bench/README.md has what that saves).
 *
 * A submission with an Idempotency-Key (`claim`) joins a batch too: the batch then runs in one
 * transaction, whose first statement claims the keys with their answers and whose second is the
 * insert (see insertClaimed), so each key, its response and its stored answer commit together or
 * not at all. A batch never holds two submissions of one key (the second waits for the next).
 *
 * Failures: when a statement of several fails on one submission's data (SQLSTATE class 22 or 23),
 * each of its submissions is tried again alone, one after another, so that such an error is only
 * ever the submission's own. Any other failure (the database away, a timeout) is every one's. A
 * submission that waited its turn longer than a request may wait for a pooled connection
 * (DATABASE_CONNECT_TIMEOUT_MS) is answered 503 with Retry-After, as that wait would have been.
 */
@Injectable()
export class ResponseInsertBatcher implements BeforeApplicationShutdown {
  /** The waiting submissions by workspace, in the order the workspaces take their turns. */
  private readonly waiting = new Map<string, Waiting[]>();
  private inFlight = 0;
  private idle?: () => void;
  /** Insert statements at once: half the pool (at least 1), so that other calls always find connections. */
  readonly maxInFlight: number;
  private readonly maxWaitMs: number;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: ResponsesRepository,
    private readonly idempotency: IdempotencyService,
    @Inject(APP_CONFIG) config: Pick<AppConfig, 'databasePoolSize' | 'databaseTimeouts'>,
  ) {
    this.maxInFlight = Math.max(1, Math.floor(config.databasePoolSize / 2));
    this.maxWaitMs = config.databaseTimeouts.connectMs;
  }

  /** Stores `response` (see above): its row, or undefined when its form changed; rejects with KeyTaken when `claim`'s key is taken. */
  insert(response: NewResponse, claim?: ResponseClaim): Promise<InsertedResponse | undefined> {
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { response, claim, resolve, reject, until: Date.now() + this.maxWaitMs };
      const queue = this.waiting.get(response.form.workspaceId);
      if (queue) queue.push(waiting);
      else this.waiting.set(response.form.workspaceId, [waiting]);
      this.startNext();
    });
  }

  private startNext(): void {
    while (this.inFlight < this.maxInFlight) {
      const batch = this.takeBatch();
      if (!batch) break;
      this.inFlight++;
      // Work of several requests: inside none of their transactions (none is open where the
      // batcher is used) and none of their log contexts.
      void outsideRequestContext(() => outsideTransaction(() => this.store(batch))).finally(() => {
        this.inFlight--;
        if (this.inFlight === 0 && this.waiting.size === 0) this.idle?.();
        this.startNext();
      });
    }
  }

  /** The next workspace's waiting submissions (up to MAX_INSERT_BATCH); it goes to the back of the line. */
  private takeBatch(): Waiting[] | undefined {
    const now = Date.now();
    for (const [workspaceId, queue] of this.waiting) {
      this.waiting.delete(workspaceId);
      // Oldest first, so only the first ones can have waited too long.
      let first = 0;
      while (first < queue.length && queue[first].until < now) queue[first++].reject(databaseUnavailable('busy'));
      // A key claimed twice in one statement would fail it: a second submission of a key waits.
      const batch: Waiting[] = [];
      const later: Waiting[] = [];
      const keys = new Set<string>();
      for (const w of queue.slice(first)) {
        const key = w.claim && [w.claim.key.id.scope, w.claim.key.id.tool, w.claim.key.id.key].join('\u001f');
        if (batch.length === MAX_INSERT_BATCH || (key !== undefined && keys.has(key))) later.push(w);
        else {
          batch.push(w);
          if (key !== undefined) keys.add(key);
        }
      }
      if (later.length) this.waiting.set(workspaceId, later);
      if (batch.length) return batch;
    }
    return undefined;
  }

  private async store(batch: Waiting[]): Promise<void> {
    try {
      const stored = await this.storeNow(batch);
      batch.forEach((w, n) => settle(w, stored[n]));
    } catch (err) {
      if (batch.length === 1 || !isSubmissionDataError(err)) {
        for (const w of batch) w.reject(err);
        return;
      }
      // Nothing of the statement was stored: each submission alone, within this statement's slot.
      for (const w of batch) {
        await this.storeNow([w]).then(([stored]) => settle(w, stored), w.reject);
      }
    }
  }

  /**
   * One statement outside any transaction (see startNext), or the claims and the insert in one
   * transaction, which commits once the tool of each keyed submission stored has answered: a tool
   * that fails after its insert rolls the batch back (its neighbours get 503 and may retry with
   * their keys), so a failed keyed call leaves nothing stored, as in the claim's transaction.
   */
  private async storeNow(batch: Waiting[]): Promise<Stored[]> {
    if (batch.some((w) => w.claim)) {
      const waited: ResponseClaim[] = [];
      try {
        const stored = await inTransaction(this.db, async (tx) => {
          const stored = await this.insertClaimed(tx, batch);
          const answers = batch.flatMap((w, n) => {
            const row = stored[n];
            if (!w.claim || !row || row instanceof KeyTaken) return [];
            waited.push(w.claim);
            const answered = w.claim.key.inserted();
            w.resolve(row);
            return [answered];
          });
          if (!(await Promise.all(answers)).every(Boolean)) throw databaseUnavailable('busy');
          return stored;
        });
        for (const claim of waited) claim.key.ended();
        return stored;
      } catch (err) {
        for (const claim of waited) claim.key.ended(err);
        throw err;
      }
    }
    const stored = await this.repo.insertMany(
      currentManager(this.db),
      batch.map((w) => w.response),
    );
    const byId = new Map(stored.map((row) => [row.id, row]));
    return batch.map((w) => byId.get(w.response.id));
  }

  /**
   * Stores submissions in the transaction `tx`, those with a claim after claiming their keys with
   * their answers in one statement (IdempotencyService.claimWrites), which gives them the time the
   * answers show: a response whose key is taken is not inserted (KeyTaken), and the claim of one
   * that was not stored (its form changed) is taken back. Two statements, three in that last case.
   */
  private async insertClaimed(tx: EntityManager, batch: Submission[]): Promise<Stored[]> {
    const keyed = batch.filter((w) => w.claim);
    const claims = new Map<Submission, Awaited<ReturnType<IdempotencyService['claimWrites']>>[number]>();
    if (keyed.length) {
      const rows = await this.idempotency.claimWrites(
        tx,
        keyed.map((w) => w.claim!),
      );
      keyed.forEach((w, n) => claims.set(w, rows[n]));
    }
    const inserted = batch.flatMap((w) => {
      const claim = claims.get(w);
      if (!claim) return [w.response];
      return claim.claimed ? [{ ...w.response, submittedAt: claim.at }] : [];
    });
    const stored = inserted.length ? await this.repo.insertMany(tx, inserted) : [];
    const byId = new Map(stored.map((row) => [row.id, row]));
    const unstored = keyed.filter((w) => claims.get(w)!.claimed && !byId.has(w.response.id));
    if (unstored.length)
      await this.idempotency.unclaimWrites(
        tx,
        unstored.map((w) => w.claim!.key),
      );
    return batch.map((w) => {
      const claim = claims.get(w);
      return claim && !claim.claimed ? new KeyTaken(claim) : byId.get(w.response.id);
    });
  }

  /** Lets the statements under way finish before the pool closes. */
  async beforeApplicationShutdown(): Promise<void> {
    if (this.inFlight === 0 && this.waiting.size === 0) return;
    await new Promise<void>((resolve) => (this.idle = resolve));
  }
}

function settle(w: Waiting, stored: Stored): void {
  if (stored instanceof KeyTaken) w.reject(stored);
  else w.resolve(stored);
}

/** A failure caused by what a statement was given (SQLSTATE class 22 data exception, 23 integrity). */
function isSubmissionDataError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code);
}

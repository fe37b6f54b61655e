import { BeforeApplicationShutdown, Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { databaseUnavailable } from '../common/errors/database-unavailable';
import { outsideRequestContext } from '../common/request-context';
import { APP_CONFIG, AppConfig } from '../config/config';
import { currentManager, outsideTransaction } from '../database/transaction';
import { InsertedResponse, NewResponse, ResponsesRepository } from './responses.repository';
import { metrics } from '../observability/metrics';

/** Most submissions one statement stores. */
export const MAX_INSERT_BATCH = 64;

interface Waiting {
  response: NewResponse;
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
    @Inject(APP_CONFIG) config: Pick<AppConfig, 'databasePoolSize' | 'databaseTimeouts'>,
  ) {
    this.maxInFlight = Math.max(1, Math.floor(config.databasePoolSize / 2));
    this.maxWaitMs = config.databaseTimeouts.connectMs;
  }

  /** Stores `response` (see above): its row, or undefined when its form changed. */
  insert(response: NewResponse): Promise<InsertedResponse | undefined> {
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { response, resolve, reject, until: Date.now() + this.maxWaitMs };
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
      const batch = queue.slice(first, first + MAX_INSERT_BATCH);
      if (queue.length > first + MAX_INSERT_BATCH) this.waiting.set(workspaceId, queue.slice(first + MAX_INSERT_BATCH));
      if (batch.length) return batch;
    }
    return undefined;
  }

  private async store(batch: Waiting[]): Promise<void> {
    const pool = currentManager(this.db); // outside any transaction (see startNext)
    metrics.insertBatchSize.observe(batch.length);
    try {
      const stored = await this.repo.insertMany(
        pool,
        batch.map((w) => w.response),
      );
      const byId = new Map(stored.map((row) => [row.id, row]));
      for (const w of batch) w.resolve(byId.get(w.response.id));
    } catch (err) {
      if (batch.length === 1 || !isSubmissionDataError(err)) {
        for (const w of batch) w.reject(err);
        return;
      }
      // Nothing of the statement was stored: each submission alone, within this statement's slot.
      for (const w of batch) {
        await this.repo.insertMany(pool, [w.response]).then(([row]) => w.resolve(row), w.reject);
      }
    }
  }

  /** Lets the statements under way finish before the pool closes. */
  async beforeApplicationShutdown(): Promise<void> {
    if (this.inFlight === 0 && this.waiting.size === 0) return;
    await new Promise<void>((resolve) => (this.idle = resolve));
  }
}

/** A failure caused by what a statement was given (SQLSTATE class 22 data exception, 23 integrity). */
function isSubmissionDataError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code);
}

import { AsyncLocalStorage } from 'node:async_hooks';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { ApiError } from '../common/errors/api-error';
import { APP_CONFIG, AppConfig } from '../config/config';
import { ReadReplica } from '../database/replica';
import { readAtScrape } from '../observability/metrics';

/** Runs a read on the database it is given (the replica's or the primary's DataSource). */
export type LongRead<T> = (db: DataSource) => Promise<T>;

/** Seconds a refused long read is told to wait: the reads it queues behind take seconds, not minutes. */
export const LONG_READ_RETRY_AFTER_S = 2;

/**
 * How many long reads run at once on this instance: filtered list_responses and
 * summarize_responses (statements of up to FILTERED_READ_MS over a form's rows) and export
 * downloads (a batch statement after another for as long as the client reads). Each takes a
 * connection of the instance's pool, which every tenant shares, so two caps hold:
 *  - per workspace (LONG_READS_PER_WORKSPACE, 2): one workspace cannot spend its whole rate budget
 *    on them;
 *  - for the instance, the pool size less 2 (at least 1): however many workspaces run them, two
 *    connections stay for every other call (a token check, a submission, a page of responses).
 *
 * A slot is taken before the read starts and given back when it ends, however it ends. A read
 * past either cap is refused at once with 429 `rate_limited` and Retry-After, the answer a script
 * already handles, rather than queued (a queued read would still hold its caller's connection
 * and time). Counted per instance, on purpose: what the caps protect is this instance's pool.
 *
 * With a read replica (DATABASE_REPLICA_URL, see ReadReplica) the reads run there once it holds
 * everything committed before they started, else on the primary: each read is given the
 * DataSource to use, and is run again on the primary when the replica fails it.
 */
@Injectable()
export class LongReads {
  private readonly running = new Map<string, number>();
  private runningAll = 0;
  /** The workspace whose slot the work running now holds already (a job's: see within). */
  private readonly held = new AsyncLocalStorage<string>();
  readonly perWorkspace: number;
  readonly perInstance: number;

  constructor(
    @Inject(APP_CONFIG) config: Pick<AppConfig, 'longReadsPerWorkspace' | 'databasePoolSize'>,
    @Optional() @InjectDataSource() private readonly db?: DataSource,
    @Optional() private readonly replica?: ReadReplica,
  ) {
    this.perWorkspace = config.longReadsPerWorkspace;
    this.perInstance = Math.max(1, config.databasePoolSize - 2);
    readAtScrape.longReadsInUse = () => this.runningAll;
  }

  /** Long reads of the workspace running now on this instance. */
  runningFor(workspaceId: string): number {
    return this.running.get(workspaceId) ?? 0;
  }

  /**
   * Takes a slot of the workspace, or throws 429 when its slots (or the instance's) are taken.
   * Returns the function that gives the slot back (once, however often it is called).
   */
  take(workspaceId: string): () => void {
    if (this.held.getStore() === workspaceId) return () => undefined;
    const now = this.runningFor(workspaceId);
    if (now >= this.perWorkspace) {
      throw busy(
        `This workspace already runs ${now} filtered reads or export downloads at once on this server, the most it may.`,
      );
    }
    if (this.runningAll >= this.perInstance) {
      throw busy(
        `This server already runs ${this.runningAll} filtered reads or export downloads at once, the most it may.`,
      );
    }
    this.running.set(workspaceId, now + 1);
    this.runningAll++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.runningAll--;
      const left = this.runningFor(workspaceId) - 1;
      if (left > 0) this.running.set(workspaceId, left);
      else this.running.delete(workspaceId);
    };
  }

  /**
   * Runs `work` in the slot `workspaceId` took already (a background job's, src/jobs/): the long
   * reads it makes take no other, so the job holds one slot, which its cancel gives back at once.
   */
  within<T>(workspaceId: string, work: () => Promise<T>): Promise<T> {
    return this.held.run(workspaceId, work);
  }

  /** Runs `read` in a slot of the workspace (429 when none is free), on the replica when it has caught up. */
  async run<T>(workspaceId: string, read: LongRead<T>): Promise<T> {
    const giveBack = this.take(workspaceId);
    try {
      return await (
        await this.source()
      )(read);
    } finally {
      giveBack();
    }
  }

  /**
   * Where the reads of one long read (an export's batches) run, chosen now: the replica once it has
   * replayed everything committed until now (bounded wait), else the primary. Take a slot first.
   */
  async source(): Promise<<T>(read: LongRead<T>) => Promise<T>> {
    const { replica, db } = this;
    if (!replica?.configured) return (read) => read(db!);
    const chosen = await replica.source();
    return (read) => replica.read(chosen, read);
  }
}

function busy(message: string): ApiError {
  return new ApiError('rate_limited', {
    message,
    hint: `Retry after ${LONG_READ_RETRY_AFTER_S} seconds, or wait for a running export to finish. Reads without "where" are not limited this way.`,
    headers: { 'Retry-After': String(LONG_READ_RETRY_AFTER_S) },
  });
}

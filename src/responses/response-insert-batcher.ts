import { BeforeApplicationShutdown, Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/config';
import { currentManager, outsideTransaction } from '../database/transaction';
import { InsertedResponse, NewResponse, ResponsesRepository } from './responses.repository';

/** Most submissions one statement stores. */
export const MAX_INSERT_BATCH = 64;

interface Waiting {
  response: NewResponse;
  resolve: (stored: InsertedResponse | undefined) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit for submissions made outside a transaction: while `maxInFlight` insert statements
 * are running, the submissions that arrive wait, and the next statement to start stores those of
 * one workspace (the oldest waiting one's, up to MAX_INSERT_BATCH) at once. One workspace per
 * statement: a statement touches one tenant's rows, as a single submission does (docs/scaling.md),
 * and a submission that fails makes only its own workspace's submissions be tried again alone. A statement stores each response only if its own form
 * is still at its version, so one is as if stored alone: what it returns is that response's row,
 * or undefined when its form changed. Under light load nothing waits (a statement starts at once
 * with one response); under load the submissions of one statement share its round trip, the
 * forms' share locks and its commit (bench/README.md has what that saves).
 *
 * When a statement of several fails, each of its submissions is tried again alone, so that a
 * failure is only ever the submission's own (its error is the one it would have got alone).
 * At most `maxInFlight` (half the pool, at least 1) of these statements run at once, so batched
 * submissions never hold more than half of the instance's connections.
 */
@Injectable()
export class ResponseInsertBatcher implements BeforeApplicationShutdown {
  private waiting: Waiting[] = [];
  private inFlight = 0;
  private idle?: () => void;
  readonly maxInFlight: number;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: ResponsesRepository,
    @Inject(APP_CONFIG) config: Pick<AppConfig, 'databasePoolSize'>,
  ) {
    this.maxInFlight = Math.max(1, Math.floor(config.databasePoolSize / 2));
  }

  /** Stores `response` (see above): its row, or undefined when its form changed. */
  insert(response: NewResponse): Promise<InsertedResponse | undefined> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ response, resolve, reject });
      this.startNext();
    });
  }

  private startNext(): void {
    while (this.inFlight < this.maxInFlight && this.waiting.length) {
      const batch = this.takeBatch();
      this.inFlight++;
      // The statement belongs to no request's transaction (none is open where it is used).
      void outsideTransaction(() => this.store(batch)).finally(() => {
        this.inFlight--;
        if (this.inFlight === 0 && !this.waiting.length) this.idle?.();
        this.startNext();
      });
    }
  }

  /**
   * The oldest waiting submission and those of its workspace that waited behind it (up to
   * MAX_INSERT_BATCH), in arrival order: a statement never mixes workspaces.
   */
  private takeBatch(): Waiting[] {
    const workspaceId = this.waiting[0].response.form.workspaceId;
    const batch: Waiting[] = [];
    const rest: Waiting[] = [];
    for (const w of this.waiting) {
      if (batch.length < MAX_INSERT_BATCH && w.response.form.workspaceId === workspaceId) batch.push(w);
      else rest.push(w);
    }
    this.waiting = rest;
    return batch;
  }

  private async store(batch: Waiting[]): Promise<void> {
    const pool = currentManager(this.db); // outside any transaction (see startNext)
    try {
      const stored = await this.repo.insertMany(
        pool,
        batch.map((w) => w.response),
      );
      const byId = new Map(stored.map((row) => [row.id, row]));
      for (const w of batch) w.resolve(byId.get(w.response.id));
    } catch (err) {
      if (batch.length === 1) return batch[0].reject(err);
      // Nothing of the statement was stored: each submission alone, with its own outcome.
      await Promise.all(
        batch.map((w) => this.repo.insertMany(pool, [w.response]).then(([row]) => w.resolve(row), w.reject)),
      );
    }
  }

  /** Lets the statements under way finish before the pool closes. */
  async beforeApplicationShutdown(): Promise<void> {
    if (this.inFlight === 0 && !this.waiting.length) return;
    await new Promise<void>((resolve) => (this.idle = resolve));
  }
}

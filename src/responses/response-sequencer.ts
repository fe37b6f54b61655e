import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { allowLongStatements } from '../database/long-statements';
import { currentManager, inTransaction, openTransaction } from '../database/transaction';
import { ResponseStatsRepository } from '../summaries/response-stats.repository';
import { metrics, timed } from '../observability/metrics';

/** How often each instance sequences the responses waiting on any form (see ResponseSequencerWorker). */
export const SEQUENCE_EVERY_MS = 100;
/** SQLSTATE lock_not_available: a lock wait ran out (lock_timeout). */
const LOCK_NOT_AVAILABLE = '55P03';
/**
 * The longest a read waits for a form's sequencer lock that another session holds (at most
 * DATABASE_LOCK_TIMEOUT_MS): then it answers 503 with Retry-After (see settle).
 */
export const SEQUENCER_WAIT_MS = 2000;
/** Forms one background pass takes at most (the rest wait for the next pass). */
const FORMS_PER_PASS = 200;

/**
 * Gives committed responses their seq and folds them into the aggregates (see response-stats.repository.ts):
 * for one form before a read that must count every response committed before it, and for every
 * waiting form in the background.
 */
@Injectable()
export class ResponseSequencer {
  /** The settling of each form under way here, and the one readers that came later wait for. */
  private readonly settling = new Map<string, { current: Promise<number>; next?: Promise<number> }>();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly stats: ResponseStatsRepository,
  ) {}

  /**
   * Sequences the form's waiting responses now, waiting for a sequencing of the form under way
   * elsewhere. Returns how many it sequenced.
   *
   * That wait is bounded: after SEQUENCER_WAIT_MS (or the sessions' lock timeout,
   * DATABASE_LOCK_TIMEOUT_MS, if shorter) it ends with 55P03, which the error filter answers as
   * 503 with Retry-After. A read never answers without having settled, rather than from what is
   * already sequenced: a response committed before it would be missing from its total and its
   * summary, and from the end of a walk (paging stays exact). A silent session elsewhere that holds
   * the lock (a paused instance, until PostgreSQL ends it as idle in transaction) costs reads a
   * quick 503 rather than a hang. Within this instance, the reads of one form share their waits: at most one
   * settling of a form runs at a time, and readers that arrive meanwhile share the next one, which
   * starts after they arrived (so it counts every response committed before they did). Readers of
   * a form whose lock is held elsewhere therefore hold one pooled connection, not one each, and the
   * instance's other requests keep their connections.
   */
  settle(formId: string, manager?: EntityManager): Promise<number> {
    const run = async (tx: EntityManager, waitMs?: number) =>
      (await timed(metrics.sequencerLockWaitSeconds, this.stats.lockSequencer(tx, formId, waitMs)))
        ? this.stats.sequenceResponses(tx, [formId])
        : 0;
    if (manager) return run(manager);
    // Inside a caller's transaction the work joins it, and commits with it: not shareable.
    const open = openTransaction();
    if (open) return run(open);
    // A transaction of its own, where the shorter lock wait ends with it.
    const read = () => inTransaction(this.db, (tx) => run(tx, SEQUENCER_WAIT_MS));
    const settling = this.settling.get(formId);
    if (!settling) return this.start(formId, read);
    const next = () => this.start(formId, read);
    // A lock wait that ran out (55P03) ends the readers queued behind it too: the lock was held
    // elsewhere all the while they waited, and a second full wait would only double theirs.
    settling.next ??= settling.current.then(next, (err: { code?: unknown }) =>
      err?.code === LOCK_NOT_AVAILABLE ? this.failNext(formId, err) : next(),
    );
    return settling.next;
  }

  /** Fails the readers queued for a form's next settling with the error of the one before. */
  private failNext(formId: string, err: unknown): Promise<number> {
    this.settling.delete(formId);
    return Promise.reject(err);
  }

  /** Starts the settling of a form that readers may share (see settle). */
  private start(formId: string, work: () => Promise<number>): Promise<number> {
    const current = work();
    this.settling.set(formId, { current });
    const done = () => {
      const settling = this.settling.get(formId);
      if (settling?.current !== current) return;
      if (settling.next) return; // the next one takes its place when it starts
      this.settling.delete(formId);
    };
    current.then(done, done);
    return current;
  }

  /** One background pass over the forms with waiting responses that no one else is sequencing. */
  async pass(): Promise<number> {
    // Idle: one cheap look (the unsequenced index is empty), no transaction.
    if (!(await this.stats.anyWaiting(currentManager(this.db)))) return 0;
    return inTransaction(this.db, async (tx) => {
      // A backlog (after an outage) is sequenced 5000 responses a form a statement, for up to
      // FORMS_PER_PASS forms: longer than a request's statement may take.
      await allowLongStatements(tx);
      const forms = await this.stats.claimWaitingForms(tx, FORMS_PER_PASS);
      return forms.length ? this.stats.sequenceResponses(tx, forms) : 0;
    });
  }
}

/**
 * Runs ResponseSequencer.pass() every SEQUENCE_EVERY_MS on every instance of the service, so that
 * summaries and totals keep up with submissions even when nobody reads. A crash between a
 * submission's commit and its sequencing loses nothing: the response waits in the table (seq NULL)
 * for the next pass of any instance. Registered by the service (AppModule), not by the CLI.
 */
@Injectable()
export class ResponseSequencerWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Sequencer');
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = false;
  private failing = false;

  constructor(private readonly sequencer: ResponseSequencer) {}

  onApplicationBootstrap() {
    this.schedule();
  }

  /** Stops the passes; waits for the one under way, so that the pool is not closed under it. */
  async beforeApplicationShutdown() {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule() {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.sequencer
        .pass()
        .then(() => {
          if (this.failing) this.logger.log('sequencing responses works again');
          this.failing = false;
        })
        .catch((err: Error) => {
          // Once per outage: the responses wait (none is lost) and the next pass tries again.
          if (!this.failing)
            this.logger.warn(
              `could not sequence waiting responses (retrying every ${SEQUENCE_EVERY_MS} ms): ${err.message}`,
            );
          this.failing = true;
        })
        .finally(() => this.schedule());
    }, SEQUENCE_EVERY_MS);
    this.timer.unref();
  }
}

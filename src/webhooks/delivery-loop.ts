import { inBatches } from '../database/in-batches';
import { nextDelayMs, parseRetryAfter } from './schedule';
import { SendResult, storableText, TIMEOUT_MS, WebhookSender } from './sender';
import { signedHeaders } from './signing';
import { AttemptOutcome, AttemptRecord, ClaimedDelivery, DeliveryLoopRepository } from './delivery-loop.repository';

/**
 * At most this many attempts run at once on one instance (and as many connections to one receiver
 * at most, see WebhookSender). Claims take half of it at a time, so that a claim finds room while
 * the previous batch is still being sent. Bigger batches cost the database less per event: one
 * claim statement and one record statement serve more events (bench:webhooks: p50 ratio 1.16x to
 * 1.23x with these, 1.23x to 1.27x with claims of 32; see bench/README.md).
 */
const MAX_IN_FLIGHT = 128;
/** Rows claimed per statement. */
const CLAIM_BATCH = MAX_IN_FLIGHT / 2;
/**
 * Fairness (issue 23: 20 receivers that never answered, 600 events, held all 128 slots for 10 s
 * each, and another workspace's event left after 39.5 s). One endpoint has at most this many of
 * this instance's attempts in flight: a receiver that hangs holds 16 slots, not 128. Not 4: a
 * healthy receiver's backlog drains a claim per few attempts (the loop claims again once half of
 * an endpoint's cap is answered), and with 4 that was a claim statement per one or two events
 * (bench:webhooks: 21 events/s on a loaded machine).
 */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 16;
/**
 * One workspace has at most this many: a quarter of the slots, so a workspace whose 20 endpoints
 * (its limit) all hang leaves 96 of the 128 to the others, and 8 such workspaces are needed to fill
 * an instance.
 */
export const MAX_IN_FLIGHT_PER_WORKSPACE = 32;
/**
 * Due rows a claim looks at, past those of endpoints and workspaces already at their cap (which
 * cost it a look at the row each but do not count): enough to find a batch beside the backlog of a
 * few endpoints with some room left, and few enough to keep a claim cheap.
 */
const CLAIM_WINDOW = 4 * CLAIM_BATCH;
/**
 * How often the loop looks for due deliveries when its last claim found less than a batch. Events
 * are not pushed to it one by one: claiming what is due every half second (or as soon as a batch
 * is done) takes a batch per statement under load, instead of a statement per event.
 */
const POLL_MS = 500;
/**
 * A claim holds a row this long: past the 10 s timeout, with room to record the result. If the
 * instance dies mid-attempt, the row is due again after this and any instance takes it.
 */
const LEASE_SECONDS = TIMEOUT_MS / 1000 + 10;
/** An endpoint whose every attempt failed for this long is disabled. */
export const DISABLE_AFTER_DAYS = 5;
/** Deliveries (and their attempts) are kept this long, then purged in batches. */
export const RETENTION_DAYS = 30;
const PURGE_EVERY_MS = 10 * 60_000;
const PURGE_BATCH = 1000;
/**
 * How often paused deliveries (endpoint disabled, workspace on Free) are looked at again: a
 * delivery resumes within this long once its endpoint is enabled and its workspace on Pro.
 */
const RESUME_EVERY_MS = 5_000;
const RESUME_BATCH = 5_000;

/**
 * Successful attempts wait at most this long (or for this many) to be recorded together: each
 * statement (and its commit) costs more than the rows it records, so fewer, fuller batches cost the
 * database and this process less per delivery. A claim's lease lasts far longer than the wait.
 */
const RECORD_BATCH = MAX_IN_FLIGHT;
const RECORD_WAIT_MS = 50;

/** An attempt whose answer the database refused (`err`): recorded without it, the reason kept as its error. */
function unstorable(attempt: AttemptRecord, err: unknown): AttemptRecord {
  return {
    ...attempt,
    responseBody: null,
    error: storableText(
      `${attempt.error ? `${attempt.error}; ` : ''}the answer could not be stored (${(err as Error).message.slice(0, 200)})`,
    ),
  };
}

interface DeliveredBatch {
  items: Array<{ claimed: ClaimedDelivery; attempt: AttemptRecord }>;
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * The delivery loop every instance runs, off the request path (in a worker thread of its own, see
 * delivery.worker.ts): it claims due deliveries, sends each (signed, 10 s, no redirects), and
 * records the attempt and what comes next (see schedule.ts). At least once: a delivery whose
 * instance died mid-attempt is claimed again after its lease.
 */
export class DeliveryLoop {
  private readonly sender: WebhookSender;
  private running = false;
  /** Set once the loop stops: an attempt that ends after this is released, not recorded. */
  private stopping = false;
  private loopDone?: Promise<void>;
  /** The attempts under way, by delivery id: each settles once its result is recorded. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private wake?: () => void;
  private purgeTimer?: NodeJS.Timeout;
  private resumeTimer?: NodeJS.Timeout;
  private resuming = false;
  private batch?: DeliveredBatch;
  /** This instance's attempts being sent (claimed, not yet answered), by endpoint and by workspace. */
  private readonly sending = { byEndpoint: new Map<string, number>(), byWorkspace: new Map<string, number>() };
  /** Endpoints and workspaces (ids) that reached their cap since they last had half of it free: rows of theirs may wait. */
  private readonly capped = new Set<string>();
  /** Set when an endpoint or workspace at its cap got room back: the loop claims again without waiting for its poll. */
  private wakeRequested = false;

  constructor(
    private readonly repository: DeliveryLoopRepository,
    private readonly options: { allowPrivateUrls: boolean; retryBaseMs: number },
    private readonly warn: (message: string) => void,
  ) {
    this.sender = new WebhookSender(options.allowPrivateUrls, TIMEOUT_MS, MAX_IN_FLIGHT);
  }

  /**
   * Claims what is due from now on, resumes paused deliveries that may be sent every 5 seconds,
   * and purges old deliveries every 10 minutes.
   */
  start(): void {
    this.running = true;
    this.loopDone = this.loop();
    this.purgeTimer = setInterval(() => void this.purge(), PURGE_EVERY_MS);
    this.purgeTimer.unref();
    this.resumeTimer = setInterval(() => void this.resume(), RESUME_EVERY_MS);
    this.resumeTimer.unref();
  }

  /**
   * Stops claiming, abandons attempts in flight (their rows are released, due again at once),
   * waits for them and closes the connections.
   */
  async stop(): Promise<void> {
    this.running = false;
    this.stopping = true;
    clearInterval(this.purgeTimer);
    clearInterval(this.resumeTimer);
    this.wake?.();
    await this.loopDone;
    this.sender.abortAll();
    await Promise.all(this.inFlight.values());
    await this.sender.close();
    await this.repository.end();
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let claimed = 0;
      const room = MAX_IN_FLIGHT - this.inFlight.size;
      if (room > 0) {
        try {
          claimed = await this.claimAndStart(Math.min(room, CLAIM_BATCH));
        } catch (err) {
          this.warn(`could not claim webhook deliveries: ${(err as Error).message}`);
        }
      }
      // A full batch means more may be due: claim again at once while there is room.
      if (claimed === CLAIM_BATCH && this.inFlight.size < MAX_IN_FLIGHT) continue;
      if (this.wakeRequested && this.inFlight.size < MAX_IN_FLIGHT) {
        this.wakeRequested = false;
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  /**
   * Claims up to `limit` due deliveries and starts their attempts; the number taken off the due
   * index (claimed, paused by the claim, or deleted: its endpoint is gone).
   */
  async claimAndStart(limit: number): Promise<number> {
    const claimed = await this.repository.claim(limit, LEASE_SECONDS, this.sending, {
      perEndpoint: MAX_IN_FLIGHT_PER_ENDPOINT,
      perWorkspace: MAX_IN_FLIGHT_PER_WORKSPACE,
      window: CLAIM_WINDOW,
    });
    for (const delivery of claimed) {
      if (!delivery.active) continue;
      this.countSending(delivery, 1);
      const done = this.attempt(delivery)
        .catch((err: Error) => this.warn(`could not record a webhook attempt: ${err.message}`))
        .finally(() => {
          this.inFlight.delete(delivery.id);
          // Room for a whole batch again: claim now rather than at the next poll (not once per attempt).
          if (this.inFlight.size === MAX_IN_FLIGHT - CLAIM_BATCH) this.wake?.();
        });
      this.inFlight.set(delivery.id, done);
    }
    return claimed.length;
  }

  /**
   * Counts an attempt being sent (`by` 1) or answered (-1) against its endpoint's and workspace's
   * caps; when one that reached its cap has half of it free again, the loop claims again at once
   * (its next rows may wait), for a few rows of it rather than one.
   */
  private countSending(delivery: ClaimedDelivery, by: 1 | -1): void {
    let roomBack = false;
    // Room back once half the cap is free: then the claim takes a few rows of the endpoint at once.
    const count = (m: Map<string, number>, key: string, cap: number) => {
      const n = (m.get(key) ?? 0) + by;
      if (n >= cap) this.capped.add(key);
      if (by < 0 && n <= cap / 2 && this.capped.delete(key)) roomBack = true;
      if (n > 0) m.set(key, n);
      else m.delete(key);
    };
    count(this.sending.byEndpoint, delivery.endpoint_id, MAX_IN_FLIGHT_PER_ENDPOINT);
    count(this.sending.byWorkspace, delivery.workspace_id, MAX_IN_FLIGHT_PER_WORKSPACE);
    if (roomBack) {
      this.wakeRequested = true;
      this.wake?.();
    }
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const attemptedAt = new Date();
    const secrets = delivery.previous_secret ? [delivery.secret, delivery.previous_secret] : [delivery.secret];
    let result: SendResult;
    try {
      result = await this.sender.send(
        delivery.url,
        signedHeaders(secrets, delivery.event_id, delivery.payload, attemptedAt),
        delivery.payload,
      );
    } finally {
      this.countSending(delivery, -1);
    }
    // Stopped during the attempt (abortAll): given up, not counted.
    if (this.stopping) return this.repository.release(delivery);
    const attempt: AttemptRecord = {
      attemptedAt,
      statusCode: result.statusCode,
      durationMs: result.durationMs,
      error: result.error,
      responseBody: result.responseBody,
    };
    // This attempt's number: the claim did not count it (only recorded attempts count).
    const { outcome, next } = this.outcomeOf(result, delivery.attempt_count + 1, attemptedAt);
    if (outcome === 'delivered') return this.recordDelivered(delivery, attempt);
    try {
      await this.repository.recordAttempt(delivery, attempt, outcome, next, DISABLE_AFTER_DAYS);
    } catch (err) {
      // What the receiver answered could not be stored: the attempt is recorded without it, with a note.
      await this.repository.recordAttempt(delivery, unstorable(attempt, err), outcome, next, DISABLE_AFTER_DAYS);
    }
  }

  /** Queues a success for the next batch; resolves once the batch is recorded. */
  private recordDelivered(claimed: ClaimedDelivery, attempt: AttemptRecord): Promise<void> {
    let batch = this.batch;
    if (!batch) {
      let settle!: { resolve: () => void; reject: (e: Error) => void };
      const promise = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
      const created: DeliveredBatch = {
        items: [],
        promise,
        ...settle,
        timer: setTimeout(() => this.flush(created), RECORD_WAIT_MS),
      };
      this.batch = batch = created;
    }
    batch.items.push({ claimed, attempt });
    if (batch.items.length >= RECORD_BATCH) {
      clearTimeout(batch.timer);
      this.flush(batch);
    }
    return batch.promise;
  }

  private flush(batch: DeliveredBatch): void {
    if (this.batch === batch) this.batch = undefined;
    this.recordBatch(batch.items).then(() => batch.resolve(), batch.reject);
  }

  /**
   * Records a batch of successes in one statement; when that fails, row by row, so that one row
   * the database refuses never leaves the others unrecorded (they would be sent again after their
   * lease, and again, past their schedule). A row that fails on its own is recorded without the
   * receiver's answer, with a note saying why. Fails only if that fails too (the database is gone).
   */
  private async recordBatch(items: DeliveredBatch['items']): Promise<void> {
    try {
      return await this.repository.recordDelivered(items);
    } catch (err) {
      if (items.length === 1) {
        return this.repository.recordDelivered([{ ...items[0], attempt: unstorable(items[0].attempt, err) }]);
      }
      this.warn(
        `could not record ${items.length} webhook attempts at once, recording them one by one: ${(err as Error).message}`,
      );
    }
    const failures = await Promise.all(
      items.map((item) =>
        this.recordBatch([item]).then(
          () => null,
          (err: Error) => err,
        ),
      ),
    );
    const failed = failures.find((f) => f !== null);
    if (failed) throw failed;
  }

  private outcomeOf(result: SendResult, attempt: number, at: Date): { outcome: AttemptOutcome; next: Date | null } {
    if (result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300)
      return { outcome: 'delivered', next: null };
    if (result.statusCode === 410) return { outcome: 'gone', next: null };
    const delay = nextDelayMs(attempt, this.options.retryBaseMs, parseRetryAfter(result.retryAfter));
    return delay === null
      ? { outcome: 'failed', next: null }
      : { outcome: 'retry', next: new Date(at.getTime() + result.durationMs + delay) };
  }

  /**
   * Makes paused deliveries pending again where they may be sent now, in batches; how many. One run
   * at a time (a run over a long pause may outlast the interval), and none once stopping.
   */
  async resume(): Promise<number> {
    if (this.resuming) return 0;
    this.resuming = true;
    const resumed = await this.batched('resume paused webhook deliveries', RESUME_BATCH, () =>
      this.repository.resumePaused(RESUME_BATCH),
    );
    this.resuming = false;
    if (resumed > 0) this.wake?.();
    return resumed;
  }

  /** Deletes deliveries older than 30 days (their attempts with them), in batches. */
  purge(): Promise<number> {
    return this.batched('purge old webhook deliveries', PURGE_BATCH, () =>
      this.repository.purgeDeliveries(RETENTION_DAYS, PURGE_BATCH),
    );
  }

  /** inBatches, stopping with the loop; a failure is a warning (`what` could not be done), the next run tries again. */
  private async batched(what: string, batch: number, step: () => Promise<number>): Promise<number> {
    try {
      return await inBatches(step, batch, () => this.stopping);
    } catch (err) {
      this.warn(`could not ${what}: ${(err as Error).message}`);
      return 0;
    }
  }
}

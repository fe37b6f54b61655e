import { inBatches } from '../database/in-batches';
import { SendResult, storableText } from './sender';
import { AttemptOutcome, AttemptRecord, Claimed, ClaimCaps, InFlight } from './delivery-loop.repository';
import { deliveryOutcomes } from '../observability/metrics';

/**
 * At most this many attempts run at once on one instance (and as many connections to one receiver
 * at most, see WebhookSender). Claims take half of it at a time, so that a claim finds room while
 * the previous batch is still being sent. Bigger batches cost the database less per event: one
 * claim statement and one record statement serve more events (bench:webhooks: p50 ratio 1.16x to
 * 1.23x with these, 1.23x to 1.27x with claims of 32; see bench/README.md).
 */
export const MAX_IN_FLIGHT = 128;
/** Rows claimed per statement. */
const CLAIM_BATCH = MAX_IN_FLIGHT / 2;
/**
 * Fairness (issue 23: 20 receivers that never answered, 600 events, held all 128 slots for 10 s
 * each, and another workspace's event left after 39.5 s). One endpoint has at most this many of
 * this instance's attempts in flight, unless it answers fast (below): a receiver that hangs holds
 * 16 slots, not 128.
 */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 16;
/**
 * One workspace has at most this many, unless it answers fast: a quarter of the slots, so a
 * workspace whose 20 endpoints (its limit) all hang leaves 96 of the 128 to the others, and 8 such
 * workspaces are needed to fill an instance.
 */
export const MAX_IN_FLIGHT_PER_WORKSPACE = 32;
/**
 * An attempt answered within this long is fast; one in flight for longer is slow. Slow attempts are
 * what make a receiver unfair to the others: they hold slots.
 */
export const FAST_MS = 1000;
/**
 * An endpoint (or workspace) whose last attempt was answered fast may have up to a whole batch in
 * flight, of which at most its cap above slow: a healthy receiver's backlog then drains a batch per
 * claim, as it did before the caps (with 16 at most, bench:webhooks drained a one-endpoint backlog
 * at 65 to 76 events/s on a loaded machine), and a receiver that starts to hang holds at most a
 * batch (half the slots) until its attempts end, then its cap. One never answered (a new one, or
 * one whose last answer was slow) has its cap.
 */
export const MAX_IN_FLIGHT_PER_FAST_ENDPOINT = CLAIM_BATCH;
export const MAX_IN_FLIGHT_PER_FAST_WORKSPACE = CLAIM_BATCH;
/**
 * Due rows a claim looks at, past those of endpoints and workspaces already at their cap (which
 * cost it a look at the row each but do not count): enough to find a batch beside the backlog of a
 * few endpoints with some room left, and few enough to keep a claim cheap.
 */
export const CLAIM_WINDOW = 4 * CLAIM_BATCH;
/**
 * How often the loop looks for due deliveries when its last claim found less than a batch. Events
 * are not pushed to it one by one: claiming what is due every half second (or as soon as a batch
 * is done) takes a batch per statement under load, instead of a statement per event. It is also
 * how often a claim passes over the endpoints and workspaces whose rows wait for room (see
 * DeliveryLoop.claimAndStart), to reach the rows of others due after their backlog.
 */
const POLL_MS = 500;
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

/** Successful attempts recorded together at most (see DeliveryChannel.recordWaitMs). */
const RECORD_BATCH = MAX_IN_FLIGHT;

/** The caps of one channel's shares (see Share): per target (a webhook endpoint, the mail server) and per workspace. */
export interface ShareCaps {
  perTarget: number;
  perFastTarget: number;
  perWorkspace: number;
  perFastWorkspace: number;
}

/** The SQL of a channel's loop: each channel has its own table of deliveries (webhook_deliveries, email_outbox). */
export interface LoopRepository<C extends Claimed> {
  claim(limit: number, leaseSeconds: number, inFlight: InFlight, caps: ClaimCaps): Promise<C[]>;
  resumePaused(limit: number): Promise<number>;
  recordAttempt(
    claimed: C,
    attempt: AttemptRecord,
    outcome: Exclude<AttemptOutcome, 'delivered'>,
    next: Date | null,
    disableAfterDays: number,
  ): Promise<void>;
  recordDelivered(items: Array<{ claimed: C; attempt: AttemptRecord }>): Promise<void>;
  release(claimed: C): Promise<void>;
  purgeDeliveries(days: number, batch: number): Promise<number>;
  end(): Promise<void>;
}

/**
 * What one kind of delivery brings to the loop (webhooks: WebhookChannel; email: EmailChannel):
 * its table, how one is sent and what an answer comes to. The loop brings the rest: claims with
 * leases, fair shares between targets and workspaces, retries, batching of records, purges.
 */
export interface DeliveryChannel<C extends Claimed> {
  /** Names the deliveries in warnings ("webhook", "email"). */
  readonly noun: string;
  readonly repository: LoopRepository<C>;
  /**
   * A claim holds a row this long: past the send's timeout, with room to record the result. If the
   * instance dies mid-attempt, the row is due again after this and any instance takes it.
   */
  readonly leaseSeconds: number;
  /**
   * Successful attempts wait at most this long to be recorded together: each statement (and its
   * commit) costs more than the rows it records. A claim's lease lasts far longer than the wait.
   */
  readonly recordWaitMs: number;
  readonly caps: ShareCaps;
  send(claimed: C): Promise<SendResult>;
  /** What an answer comes to, for the `attempt`-th attempt (1-based) made at `at`. */
  outcomeOf(result: SendResult, attempt: number, at: Date): { outcome: AttemptOutcome; next: Date | null };
  /** Ends the sends under way (the loop stops). */
  abortAll(): void;
  close(): Promise<void>;
  /** Work of its own, every few seconds on every instance (email: digests due); how many rows it wrote. */
  periodic?(): Promise<number>;
}

export const WEBHOOK_CAPS: ShareCaps = {
  perTarget: MAX_IN_FLIGHT_PER_ENDPOINT,
  perFastTarget: MAX_IN_FLIGHT_PER_FAST_ENDPOINT,
  perWorkspace: MAX_IN_FLIGHT_PER_WORKSPACE,
  perFastWorkspace: MAX_IN_FLIGHT_PER_FAST_WORKSPACE,
};

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

/**
 * One endpoint's or one workspace's share of this instance's attempts: those being sent, whether
 * it answers fast, and whether rows of it may be due that the last claim left for lack of room.
 */
export class Share {
  /** Its attempts being sent (claimed, not yet answered): when each was sent (ms), by delivery id. */
  readonly sending = new Map<string, number>();
  /** Its last attempt was answered within FAST_MS. */
  fast = false;
  /** The last claim took all the room it had, or passed over it: more of its rows may be due. */
  waiting = false;

  constructor(
    /** At most this many in flight, and at most this many slow ones. */
    private readonly cap: number,
    /** At most this many in flight while it answers fast. */
    private readonly fastCap: number,
  ) {}

  /**
   * How many more attempts it may have in flight at `now` (ms): none (0 or below) once its slow ones
   * reach its cap, else up to its fast cap if it answers fast, its cap if not.
   */
  room(now: number): number {
    let slow = 0;
    for (const sent of this.sending.values()) if (now - sent >= FAST_MS) slow++;
    return slow >= this.cap ? 0 : (this.fast ? this.fastCap : this.cap) - this.sending.size;
  }

  /** Rows of it may wait and it has half its cap free: worth a claim (a few rows of it, not one). */
  worthClaiming(now: number): boolean {
    return this.waiting && this.room(now) >= (this.fast ? this.fastCap : this.cap) / 2;
  }
}

interface DeliveredBatch<C> {
  items: Array<{ claimed: C; attempt: AttemptRecord }>;
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * The delivery loop every instance runs per channel, off the request path (in a worker thread of
 * its own, see delivery.worker.ts): it claims due deliveries, sends each (the channel's send), and
 * records the attempt and what comes next (see schedule.ts). At least once: a delivery whose
 * instance died mid-attempt is claimed again after its lease.
 */
export class DeliveryLoop<C extends Claimed = Claimed> {
  private readonly repository: LoopRepository<C>;
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
  private batch?: DeliveredBatch<C>;
  /** The shares of this instance's attempts of the endpoints and workspaces with some in flight or waiting, by id. */
  private readonly shares = { byEndpoint: new Map<string, Share>(), byWorkspace: new Map<string, Share>() };
  /** When a claim last passed over the waiting shares (ms). */
  private lookedPastAt = 0;
  /** Set when a waiting share got room back: the loop claims again without waiting for its poll. */
  private wakeRequested = false;
  /** The last claim took a whole batch, not all of it up to the caps: more may be due that it may take. */
  private batchFilled = false;

  constructor(
    readonly channel: DeliveryChannel<C>,
    private readonly warn: (message: string) => void,
  ) {
    this.repository = channel.repository;
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
    this.channel.abortAll();
    await Promise.all(this.inFlight.values());
    await this.channel.close();
    await this.repository.end();
  }

  /**
   * Claims while it may find something to send: after a full batch (more may be due), and as soon
   * as an endpoint or workspace whose rows the caps left behind has room for a few of them again;
   * otherwise every POLL_MS, or when woken (room for a whole batch, paused deliveries resumed).
   */
  private async loop(): Promise<void> {
    while (this.running) {
      let claimed = 0;
      const limit = Math.min(MAX_IN_FLIGHT - this.inFlight.size, CLAIM_BATCH);
      if (limit > 0) {
        try {
          claimed = await this.claimAndStart(limit);
        } catch (err) {
          this.warn(`could not claim ${this.channel.noun} deliveries: ${(err as Error).message}`);
        }
      }
      if (this.inFlight.size < MAX_IN_FLIGHT) {
        // A full batch means more may be due: claim again at once while there is room. (A batch
        // that the caps filled is not one: the next claim would pass over its rows to find others,
        // which the claim every POLL_MS does.)
        if (limit > 0 && claimed >= limit && this.batchFilled) continue;
        if (this.wakeRequested || this.worthClaiming()) {
          this.wakeRequested = false;
          continue;
        }
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

  /** Some endpoint or workspace has rows left by the caps and room for a few of them now. */
  private worthClaiming(): boolean {
    const now = Date.now();
    for (const shares of [this.shares.byEndpoint, this.shares.byWorkspace])
      for (const share of shares.values()) if (share.worthClaiming(now)) return true;
    return false;
  }

  /**
   * Claims up to `limit` due deliveries and starts their attempts; the number taken off the due
   * index (claimed, paused by the claim, or deleted: its endpoint is gone).
   *
   * Each endpoint and workspace gets the room its share has (Share.room), and one that gets all
   * of it is marked waiting: the loop claims again once it has half its cap free, rather than at
   * its next poll (a claim limited by the caps is not a sign that nothing more is due). At most
   * every POLL_MS, a claim passes over the waiting ones instead: their backlog may fill the window
   * of due rows the claim reads, and another endpoint's row due after it would otherwise wait for
   * the whole backlog to be sent.
   */
  async claimAndStart(limit: number): Promise<number> {
    const now = Date.now();
    const all = [...this.shares.byEndpoint.values(), ...this.shares.byWorkspace.values()];
    const lookPast = now - this.lookedPastAt >= POLL_MS && all.some((s) => s.waiting);
    if (lookPast) {
      this.lookedPastAt = now;
      // Those passed over with room get it at the next claim, at once.
      if (all.some((s) => s.waiting && s.room(now) > 0)) this.wakeRequested = true;
    }
    // What the claim is told each share has taken of its cap: less than 0 is more room than the
    // cap (a fast one), the cap or more is none (passed over).
    const rooms = new Map<Share, number>();
    const taken = (shares: Map<string, Share>, cap: number) => {
      const m = new Map<string, number>();
      for (const [id, share] of shares) {
        const room = lookPast && share.waiting ? 0 : share.room(now);
        rooms.set(share, room);
        m.set(id, cap - room);
      }
      return m;
    };
    const caps = this.channel.caps;
    const claimed = await this.repository.claim(
      limit,
      this.channel.leaseSeconds,
      {
        byEndpoint: taken(this.shares.byEndpoint, caps.perTarget),
        byWorkspace: taken(this.shares.byWorkspace, caps.perWorkspace),
      },
      { perEndpoint: caps.perTarget, perWorkspace: caps.perWorkspace, window: CLAIM_WINDOW },
    );
    const got = new Map<Share, number>();
    for (const delivery of claimed) {
      if (!delivery.active) continue;
      for (const share of this.sharesOf(delivery)) {
        // A new share: it had its cap.
        if (!rooms.has(share)) rooms.set(share, share.room(now));
        got.set(share, (got.get(share) ?? 0) + 1);
        share.sending.set(delivery.id, now);
      }
    }
    // Passed over (no room, or looked past), or given all its room: rows of it may still be due.
    // Given less: what was due of it (in the window) is taken.
    for (const [share, room] of rooms) share.waiting = room <= 0 || (got.get(share) ?? 0) >= room;
    this.batchFilled =
      claimed.length >= limit &&
      claimed.some((d) => !d.active || this.sharesOf(d).every((share) => share.room(now) > 0));
    this.forgetIdle();
    for (const delivery of claimed) {
      if (!delivery.active) continue;
      const done = this.attempt(delivery)
        .catch((err: Error) => this.warn(`could not record an attempt (${this.channel.noun}): ${err.message}`))
        .finally(() => {
          this.inFlight.delete(delivery.id);
          // Room for a whole batch again: claim now rather than at the next poll (not once per attempt).
          if (this.inFlight.size === MAX_IN_FLIGHT - CLAIM_BATCH) this.wake?.();
        });
      this.inFlight.set(delivery.id, done);
    }
    return claimed.length;
  }

  /** The shares of a delivery's endpoint and workspace, made when missing. */
  private sharesOf(delivery: C): [Share, Share] {
    const get = (m: Map<string, Share>, id: string, cap: number, fastCap: number) => {
      let share = m.get(id);
      if (!share) m.set(id, (share = new Share(cap, fastCap)));
      return share;
    };
    const caps = this.channel.caps;
    return [
      get(this.shares.byEndpoint, delivery.endpoint_id, caps.perTarget, caps.perFastTarget),
      get(this.shares.byWorkspace, delivery.workspace_id, caps.perWorkspace, caps.perFastWorkspace),
    ];
  }

  /** Forgets the shares with nothing in flight or waiting (and so whether they answer fast). */
  private forgetIdle(): void {
    for (const shares of [this.shares.byEndpoint, this.shares.byWorkspace])
      for (const [id, share] of shares) if (share.sending.size === 0 && !share.waiting) shares.delete(id);
  }

  /**
   * An attempt answered (`result`; none when it threw): out of its shares, which answer fast if
   * it came within FAST_MS. When one with rows waiting has half its cap free again, the loop
   * claims again at once, for a few rows of it rather than one.
   */
  private answered(delivery: C, result: SendResult | undefined): void {
    const now = Date.now();
    let worthClaiming = false;
    for (const share of this.sharesOf(delivery)) {
      share.sending.delete(delivery.id);
      if (result) share.fast = result.statusCode !== null && result.durationMs < FAST_MS;
      if (share.worthClaiming(now)) worthClaiming = true;
    }
    if (worthClaiming) {
      this.wakeRequested = true;
      this.wake?.();
    }
  }

  private async attempt(delivery: C): Promise<void> {
    const attemptedAt = new Date();
    let result: SendResult | undefined;
    try {
      result = await this.channel.send(delivery);
    } finally {
      this.answered(delivery, result);
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
    const { outcome, next } = this.channel.outcomeOf(result, delivery.attempt_count + 1, attemptedAt);
    deliveryOutcomes.count(outcome, this.channel.noun === 'email' ? 'email' : 'webhook');
    if (outcome === 'delivered') return this.recordDelivered(delivery, attempt);
    try {
      await this.repository.recordAttempt(delivery, attempt, outcome, next, DISABLE_AFTER_DAYS);
    } catch (err) {
      // What the receiver answered could not be stored: the attempt is recorded without it, with a note.
      await this.repository.recordAttempt(delivery, unstorable(attempt, err), outcome, next, DISABLE_AFTER_DAYS);
    }
  }

  /** Queues a success for the next batch; resolves once the batch is recorded. */
  private recordDelivered(claimed: C, attempt: AttemptRecord): Promise<void> {
    let batch = this.batch;
    if (!batch) {
      let settle!: { resolve: () => void; reject: (e: Error) => void };
      const promise = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
      const created: DeliveredBatch<C> = {
        items: [],
        promise,
        ...settle,
        timer: setTimeout(() => this.flush(created), this.channel.recordWaitMs),
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

  private flush(batch: DeliveredBatch<C>): void {
    if (this.batch === batch) this.batch = undefined;
    this.recordBatch(batch.items).then(() => batch.resolve(), batch.reject);
  }

  /**
   * Records a batch of successes in one statement; when that fails, row by row, so that one row
   * the database refuses never leaves the others unrecorded (they would be sent again after their
   * lease, and again, past their schedule). A row that fails on its own is recorded without the
   * receiver's answer, with a note saying why. Fails only if that fails too (the database is gone).
   */
  private async recordBatch(items: DeliveredBatch<C>['items']): Promise<void> {
    try {
      return await this.repository.recordDelivered(items);
    } catch (err) {
      if (items.length === 1) {
        return this.repository.recordDelivered([{ ...items[0], attempt: unstorable(items[0].attempt, err) }]);
      }
      this.warn(
        `could not record ${items.length} ${this.channel.noun} attempts at once, recording them one by one: ${(err as Error).message}`,
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

  /**
   * Makes paused deliveries pending again where they may be sent now, in batches; how many. One run
   * at a time (a run over a long pause may outlast the interval), and none once stopping.
   */
  async resume(): Promise<number> {
    if (this.resuming) return 0;
    this.resuming = true;
    let resumed = await this.batched(`resume paused ${this.channel.noun} deliveries`, RESUME_BATCH, () =>
      this.repository.resumePaused(RESUME_BATCH),
    );
    if (this.channel.periodic) {
      resumed += await this.channel.periodic().catch((err: Error) => {
        this.warn(`could not run the periodic work of ${this.channel.noun}: ${err.message}`);
        return 0;
      });
    }
    this.resuming = false;
    if (resumed > 0) this.wake?.();
    return resumed;
  }

  /** Deletes deliveries older than 30 days (their attempts with them), in batches. */
  purge(): Promise<number> {
    return this.batched(`purge old ${this.channel.noun} deliveries`, PURGE_BATCH, () =>
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

import {
  DeliveryLoop,
  MAX_IN_FLIGHT_PER_ENDPOINT,
  MAX_IN_FLIGHT_PER_FAST_ENDPOINT,
  MAX_IN_FLIGHT_PER_WORKSPACE,
} from './delivery-loop';
import {
  AttemptRecord,
  ClaimCaps,
  ClaimedDelivery,
  DeliveryLoopRepository,
  InFlight,
} from './delivery-loop.repository';
import { SendResult } from './sender';
import { WebhookChannel } from './webhook-channel';

type Item = { claimed: ClaimedDelivery; attempt: AttemptRecord };
const KEY = Buffer.alloc(32, 7).toString('base64');

/** The record of a batch of successes when the database refuses one of its rows. */
describe('DeliveryLoop records a batch of successes', () => {
  const item = (id: string, responseBody: string): Item => ({
    claimed: { id } as ClaimedDelivery,
    attempt: { attemptedAt: new Date(), statusCode: 200, durationMs: 3, error: null, responseBody },
  });

  it('row by row when the batch statement fails, the refused row without its answer and with a note', async () => {
    const recorded: Item[] = [];
    const repository = {
      // As PostgreSQL does with a text it cannot store: the whole statement fails.
      recordDelivered: async (items: Item[]) => {
        if (items.some((i) => i.attempt.responseBody === 'refused')) throw new Error('invalid byte sequence');
        recorded.push(...items);
      },
    } as unknown as DeliveryLoopRepository;
    const warnings: string[] = [];
    const warn = (m: string) => warnings.push(m);
    const loop = new DeliveryLoop(
      new WebhookChannel(repository, { allowPrivateUrls: true, retryBaseMs: 100, secretKeys: [KEY] }, warn),
      warn,
    );
    const recordBatch = (loop as unknown as { recordBatch: (items: Item[]) => Promise<void> }).recordBatch.bind(loop);

    await recordBatch([item('a', 'ok'), item('b', 'refused'), item('c', 'ok')]);

    expect(recorded.map((i) => i.claimed.id).sort()).toEqual(['a', 'b', 'c']);
    expect(recorded.find((i) => i.claimed.id === 'a')!.attempt).toMatchObject({ statusCode: 200, responseBody: 'ok' });
    expect(recorded.find((i) => i.claimed.id === 'b')!.attempt).toMatchObject({
      statusCode: 200,
      responseBody: null,
      error: 'the answer could not be stored (invalid byte sequence)',
    });
    expect(warnings).toHaveLength(1);
  });
});

/** Lets pending callbacks run: a tick of the event loop (setImmediate stays real under fake timers). */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A due index in memory that claims as CLAIM_SQL does: endpoints and workspaces at their cap
 * passed over, then the first `window` due rows, each endpoint's up to its room, then each
 * workspace's; it answers after 6 ticks, as a statement takes a while: answers to attempts (1 to
 * 4 ticks each) come meanwhile.
 */
class FakeDueIndex {
  readonly rows: Array<{ id: string; endpoint: string; workspace: string; state: 'due' | 'claimed' | 'done' }> = [];
  readonly claims: number[] = [];

  queue(endpoint: string, workspace: string, count: number): void {
    for (let i = 0; i < count; i++)
      this.rows.push({ id: `${endpoint}-${this.rows.length}`, endpoint, workspace, state: 'due' });
  }

  repository(): DeliveryLoopRepository {
    return {
      claim: async (limit: number, _lease: number, inFlight: InFlight, caps: ClaimCaps) => {
        for (let i = 0; i < 6; i++) await tick();
        const taken = (m: ReadonlyMap<string, number>, id: string) => m.get(id) ?? 0;
        const seen = this.rows
          .filter((r) => r.state === 'due')
          .filter(
            (r) =>
              taken(inFlight.byEndpoint, r.endpoint) < caps.perEndpoint &&
              taken(inFlight.byWorkspace, r.workspace) < caps.perWorkspace,
          )
          .slice(0, caps.window);
        const nth = new Map<string, number>();
        const within = (id: string, m: ReadonlyMap<string, number>, cap: number) => {
          const n = (nth.get(id) ?? taken(m, id)) + 1;
          nth.set(id, n);
          return n <= cap;
        };
        const chosen = seen
          .filter((r) => within(r.endpoint, inFlight.byEndpoint, caps.perEndpoint))
          .filter((r) => within(r.workspace, inFlight.byWorkspace, caps.perWorkspace))
          .slice(0, limit);
        for (const r of chosen) r.state = 'claimed';
        this.claims.push(chosen.length);
        return chosen.map((r): ClaimedDelivery => ({
          id: r.id,
          active: true,
          event_id: `msg_${r.id}`,
          payload: '{}',
          attempt_count: 0,
          claim_token: `token-${r.id}`,
          endpoint_id: r.endpoint,
          workspace_id: r.workspace,
          url: `https://hooks.example.com/${r.endpoint}`,
          secret: 'whsec_c2VjcmV0',
          previous_secret: null,
        }));
      },
      recordDelivered: async (items: Item[]) => {
        for (const { claimed } of items) this.rows.find((r) => r.id === claimed.id)!.state = 'done';
      },
      release: async (claimed: ClaimedDelivery) => {
        this.rows.find((r) => r.id === claimed.id)!.state = 'due';
      },
      end: async () => undefined,
    } as unknown as DeliveryLoopRepository;
  }
}

const warnings: string[] = [];

/** A loop on `index` whose receivers are `send` (a URL to its answer), never the network; `abortAll` ends what hangs. */
function loopOn(
  index: FakeDueIndex,
  send: (url: string) => Promise<SendResult>,
  abortAll: () => void = () => undefined,
): DeliveryLoop {
  const warn = (m: string) => warnings.push(m);
  const channel = new WebhookChannel(
    index.repository(),
    { allowPrivateUrls: true, retryBaseMs: 100, secretKeys: [KEY] },
    warn,
  );
  (channel as unknown as { sender: unknown }).sender = { send, abortAll, close: async () => undefined };
  return new DeliveryLoop(channel, warn);
}

/**
 * The loop claims as soon as what it may send allows, not at its poll: the timers are fake and
 * never advanced (but for the record of the last batch), so a loop that waited for its poll (500
 * ms) would stop there.
 */
describe('DeliveryLoop claims fairly without waiting for its poll', () => {
  const ok = (): SendResult => ({
    statusCode: 200,
    durationMs: 2,
    error: null,
    responseBody: 'ok',
    retryAfter: undefined,
  });
  const sent: string[] = [];
  /** Answers each attempt after one to four ticks, so that some come while a claim runs. */
  const answerSoon = (url: string) => {
    sent.push(url);
    return new Promise<SendResult>((resolve) => {
      let ticks = (sent.length % 4) + 1;
      const next = () => (--ticks === 0 ? resolve(ok()) : setImmediate(next));
      setImmediate(next);
    });
  };
  const sentTo = (endpoint: string) => sent.filter((u) => u.endsWith(`/${endpoint}`)).length;

  beforeEach(() => {
    sent.length = 0;
    warnings.length = 0;
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
  });
  afterEach(() => jest.useRealTimers());

  /**
   * Ticks until `done`, the fake clock going 1 ms every other tick (a claim takes 6 ticks, an
   * answer 1 to 4); then lets the last answers be recorded and stops the loop. How long it took by
   * the fake clock.
   */
  async function runUntil(loop: DeliveryLoop, done: () => boolean): Promise<number> {
    const started = Date.now();
    for (let i = 0; i < 40_000 && !done(); i++) {
      await tick();
      if (i % 2) jest.advanceTimersByTime(1);
    }
    const took = Date.now() - started;
    for (let i = 0; i < 20; i++) await tick();
    // The last successes wait for their batch's timer to be recorded.
    jest.advanceTimersByTime(100);
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    for (let i = 0; i < 1000 && !stopped; i++) {
      await tick();
      jest.advanceTimersByTime(100);
    }
    await stopping;
    return took;
  }

  it("drains a fast endpoint's backlog a batch per claim, not its cap per poll", async () => {
    const index = new FakeDueIndex();
    index.queue('e1', 'w1', 2000);
    const loop = loopOn(index, answerSoon);
    loop.start();
    const took = await runUntil(loop, () => sent.length === 2000);

    expect(sent).toHaveLength(2000);
    expect(index.rows.every((r) => r.state === 'done')).toBe(true);
    expect(warnings).toEqual([]);
    // A new endpoint gets its cap; once it has answered fast, up to a batch per claim.
    expect(index.claims[0]).toBe(MAX_IN_FLIGHT_PER_ENDPOINT);
    expect(Math.max(...index.claims)).toBe(MAX_IN_FLIGHT_PER_FAST_ENDPOINT);
    // It never waited for its poll: the whole backlog went in less time than one.
    expect(took).toBeLessThan(500);
    expect(index.claims.filter((n) => n > 0).length).toBeLessThan(2000 / (MAX_IN_FLIGHT_PER_FAST_ENDPOINT / 4));
  });

  it('keeps an endpoint that never answers to its cap, and its workspace to its own', async () => {
    const index = new FakeDueIndex();
    for (let e = 0; e < 5; e++) index.queue(`hang${e}`, 'a', 30);
    const hanging: Array<() => void> = [];
    const aborted: SendResult = {
      statusCode: null,
      durationMs: 10_000,
      error: 'aborted',
      responseBody: null,
      retryAfter: undefined,
    };
    const loop = loopOn(
      index,
      (url) => {
        sent.push(url);
        return new Promise<SendResult>((resolve) => hanging.push(() => resolve(aborted)));
      },
      () => hanging.forEach((end) => end()),
    );
    loop.start();
    // Its polls come, slow attempts and all: the claims then find nothing more they may take.
    let polls = 0;
    await runUntil(loop, () => {
      if (sent.length > MAX_IN_FLIGHT_PER_WORKSPACE || polls === 6) return true;
      jest.advanceTimersByTime(500);
      polls++;
      return false;
    });

    expect(polls).toBe(6);
    expect(sent).toHaveLength(MAX_IN_FLIGHT_PER_WORKSPACE);
    for (let e = 0; e < 5; e++) expect(sentTo(`hang${e}`)).toBeLessThanOrEqual(MAX_IN_FLIGHT_PER_ENDPOINT);
    expect(warnings).toEqual([]);
  });

  it("reaches another endpoint's row behind a fast endpoint's backlog before the backlog is sent", async () => {
    const index = new FakeDueIndex();
    index.queue('busy', 'w1', 3000);
    index.queue('other', 'w2', 1);
    let busyBeforeOther: number | undefined;
    const loop = loopOn(index, (url) => {
      if (url.endsWith('/other')) busyBeforeOther = sentTo('busy');
      return answerSoon(url);
    });
    loop.start();
    await runUntil(loop, () => sent.length === 3001);

    expect(sent).toHaveLength(3001);
    expect(warnings).toEqual([]);
    expect(busyBeforeOther).toBeLessThan(3000 / 2);
  });
});

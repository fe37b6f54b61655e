/**
 * The service's Prometheus metrics (docs/operating.md lists them): one registry per process, filled
 * by one-line hooks in the features. No label takes an unbounded value: tool names come from the
 * registry (an unknown name is "unknown"), codes from the error catalog, routes from the router.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const registers = [registry];
/** Request latencies: 1 ms to 10 s. */
const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Values read when Prometheus scrapes, set by the module that knows them (a pool, a replica, the
 * outbox); unset, the gauge is not reported. A reading that fails leaves its gauge out of that scrape.
 */
export const readAtScrape: {
  longReadsInUse?: () => number;
  pool?: () => { inUse: number; idle: number; waiting: number } | undefined;
  replicaLagSeconds?: () => Promise<number | undefined>;
  webhookOutbox?: () => Promise<{ pending: number; oldestAgeSeconds: number }>;
  emailOutbox?: () => Promise<{ pending: number; oldestAgeSeconds: number }>;
} = {};

/** A gauge whose value is read at scrape time by `read` (undefined: not reported). */
function gaugeAtScrape(
  name: string,
  help: string,
  read: (set: (value: number, labels?: Record<string, string>) => void) => Promise<void> | void,
  labelNames: string[] = [],
): Gauge {
  return new Gauge({
    name,
    help,
    labelNames,
    registers,
    async collect() {
      this.reset();
      try {
        await read((value, labels) => (labels ? this.set(labels, value) : this.set(value)));
      } catch {
        // Left out of this scrape: the database or replica did not answer (the service says so elsewhere).
      }
    },
  });
}

export const metrics = {
  toolCalls: new Counter({
    name: 'formwork_tool_calls_total',
    help: 'Tool calls by tool, transport (rest, mcp) and outcome code ("ok" or the error code).',
    labelNames: ['tool', 'transport', 'code'],
    registers,
  }),
  toolCallSeconds: new Histogram({
    name: 'formwork_tool_call_duration_seconds',
    help: 'Tool call latency by tool and transport.',
    labelNames: ['tool', 'transport'],
    buckets: SECONDS,
    registers,
  }),
  httpSeconds: new Histogram({
    name: 'formwork_http_request_duration_seconds',
    help: 'Every HTTP request by route pattern, method and status.',
    labelNames: ['route', 'method', 'status'],
    buckets: SECONDS,
    registers,
  }),
  respondentRequests: new Counter({
    name: 'formwork_respondent_requests_total',
    help: "The respondent page's GETs and posts by method and status.",
    labelNames: ['method', 'status'],
    registers,
  }),
  respondentSeconds: new Histogram({
    name: 'formwork_respondent_request_duration_seconds',
    help: "The respondent page's latency by method.",
    labelNames: ['method'],
    buckets: SECONDS,
    registers,
  }),
  rateLimitRefusals: new Counter({
    name: 'formwork_rate_limit_refusals_total',
    help: 'Requests refused with 429 by budget (ip, credential).',
    labelNames: ['budget'],
    registers,
  }),
  idempotentReplays: new Counter({
    name: 'formwork_idempotent_replays_total',
    help: 'Tool calls answered by replaying the stored answer of their Idempotency-Key.',
    registers,
  }),
  redisErrors: new Counter({
    name: 'formwork_redis_errors_total',
    help: 'Redis calls that failed (budgets were then counted per instance).',
    registers,
  }),
  storageErrors: new Counter({
    name: 'formwork_storage_errors_total',
    help: 'File storage operations (disk or S3) that failed, by operation.',
    labelNames: ['operation'],
    registers,
  }),
  webhookDeliveries: new Counter({
    name: 'formwork_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome (delivered, retry, failed, gone).',
    labelNames: ['outcome'],
    registers,
  }),
  emailDeliveries: new Counter({
    name: 'formwork_email_deliveries_total',
    help: 'Email send attempts by outcome (delivered, retry, failed, gone: cancelled).',
    labelNames: ['outcome'],
    registers,
  }),
  insertBatchSize: new Histogram({
    name: 'formwork_response_insert_batch_size',
    help: 'Responses stored by one statement of the response insert batcher.',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
    registers,
  }),
  sequencerLockWaitSeconds: new Histogram({
    name: 'formwork_response_sequencer_lock_wait_seconds',
    help: "Time spent taking a form's sequencer lock before a read settles it.",
    buckets: SECONDS,
    registers,
  }),
};

gaugeAtScrape('formwork_long_reads_in_use', 'Long-read slots (filtered reads, export downloads) taken now.', (set) => {
  if (readAtScrape.longReadsInUse) set(readAtScrape.longReadsInUse());
});
gaugeAtScrape(
  'formwork_db_pool_connections',
  "The database pool's connections by state (in_use, idle) and the requests waiting for one (waiting).",
  (set) => {
    const pool = readAtScrape.pool?.();
    if (!pool) return;
    set(pool.inUse, { state: 'in_use' });
    set(pool.idle, { state: 'idle' });
    set(pool.waiting, { state: 'waiting' });
  },
  ['state'],
);
gaugeAtScrape('formwork_db_replica_lag_seconds', 'How far the read replica is behind the primary.', async (set) => {
  const lag = await readAtScrape.replicaLagSeconds?.();
  if (lag !== undefined) set(lag);
});
const outbox = { at: 0, value: undefined as Promise<{ pending: number; oldestAgeSeconds: number }> | undefined };
/** One read of the outbox per scrape, shared by its two gauges. */
function outboxNow() {
  if (!readAtScrape.webhookOutbox) return undefined;
  if (!outbox.value || Date.now() - outbox.at > 1000) {
    outbox.at = Date.now();
    outbox.value = readAtScrape.webhookOutbox();
  }
  return outbox.value;
}
gaugeAtScrape('formwork_webhook_outbox_pending', 'Webhook deliveries waiting to be sent.', async (set) => {
  const now = await outboxNow();
  if (now) set(now.pending);
});
gaugeAtScrape(
  'formwork_webhook_outbox_oldest_age_seconds',
  'How long the oldest due webhook delivery has waited (0 when none is due).',
  async (set) => {
    const now = await outboxNow();
    if (now) set(now.oldestAgeSeconds);
  },
);

gaugeAtScrape('formwork_email_outbox_pending', 'Emails waiting to be sent (every workspace).', async (set) => {
  const now = await readAtScrape.emailOutbox?.();
  if (now) set(now.pending);
});
gaugeAtScrape(
  'formwork_email_outbox_oldest_age_seconds',
  'How long the oldest due email has waited (0 when none is due).',
  async (set) => {
    const now = await readAtScrape.emailOutbox?.();
    if (now) set(now.oldestAgeSeconds);
  },
);

/**
 * Where a webhook delivery attempt's outcome is counted: here, or, in the delivery thread, posted to
 * the thread that serves /metrics (delivery.thread.ts replaces `count`).
 */
export const deliveryOutcomes = {
  count: (outcome: string, channel: 'webhook' | 'email' = 'webhook'): void =>
    void (channel === 'email' ? metrics.emailDeliveries : metrics.webhookDeliveries).inc({ outcome }),
};

/** Runs `wait` and records how long it took in `histogram`. */
export async function timed<T>(histogram: Histogram, wait: Promise<T>): Promise<T> {
  const end = histogram.startTimer();
  try {
    return await wait;
  } finally {
    end();
  }
}

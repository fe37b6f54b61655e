/**
 * The entry of the worker thread the delivery loop runs in (started by WebhookDeliveryWorker):
 * the loop's sends, signatures and result parsing never take the request thread's time. It
 * answers the host's requests (claim, purge, stop) and passes its warnings up, to be logged there.
 */
// First: tracing (when configured) must start before pg is required.
import '../observability/start-tracing';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { EmailChannel, EmailLoopOptions } from '../email/email-channel';
import { deliveryOutcomes } from '../observability/metrics';
import { DeliveryLoop } from './delivery-loop';
import { ClaimedDelivery, DeliveryLoopRepository } from './delivery-loop.repository';
import type { ClaimedEmail } from '../email/email-loop.repository';
import { WebhookChannel } from './webhook-channel';

/** What the thread is started with. */
export interface DeliveryThreadData {
  /** Marks the thread this file is the entry of (importing it elsewhere starts nothing). */
  role: 'formwork-delivery';
  databaseUrl: string;
  allowPrivateUrls: boolean;
  retryBaseMs: number;
  /** The keys that open the endpoints' secrets, base64, WEBHOOK_SECRET_KEY's first. */
  secretKeys: string[];
  /** Whether the webhooks' loop runs here (WEBHOOKS_DELIVERY). */
  webhooks: boolean;
  /** The email loop's settings, when it runs here (SMTP_URL set). */
  email?: EmailLoopOptions;
}

/** What the host may ask of the thread. */
export type DeliveryThreadRequest =
  | { op: 'claim'; limit: number; channel: Channel }
  | { op: 'purge'; channel: Channel }
  | { op: 'periodic'; channel: Channel }
  | { op: 'stop' };

/** The loops a thread may run. */
export type Channel = 'webhook' | 'email';

/** A request of the host, answered with the same id. */
export type ToDeliveryThread = DeliveryThreadRequest & { id: number };

/** An answer to a request, a warning to log, or an attempt's outcome to count. */
export type FromDeliveryThread =
  | { id: number; result?: number; error?: string }
  | { warn: string }
  | { outcome: string; channel: 'webhook' | 'email' };

if (!isMainThread && parentPort && (workerData as DeliveryThreadData | undefined)?.role === 'formwork-delivery') {
  const port = parentPort;
  const data = workerData as DeliveryThreadData;
  const warn = (message: string) => port.postMessage({ warn: message } satisfies FromDeliveryThread);
  deliveryOutcomes.count = (outcome, channel = 'webhook') =>
    port.postMessage({ outcome, channel } satisfies FromDeliveryThread);
  const loops = startLoops(data, warn);
  port.on('message', (msg: ToDeliveryThread) => {
    const run =
      msg.op === 'stop' ? Promise.all(Object.values(loops).map((l) => l.stop())).then(() => 0) : runOp(loops, msg);
    run.then(
      (result) => port.postMessage({ id: msg.id, result: result ?? undefined } satisfies FromDeliveryThread),
      (err: Error) => port.postMessage({ id: msg.id, error: err.message } satisfies FromDeliveryThread),
    );
  });
}

/** The loops `data` asks for, started unless `start` is false (for one-off claims and purges). */
export function startLoops(data: Omit<DeliveryThreadData, 'role'>, warn: (m: string) => void, start = true): Loops {
  const loops: Loops = {};
  if (data.webhooks) {
    const channel = new WebhookChannel(new DeliveryLoopRepository(data.databaseUrl, warn), data, warn);
    loops.webhook = new DeliveryLoop(channel, warn);
  }
  if (data.email) loops.email = new DeliveryLoop(new EmailChannel(data.databaseUrl, data.email, warn), warn);
  if (start) for (const loop of Object.values(loops)) loop.start();
  return loops;
}

export interface Loops {
  webhook?: DeliveryLoop<ClaimedDelivery>;
  email?: DeliveryLoop<ClaimedEmail>;
}

/** One request of the host to a loop: a claim now, a purge now, or its periodic work now. */
export function runOp(loops: Loops, msg: Exclude<DeliveryThreadRequest, { op: 'stop' }>): Promise<number> {
  const loop = loops[msg.channel];
  if (!loop) return Promise.reject(new Error(`the ${msg.channel} delivery loop does not run here`));
  if (msg.op === 'claim') return loop.claimAndStart(msg.limit);
  if (msg.op === 'purge') return loop.purge();
  return loop.resume();
}

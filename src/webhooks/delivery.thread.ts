/**
 * The entry of the worker thread the delivery loop runs in (started by WebhookDeliveryWorker):
 * the loop's sends, signatures and result parsing never take the request thread's time. It
 * answers the host's requests (claim, purge, stop) and passes its warnings up, to be logged there.
 */
// First: tracing (when configured) must start before pg is required.
import '../observability/start-tracing';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { deliveryOutcomes } from '../observability/metrics';
import { DeliveryLoop } from './delivery-loop';
import { DeliveryLoopRepository } from './delivery-loop.repository';

/** What the thread is started with. */
export interface DeliveryThreadData {
  /** Marks the thread this file is the entry of (importing it elsewhere starts nothing). */
  role: 'formwork-delivery';
  databaseUrl: string;
  allowPrivateUrls: boolean;
  retryBaseMs: number;
  /** The keys that open the endpoints' secrets, base64, WEBHOOK_SECRET_KEY's first. */
  secretKeys: string[];
}

/** What the host may ask of the thread. */
export type DeliveryThreadRequest = { op: 'claim'; limit: number } | { op: 'purge' } | { op: 'stop' };

/** A request of the host, answered with the same id. */
export type ToDeliveryThread = DeliveryThreadRequest & { id: number };

/** An answer to a request, a warning to log, or an attempt's outcome to count. */
export type FromDeliveryThread =
  { id: number; result?: number; error?: string } | { warn: string } | { outcome: string };

if (!isMainThread && parentPort && (workerData as DeliveryThreadData | undefined)?.role === 'formwork-delivery') {
  const port = parentPort;
  const data = workerData as DeliveryThreadData;
  const warn = (message: string) => port.postMessage({ warn: message } satisfies FromDeliveryThread);
  deliveryOutcomes.count = (outcome) => port.postMessage({ outcome } satisfies FromDeliveryThread);
  const loop = new DeliveryLoop(new DeliveryLoopRepository(data.databaseUrl, warn), data, warn);
  loop.start();
  port.on('message', (msg: ToDeliveryThread) => {
    const run = msg.op === 'claim' ? loop.claimAndStart(msg.limit) : msg.op === 'purge' ? loop.purge() : loop.stop();
    run.then(
      (result) => port.postMessage({ id: msg.id, result: result ?? undefined } satisfies FromDeliveryThread),
      (err: Error) => port.postMessage({ id: msg.id, error: err.message } satisfies FromDeliveryThread),
    );
  });
}

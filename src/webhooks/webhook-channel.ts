import { DeliveryChannel, MAX_IN_FLIGHT, WEBHOOK_CAPS } from './delivery-loop';
import { ClaimedDelivery, DeliveryLoopRepository } from './delivery-loop.repository';
import { nextDelayMs, parseRetryAfter } from './schedule';
import { WebhookSecretBox } from './secret-box';
import { SendResult, TIMEOUT_MS, WebhookSender } from './sender';
import { signedHeaders } from './signing';
import { inDeliverySpan } from '../observability/tracing';

/** The webhooks' part of the delivery loop: signed POSTs (10 s, no redirects) to the endpoints. */
export class WebhookChannel implements DeliveryChannel<ClaimedDelivery> {
  readonly noun = 'webhook';
  readonly leaseSeconds = TIMEOUT_MS / 1000 + 10;
  /** Most attempts succeed: recorded 50 ms apart at most, in fuller batches (bench:webhooks). */
  readonly recordWaitMs = 50;
  readonly caps = WEBHOOK_CAPS;
  private readonly sender: WebhookSender;
  private readonly box: WebhookSecretBox;

  constructor(
    readonly repository: DeliveryLoopRepository,
    /** `secretKeys`: the keys that open the endpoints' secrets (base64; the first is WEBHOOK_SECRET_KEY's, see secret-box.ts). */
    private readonly options: { allowPrivateUrls: boolean; retryBaseMs: number; secretKeys: string[] },
    private readonly warn: (message: string) => void,
  ) {
    this.sender = new WebhookSender(options.allowPrivateUrls, TIMEOUT_MS, MAX_IN_FLIGHT);
    this.box = new WebhookSecretBox(options.secretKeys.map((k) => Buffer.from(k, 'base64')));
  }

  send(delivery: ClaimedDelivery): Promise<SendResult> {
    const headers = signedHeaders(this.secretsOf(delivery), delivery.event_id, delivery.payload, new Date());
    // A span linked to the request that queued it (tracing on), whose traceparent the receiver gets.
    return inDeliverySpan(delivery.traceparent, headers, () =>
      this.sender.send(delivery.url, headers, delivery.payload),
    );
  }

  outcomeOf(result: SendResult, attempt: number, at: Date) {
    if (result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300)
      return { outcome: 'delivered' as const, next: null };
    if (result.statusCode === 410) return { outcome: 'gone' as const, next: null };
    const delay = nextDelayMs(attempt, this.options.retryBaseMs, parseRetryAfter(result.retryAfter));
    return delay === null
      ? { outcome: 'failed' as const, next: null }
      : { outcome: 'retry' as const, next: new Date(at.getTime() + result.durationMs + delay) };
  }

  abortAll(): void {
    this.sender.abortAll();
  }

  close(): Promise<void> {
    return this.sender.close();
  }

  /**
   * The secrets that sign a delivery, opened. One that no configured key opens throws (the
   * delivery is claimed again after its lease, and delivered once the key is back or the secret
   * rotated); a previous secret that does not open (a rotation after a lost key) is left out.
   */
  private secretsOf(delivery: ClaimedDelivery): string[] {
    const secrets = [this.box.open(delivery.secret)];
    if (delivery.previous_secret) {
      try {
        secrets.push(this.box.open(delivery.previous_secret));
      } catch (err) {
        this.warn(`webhook ${delivery.endpoint_id} is signed with its current secret only: ${(err as Error).message}`);
      }
    }
    return secrets;
  }
}

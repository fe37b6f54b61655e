import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/config';
import { WebhookSecretBox } from './secret-box';
import {
  Channel,
  DeliveryThreadData,
  DeliveryThreadRequest,
  FromDeliveryThread,
  Loops,
  runOp,
  startLoops,
  ToDeliveryThread,
} from './delivery.thread';
import { deliveryOutcomes } from '../observability/metrics';

/** The compiled thread entry; from the TypeScript sources (jest) there is none and the loop runs in this thread. */
const THREAD_ENTRY = join(__dirname, 'delivery.thread.js');
/** How long a stopping thread may take (past an attempt's 10 s limit) before it is terminated. */
const STOP_TIMEOUT_MS = 15_000;
/** A thread that died is started again after this. */
const RESTART_DELAY_MS = 1_000;

/**
 * Hosts the delivery loops of this instance (DeliveryLoop: webhooks, and email once SMTP_URL is set): in a worker thread of its own, so that
 * sending, signing and reading answers (and TLS handshakes with receivers) never delay a request
 * on this thread. Measured in bench/README.md: with the loop on the request thread, a busy
 * instance's create_response p50 rose by a third while it delivered. The loop's state is in the
 * database (claims with leases), so a thread that dies loses nothing: it is started again, and
 * what it held is claimed again when the lease ends.
 */
@Injectable()
export class WebhookDeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  private thread?: Worker;
  /** The loops when they run in this thread (no compiled entry), or made for a one-off claim or purge. */
  private local?: Loops;
  private stopping = false;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (n: number) => void; reject: (e: Error) => void }>();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly box: WebhookSecretBox,
  ) {}

  onApplicationBootstrap() {
    if (!this.config.webhooks.deliver) return;
    if (existsSync(THREAD_ENTRY)) this.startThread();
    else this.local = startLoops(this.loopData(), (m) => this.logger.warn(m));
  }

  /** Stops the loop: attempts in flight are abandoned (due again at once) and its connections closed. */
  async onModuleDestroy() {
    this.stopping = true;
    const thread = this.thread;
    if (thread) {
      const stopped = this.request({ op: 'stop' }).catch((err: Error) =>
        this.logger.warn(`the webhook delivery thread did not stop cleanly: ${err.message}`),
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([stopped, new Promise((resolve) => (timer = setTimeout(resolve, STOP_TIMEOUT_MS)))]);
      clearTimeout(timer);
      await thread.terminate();
    }
    await Promise.all(Object.values(this.local ?? {}).map((l) => l.stop()));
  }

  /**
   * Claims up to `limit` due deliveries now and starts their attempts; how many it took off the
   * due index (claimed, set aside as paused, or deleted: its endpoint is gone).
   */
  claimAndStart(limit: number, channel: Channel = 'webhook'): Promise<number> {
    return this.run({ op: 'claim', limit, channel });
  }

  /** Deletes deliveries older than 30 days now; how many. */
  purge(channel: Channel = 'webhook'): Promise<number> {
    return this.run({ op: 'purge', channel });
  }

  /** A loop's periodic work now (email: the digests due, queued); how many rows it wrote. */
  periodic(channel: Channel): Promise<number> {
    return this.run({ op: 'periodic', channel });
  }

  private run(msg: Exclude<DeliveryThreadRequest, { op: 'stop' }>): Promise<number> {
    if (this.thread) return this.request(msg);
    this.local ??= startLoops(this.loopData(), (m) => this.logger.warn(m), false);
    return runOp(this.local, msg);
  }

  private loopData(): Omit<DeliveryThreadData, 'role'> {
    const { email, publicUrl, webhooks } = this.config;
    const secretKeys = this.box.exportKeys();
    return {
      databaseUrl: this.databaseUrl(),
      allowPrivateUrls: webhooks.allowPrivateUrls,
      retryBaseMs: webhooks.retryBaseMs,
      secretKeys,
      webhooks: true,
      email: email.smtpUrl
        ? {
            ...email,
            smtpUrl: email.smtpUrl,
            publicUrl,
            secretKeys,
            resumeDays: this.config.partialResponseRetentionDays,
          }
        : undefined,
    };
  }

  private startThread(): void {
    const data: DeliveryThreadData = { role: 'formwork-delivery', ...this.loopData() };
    const thread = new Worker(THREAD_ENTRY, { workerData: data });
    this.thread = thread;
    thread.on('message', (msg: FromDeliveryThread) => {
      if ('warn' in msg) return this.logger.warn(msg.warn);
      if ('outcome' in msg) return deliveryOutcomes.count(msg.outcome, msg.channel);
      const waiting = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (msg.error !== undefined) waiting?.reject(new Error(msg.error));
      else waiting?.resolve(msg.result ?? 0);
    });
    thread.on('error', (err) => this.logger.error(`the webhook delivery thread failed: ${err.message}`));
    thread.on('exit', (code) => {
      for (const waiting of this.pending.values()) waiting.reject(new Error('the delivery thread ended'));
      this.pending.clear();
      if (this.thread === thread) this.thread = undefined;
      if (this.stopping) return;
      this.logger.error(`the webhook delivery thread ended (exit code ${code}); starting it again`);
      setTimeout(() => !this.stopping && this.startThread(), RESTART_DELAY_MS).unref();
    });
  }

  private request(msg: DeliveryThreadRequest): Promise<number> {
    const thread = this.thread;
    if (!thread) return Promise.reject(new Error('the delivery thread is not running'));
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      thread.postMessage({ ...msg, id } satisfies ToDeliveryThread);
    });
  }

  private databaseUrl(): string {
    // The loop's connections carry session settings and prepared statements: behind a transaction
    // pooler they take the direct URL (docs/operating.md).
    const { databasePooler, databaseDirectUrl } = this.config;
    if (databasePooler === 'transaction' && databaseDirectUrl) return databaseDirectUrl;
    return String((this.db.options as { url?: string }).url);
  }
}

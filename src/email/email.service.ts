import { Inject, Injectable } from '@nestjs/common';
import { createTransport } from 'nodemailer';
import { APP_CONFIG, AppConfig } from '../config/config';
import { readAtScrape } from '../observability/metrics';
import { WebhookSecretBox } from '../webhooks/secret-box';
import { EmailRepository, NotifyMode, OutboxRow } from './email.repository';
import { subscriptionOf } from './unsubscribe-token';
import { recipientAddress, RESPONDENT_LIMITS } from './address';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** How long /readyz's look at the mail server is reused (each look is a connection and a greeting). */
const VERIFY_EVERY_MS = 15_000;
const VERIFY_TIMEOUT_MS = 3000;

export interface EmailReadiness {
  /** SMTP_URL is set: this instance's delivery loop sends; without it messages wait in the outbox. */
  configured: boolean;
  /** The server answered a greeting and login lately (only when configured). */
  server?: 'ok' | 'unreachable';
  /** Messages waiting to be sent, every workspace's. */
  pending: number;
}

/**
 * Email on the request side (issue 48): a member's notifications per form, the workspace's outbox
 * (the Email settings page), one-click unsubscribes, and what /readyz says of the mail server. The
 * sending itself is the delivery loop's (EmailChannel).
 */
@Injectable()
export class EmailService {
  private verified?: { at: number; server: 'ok' | 'unreachable' };

  constructor(
    private readonly repository: EmailRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly box: WebhookSecretBox,
  ) {
    readAtScrape.emailOutbox = () => repository.outboxStats();
  }

  get configured(): boolean {
    return this.config.email.smtpUrl !== undefined;
  }

  get from(): string {
    return this.config.email.from;
  }

  forms(workspaceId: string, userId: string) {
    return this.repository.forms(workspaceId, userId);
  }

  setMode(workspaceId: string, userId: string, publicId: string, mode: NotifyMode): Promise<boolean> {
    return this.repository.setMode(workspaceId, userId, publicId, mode);
  }

  outbox(workspaceId: string, o: { status?: string; limit: number; offset: number }): Promise<OutboxRow[]> {
    return this.repository.outbox(workspaceId, o);
  }

  retry(workspaceId: string, id: string): Promise<boolean> {
    return UUID.test(id) ? this.repository.retry(workspaceId, id) : Promise.resolve(false);
  }

  queueTest(workspaceId: string, to: string): Promise<void> {
    return this.repository.queueTest(workspaceId, to);
  }

  /**
   * Queues the resume link of a partial response to `address` (issue 48, item 5), asked for on the
   * form's page: the address checked first (null: it is not one), then the hour's limits per
   * recipient, client and form (the limit hit). The link is sealed in the row and cleared once sent.
   */
  async queueResumeLink(m: {
    workspaceId: string;
    formId: string;
    address: unknown;
    clientIp: string;
    secret: string;
  }): Promise<{ queued: string } | { invalid: true } | { limited: 'address' | 'client' | 'form' }> {
    const to = recipientAddress(m.address);
    if (!to) return { invalid: true };
    const limited = await this.repository.queueForRespondent({
      workspaceId: m.workspaceId,
      formId: m.formId,
      kind: 'resume',
      to,
      clientIp: m.clientIp,
      sealed: this.box.seal(m.secret),
      limits: RESPONDENT_LIMITS,
    });
    return limited ? { limited } : { queued: to };
  }

  /** The form an unsubscribe link is about, or null (a link no key made, or a subscription that ended). */
  async unsubscribeTitle(token: string): Promise<string | null> {
    const id = subscriptionOf(this.box.exportKeys(), token);
    return id ? this.repository.subscriptionTitle(id) : null;
  }

  /** Ends the subscription an unsubscribe link names; whether it did (false: unknown link, or ended before). */
  async unsubscribe(token: string): Promise<boolean> {
    const id = subscriptionOf(this.box.exportKeys(), token);
    return id ? (await this.repository.unsubscribe(id)) !== null : false;
  }

  async readiness(): Promise<EmailReadiness> {
    const pending = await this.repository.pending();
    if (!this.configured) return { configured: false, pending };
    return { configured: true, server: await this.server(), pending };
  }

  private async server(): Promise<'ok' | 'unreachable'> {
    if (this.verified && Date.now() - this.verified.at < VERIFY_EVERY_MS) return this.verified.server;
    const transport = createTransport({
      url: this.config.email.smtpUrl,
      connectionTimeout: VERIFY_TIMEOUT_MS,
      greetingTimeout: VERIFY_TIMEOUT_MS,
      socketTimeout: VERIFY_TIMEOUT_MS,
    });
    const server = await transport.verify().then(
      () => 'ok' as const,
      () => 'unreachable' as const,
    );
    transport.close();
    this.verified = { at: Date.now(), server };
    return server;
  }
}

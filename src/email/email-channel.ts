import { createTransport, Transporter } from 'nodemailer';
import type { EmailSettings } from '../config/config';
import { CLAIM_WINDOW, DeliveryChannel, MAX_IN_FLIGHT } from '../webhooks/delivery-loop';
import { nextDelayMs } from '../webhooks/schedule';
import { SendResult, storableText } from '../webhooks/sender';
import { ClaimedEmail, EmailContent, EmailLoopRepository } from './email-loop.repository';
import { Block } from '../forms/blocks';
import { answerText as recalledText, recall, recallValues } from '../forms/compute/recall';
import { WebhookSecretBox } from '../webhooks/secret-box';
import {
  digestMessage,
  notificationMessage,
  receiptMessage,
  RenderedMessage,
  resumeMessage,
  testMessage,
} from './messages';
import { unsubscribeToken } from './unsubscribe-token';

/** What the email loop is started with (also passed to the delivery thread: plain data). */
export interface EmailLoopOptions extends EmailSettings {
  smtpUrl: string;
  publicUrl: string;
  /** The keys of unsubscribe links (base64, see unsubscribe-token.ts) and of sealed resume links. */
  secretKeys: string[];
  /** How long a resume link lasts without a change (PARTIAL_RESPONSE_RETENTION_DAYS), as the message says. */
  resumeDays: number;
}

/** A send (connection, greeting, each command) must end within this; the lease outlasts it. */
const TIMEOUT_MS = 15_000;
/** Connections to the mail server at most (nodemailer's pool; each sends its messages one after another). */
const CONNECTIONS = 10;
/** Messages per connection before it is replaced (nodemailer's default is 100). */
const MESSAGES_PER_CONNECTION = 1000;
/** One workspace's share of the instance's sends (a quarter; half while the server answers fast), as for webhooks. */
const PER_WORKSPACE = 32;

/** A send's outcome, not the server's: what the message is about is gone (see outcomeOf). */
const CANCELLED = 'The message was not sent: what it was about was deleted, or its person unsubscribed or left.';

/**
 * The email part of the delivery loop (DeliveryLoop): claims from email_outbox, renders each
 * message from what it names, and sends it through a pooled SMTP connection (nodemailer; DKIM when
 * configured). A 2xx delivered; a 5xx answer failed, with it recorded; a 4xx or no answer
 * (connection refused, timeout) retried on the webhooks' schedule.
 */
export class EmailChannel implements DeliveryChannel<ClaimedEmail> {
  readonly noun = 'email';
  readonly leaseSeconds = TIMEOUT_MS / 1000 + 10;
  /** Recorded at once: the time between the server's 250 and the record is the only one a crash can send twice. */
  readonly recordWaitMs = 0;
  readonly caps = {
    perTarget: MAX_IN_FLIGHT,
    perFastTarget: MAX_IN_FLIGHT,
    perWorkspace: PER_WORKSPACE,
    perFastWorkspace: CLAIM_WINDOW / 4,
  };
  readonly repository: EmailLoopRepository;
  private readonly transport: Transporter;
  private readonly box: WebhookSecretBox;
  private reading?: { emails: ClaimedEmail[]; read: Promise<Map<string, EmailContent>> };

  constructor(
    databaseUrl: string,
    private readonly options: EmailLoopOptions,
    warn: (message: string) => void,
  ) {
    this.repository = new EmailLoopRepository(databaseUrl, warn);
    this.box = new WebhookSecretBox(options.secretKeys.map((k) => Buffer.from(k, 'base64')));
    this.transport = createTransport({
      url: options.smtpUrl,
      pool: true,
      maxConnections: CONNECTIONS,
      maxMessages: MESSAGES_PER_CONNECTION,
      connectionTimeout: TIMEOUT_MS,
      greetingTimeout: TIMEOUT_MS,
      socketTimeout: TIMEOUT_MS,
      ...(options.dkim ? { dkim: options.dkim } : {}),
    });
  }

  async send(e: ClaimedEmail): Promise<SendResult> {
    const started = Date.now();
    const content = await this.contentOf(e);
    const message = content && this.render(e, content);
    if (!message)
      return { statusCode: null, responseBody: null, error: CANCELLED, durationMs: 0, retryAfter: undefined };
    const unsubscribe = e.subscription_id ? this.unsubscribeUrl(e.subscription_id) : undefined;
    try {
      const info = (await this.transport.sendMail({
        from: this.options.from,
        to: e.to_address,
        subject: message.subject,
        text: message.text,
        html: message.html,
        // Stable per row: a client threads it, and a copy sent twice (a crash right after the server's 250) is recognisable.
        messageId: `<${e.id}@formwork>`,
        headers: unsubscribe
          ? { 'List-Unsubscribe': `<${unsubscribe}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' }
          : {},
      })) as { response?: string };
      return result(info.response ?? '250', null, started);
    } catch (err) {
      const smtp = err as { responseCode?: number; response?: string; code?: string };
      // Without an SMTP answer, the error names the operator's mail host and port: workspace admins
      // read this on their Email page, so they get its kind only.
      const failure = `could not reach the mail server (${smtp.code ?? 'connection error'})`;
      return result(smtp.response ?? null, smtp.responseCode ? null : failure, started, smtp.responseCode);
    }
  }

  /**
   * What `e` is about: read for every email whose send starts in this turn of the event loop in one
   * statement (a claim starts its whole batch at once).
   */
  private contentOf(e: ClaimedEmail): Promise<EmailContent | null> {
    let batch = this.reading;
    if (!batch) {
      const emails: ClaimedEmail[] = [];
      const read = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        this.reading = undefined;
        return this.repository.contentsOf(emails);
      });
      this.reading = batch = { emails, read };
    }
    batch.emails.push(e);
    return batch.read.then((m) => m.get(e.id) ?? null);
  }

  outcomeOf(r: SendResult, attempt: number, at: Date) {
    if (r.error === CANCELLED) return { outcome: 'gone' as const, next: null };
    if (r.statusCode !== null && r.statusCode >= 200 && r.statusCode < 300)
      return { outcome: 'delivered' as const, next: null };
    const delay =
      r.statusCode !== null && r.statusCode >= 500 ? null : nextDelayMs(attempt, this.options.retryBaseMs, null);
    return delay === null
      ? { outcome: 'failed' as const, next: null }
      : { outcome: 'retry' as const, next: new Date(at.getTime() + r.durationMs + delay) };
  }

  abortAll(): void {
    this.transport.close();
  }

  close(): Promise<void> {
    this.transport.close();
    return Promise.resolve();
  }

  periodic(): Promise<number> {
    return this.repository.queueDigests();
  }

  private render(e: ClaimedEmail, c: EmailContent): RenderedMessage | null {
    if (e.kind === 'test') return testMessage(c.workspace);
    if (e.kind === 'receipt') return c.answers && c.submitted_at && c.title ? receipt(c) : null;
    if (e.kind === 'resume') {
      // A resume link's secret, opened here only: a form deleted meanwhile cancels it.
      if (!e.sealed || !c.public_id || !c.title) return null;
      const secret = this.box.open(e.sealed);
      const link = `${this.options.publicUrl}/f/${encodeURIComponent(c.public_id)}?resume=${encodeURIComponent(secret)}`;
      return resumeMessage({ formTitle: c.title, link, days: this.options.resumeDays });
    }
    // A notification's person unsubscribed or left: not sent.
    if (!c.title || !c.public_id || !c.mode || !e.subscription_id) return null;
    const results = `${this.options.publicUrl}/settings/w/${encodeURIComponent(c.slug)}/forms/${encodeURIComponent(c.public_id)}/responses`;
    const unsubscribeUrl = this.unsubscribeUrl(e.subscription_id);
    if (e.kind === 'digest') {
      if (!c.digest || c.digest.count === 0 || c.mode === 'each') return null;
      return digestMessage({
        formTitle: c.title,
        count: c.digest.count,
        period: c.mode,
        latest: (c.digest.latest ?? []).map((l) => ({
          submittedAt: new Date(l.submittedAt),
          url: `${results}/${l.id}`,
        })),
        resultsUrl: results,
        unsubscribeUrl,
      });
    }
    if (!c.answers || !c.submitted_at || !e.response_id) return null;
    const answers = c.answers;
    return notificationMessage({
      formTitle: c.title,
      submittedAt: new Date(c.submitted_at),
      answers: (c.blocks ?? [])
        .filter((b) => b.id in answers)
        .map((b) => ({
          question: b.title,
          answer:
            b.type === 'file_upload'
              ? `${[answers[b.id]].flat().length} file(s): see the response`
              : answerText(answers[b.id]),
        })),
      responseUrl: `${results}/${e.response_id}`,
      unsubscribeUrl,
    });
  }

  private unsubscribeUrl(subscriptionId: string): string {
    return `${this.options.publicUrl}/email/unsubscribe/${unsubscribeToken(this.options.secretKeys, subscriptionId)}`;
  }
}

/**
 * A receipt (issue 48, item 4): the form's subject and message with recall filled in (text: the
 * components escape it, oneLine keeps the subject one line), and the answers as recall shows them.
 */
function receipt(c: EmailContent): RenderedMessage {
  const blocks = (c.blocks ?? []).map((b) => ({ ...b.settings, id: b.id, type: b.type, title: b.title }) as Block);
  const answers = c.answers ?? {};
  const values = recallValues(blocks, answers, c.hidden ?? {}, c.variables ?? {});
  return receiptMessage({
    formTitle: c.title!,
    subject: recall(c.receipt?.subject ?? '', values),
    message: recall(c.receipt?.message ?? '', values),
    submittedAt: new Date(c.submitted_at!),
    answers: blocks
      .filter((b) => b.id in answers)
      .map((b) => ({
        question: recall(b.title, values),
        answer:
          b.type === 'file_upload' ? `${[answers[b.id]].flat().length} file(s)` : recalledText(b, answers[b.id]) || '—',
      })),
  });
}

/** An answer as text: lists joined, yes/no in words (as the results pages show it). */
function answerText(v: unknown): string {
  if (v === undefined || v === null) return '—';
  if (Array.isArray(v)) return v.map(answerText).join(', ');
  if (typeof v === 'boolean') return v ? 'Yes' : 'No';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** An SMTP answer ("250 2.0.0 Ok: queued as X") as a SendResult: its code, and the answer kept (2 KB at most). */
function result(answer: string | null, error: string | null, started: number, code?: number): SendResult {
  const parsed = code ?? (answer && /^\d{3}/.test(answer) ? Number(answer.slice(0, 3)) : null);
  return {
    statusCode: parsed,
    responseBody: answer === null ? null : storableText(answer),
    error:
      error === null ? (parsed !== null && parsed >= 300 ? storableText(answer ?? '') : null) : storableText(error),
    durationMs: Date.now() - started,
    retryAfter: undefined,
  };
}

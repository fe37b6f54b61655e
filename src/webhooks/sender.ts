import { isIP } from 'node:net';
import { Agent, Dispatcher } from 'undici';
import { hostOf, isBlockedAddress, safeLookup } from './url-safety';

/** The whole attempt (connection, request, answer) must finish within this. */
export const TIMEOUT_MS = 10_000;
/** The part of an endpoint's answer that is kept in the delivery log. */
export const RESPONSE_BODY_LIMIT = 2048;

export interface SendResult {
  /** The HTTP status, or null when no answer came. */
  statusCode: number | null;
  /** The answer's first 2 KB (null when there was none). */
  responseBody: string | null;
  /** Why the attempt failed, in words (null on a 2xx). */
  error: string | null;
  durationMs: number;
  /** The endpoint's Retry-After header as it came (seconds or an HTTP date: see parseRetryAfter). */
  retryAfter: string | undefined;
}

/** What sending to one URL needs, worked out once per URL (most deliveries go to a few URLs). */
type Target = { problem: string } | { origin: string; path: string };
/** Parsed targets kept; past this the cache starts afresh. */
const TARGET_CACHE_SIZE = 1000;

/**
 * One attempt, as the handler undici's dispatch() calls back: it keeps the status, the two headers
 * the loop reads and the answer's first 2 KB, and settles once, with the whole attempt's outcome.
 * dispatch(), not request(): request() wraps every answer in a Readable stream and its events,
 * which cost the delivery thread about a third more CPU per attempt (measured against nginx:
 * 39-44 us an attempt with request(), 28-32 us with this).
 */
class Attempt implements Dispatcher.DispatchHandler {
  private controller?: Dispatcher.DispatchController;
  private statusCode: number | null = null;
  private retryAfter: string | undefined;
  private location: string | undefined;
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  /** Why it was ended early, in words, once it is. */
  private endedBecause?: string;
  private settled = false;
  readonly done: Promise<SendResult>;
  private resolve!: (r: SendResult) => void;

  constructor(
    private readonly started: number,
    private readonly timeoutMs: number,
  ) {
    this.done = new Promise((resolve) => (this.resolve = resolve));
  }

  /**
   * Ends the attempt now, as failed for `why`: aborted if it reached a connection, and settled at
   * once either way (one still queued for a connection would otherwise outlive its time limit).
   */
  end(why: string): void {
    this.endedBecause ??= why;
    this.controller?.abort(new Error(why));
    this.settle(null, why);
  }

  /** Called when the request reaches a connection (not while it waits for one). */
  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Ended while it waited for a connection: it is not sent now.
    if (this.endedBecause) controller.abort(new Error(this.endedBecause));
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // an informational answer: the real one follows
    this.statusCode = statusCode;
    this.retryAfter = first(headers['retry-after']);
    this.location = first(headers.location);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    const part = chunk.subarray(0, RESPONSE_BODY_LIMIT - this.kept);
    this.chunks.push(part);
    this.kept += part.length;
    // All that is kept is in: the attempt is settled now and the connection closed, rather than
    // reading the rest (a receiver streaming a long or endless answer would hold the attempt's
    // slot for the whole 10 s). Only answers longer than 2 KB lose their connection.
    if (this.kept >= RESPONSE_BODY_LIMIT) {
      this.answered();
      controller.abort(new Error('the answer is longer than what is kept'));
    }
  }

  onResponseEnd(): void {
    this.answered();
  }

  /** The answer's status and kept bytes are in: settles the attempt with them. */
  private answered(): void {
    const statusCode = this.statusCode ?? 0;
    let error: string | null = null;
    if (statusCode >= 300 && statusCode < 400)
      error = `redirect not followed (${statusCode}${this.location ? ` to ${this.location.slice(0, 200)}` : ''})`;
    else if (statusCode < 200 || statusCode >= 300) error = `the endpoint answered ${statusCode}`;
    const text =
      this.chunks.length === 1 ? this.chunks[0].toString('utf8') : Buffer.concat(this.chunks).toString('utf8');
    this.settle(text.length ? storableText(text) : null, error === null ? null : storableText(error), true);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.settle(
      null,
      storableText(
        this.endedBecause ??
          (this.statusCode === null ? describe(err, this.timeoutMs) : 'the connection closed before the answer ended'),
      ),
    );
  }

  /** `answered`: the whole answer came (its Retry-After counts). */
  private settle(responseBody: string | null, error: string | null, answered = false): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve({
      statusCode: this.statusCode,
      responseBody,
      error,
      durationMs: Date.now() - this.started,
      retryAfter: answered ? this.retryAfter : undefined,
    });
  }
}

/**
 * Sends signed webhook requests: POST, JSON, 10 s for the whole exchange, no redirect followed
 * (a 3xx is a failed attempt). undici, not node:http: it costs this process half the CPU per
 * attempt (bench/README.md). Connections are kept alive per receiver, and every new one goes
 * through safeLookup, so it connects to the address that was checked.
 */
export class WebhookSender {
  private readonly agent: Agent;
  private readonly targets = new Map<string, Target>();
  /** Attempts under way, so that abortAll can end them. */
  private readonly inFlight = new Set<Attempt>();

  /**
   * `connectionsPerReceiver`: connections opened to one origin at most. The delivery loop passes
   * its limit of attempts in flight, so that no attempt waits for a connection: its 10 s are the
   * receiver's alone.
   */
  constructor(
    private readonly allowPrivate: boolean,
    private readonly timeoutMs = TIMEOUT_MS,
    connectionsPerReceiver = 32,
  ) {
    this.agent = new Agent({
      connections: connectionsPerReceiver,
      connect: { lookup: safeLookup(allowPrivate), timeout: timeoutMs },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
  }

  async send(target: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = Date.now();
    const parsed = this.target(target);
    if ('problem' in parsed)
      return { statusCode: null, responseBody: null, error: parsed.problem, durationMs: 0, retryAfter: undefined };
    const attempt = new Attempt(started, this.timeoutMs);
    const timer = setTimeout(() => attempt.end(`no answer within ${this.timeoutMs / 1000} s`), this.timeoutMs);
    this.inFlight.add(attempt);
    try {
      this.agent.dispatch(
        {
          origin: parsed.origin,
          path: parsed.path,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'Formwork-Webhooks/1', ...headers },
          body,
        },
        attempt,
      );
      return await attempt.done;
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(attempt);
    }
  }

  /** Ends every attempt under way (the instance stops): each settles as a failed attempt. */
  abortAll(): void {
    for (const attempt of this.inFlight) attempt.end('the instance stopped during the attempt');
  }

  /** Where to send for a URL, or why nothing is sent to it (parsed once per URL, not per attempt). */
  private target(raw: string): Target {
    let found = this.targets.get(raw);
    if (found) return found;
    found = parseTarget(raw, this.allowPrivate);
    if (this.targets.size >= TARGET_CACHE_SIZE) this.targets.clear();
    this.targets.set(raw, found);
    return found;
  }

  async close(): Promise<void> {
    await this.agent.destroy();
  }
}

/**
 * Text a receiver chose (its answer, a Location) as PostgreSQL can store it: a text column takes
 * no NUL (U+0000), and a lone surrogate cannot be encoded as UTF-8. Each becomes U+FFFD, as the
 * UTF-8 decoder already makes of invalid bytes. One such character once failed the statement
 * recording a whole batch of attempts (issue 23).
 */
export function storableText(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u0000/g, '\ufffd').toWellFormed();
}

/** A header's (first) value. */
function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function parseTarget(raw: string, allowPrivate: boolean): Target {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problem: 'the URL is not valid' };
  }
  // An IP literal is not looked up, so safeLookup never sees it: check it here.
  const host = hostOf(url);
  if (!allowPrivate && isIP(host) && isBlockedAddress(host))
    return { problem: `${host} is a loopback, private, link-local or reserved address: not sent` };
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { problem: `${url.protocol} URLs are not sent` };
  return { origin: url.origin, path: `${url.pathname}${url.search}` };
}

/** A network error in words, without anything of the request (its headers carry signatures). */
function describe(err: Error & { code?: string }, timeoutMs: number): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset by the endpoint';
    case 'UND_ERR_SOCKET':
      return 'the endpoint closed the connection without answering';
    case 'ENOTFOUND':
      return 'the host does not resolve';
    case 'EBLOCKEDADDRESS':
      return err.message;
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return `no answer within ${timeoutMs / 1000} s`;
    default:
      return err.code && /^[A-Z_]+$/.test(err.code)
        ? `network error (${err.code})`
        : `network error (${err.message.slice(0, 200)})`;
  }
}

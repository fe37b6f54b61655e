import { EventEmitter } from 'node:events';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { Agent } from 'undici';
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
  /** The endpoint's Retry-After, in milliseconds. */
  retryAfter: string | undefined;
}

/** What sending to one URL needs, worked out once per URL (most deliveries go to a few URLs). */
type Target = { problem: string } | { origin: string; path: string };
/** Parsed targets kept; past this the cache starts afresh. */
const TARGET_CACHE_SIZE = 1000;

/** An attempt under way: aborting it emits 'abort' (undici takes an EventEmitter as a signal). */
class Attempt extends EventEmitter {
  /** Why it was ended early, in words, once it is. */
  endedBecause?: string;
  end(why: string) {
    this.endedBecause ??= why;
    this.emit('abort');
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
    const done = (r: Omit<SendResult, 'durationMs'>): SendResult => ({ ...r, durationMs: Date.now() - started });
    const parsed = this.target(target);
    if ('problem' in parsed)
      return done({ statusCode: null, responseBody: null, error: parsed.problem, retryAfter: undefined });
    const attempt = new Attempt();
    const timer = setTimeout(() => attempt.end(`no answer within ${this.timeoutMs / 1000} s`), this.timeoutMs);
    this.inFlight.add(attempt);
    let statusCode: number | null = null;
    try {
      const res = await this.agent.request({
        origin: parsed.origin,
        path: parsed.path,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'Formwork-Webhooks/1', ...headers },
        body,
        signal: attempt,
      });
      statusCode = res.statusCode;
      const text = await firstBytes(res.body, RESPONSE_BODY_LIMIT);
      const retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : undefined;
      let error: string | null = null;
      if (statusCode >= 300 && statusCode < 400) {
        const location = res.headers.location;
        error = `redirect not followed (${statusCode}${typeof location === 'string' ? ` to ${location.slice(0, 200)}` : ''})`;
      } else if (statusCode < 200 || statusCode >= 300) error = `the endpoint answered ${statusCode}`;
      return done({ statusCode, responseBody: text.length ? text : null, error, retryAfter });
    } catch (err) {
      const error =
        attempt.endedBecause ??
        (statusCode === null
          ? describe(err as Error, this.timeoutMs)
          : 'the connection closed before the answer ended');
      return done({ statusCode, responseBody: null, error, retryAfter: undefined });
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

/** The body's first `limit` bytes as text; the rest is read and dropped, so that the connection can be reused. */
function firstBytes(body: Readable, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    body.on('data', (chunk: Buffer) => {
      if (kept >= limit) return;
      chunks.push(chunk.subarray(0, limit - kept));
      kept += Math.min(chunk.length, limit - kept);
    });
    body.on('end', () =>
      resolve(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8')),
    );
    body.on('error', reject);
  });
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

import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
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
type Target = { problem: string } | { client: typeof http | typeof https; options: http.RequestOptions };
/** Parsed targets kept; past this the cache starts afresh. */
const TARGET_CACHE_SIZE = 1000;

/**
 * Sends signed webhook requests: POST, JSON, 10 s for the whole exchange, no redirect followed
 * (a 3xx is a failed attempt). Connections are kept alive per host, and every new one goes
 * through safeLookup, so it connects to the address that was checked.
 */
export class WebhookSender {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly targets = new Map<string, Target>();
  /** Requests under way, so that abortAll can end them (cheaper than an AbortSignal per request). */
  private readonly inFlight = new Set<http.ClientRequest>();

  constructor(
    private readonly allowPrivate: boolean,
    private readonly timeoutMs = TIMEOUT_MS,
  ) {
    const options = { keepAlive: true, maxSockets: 32, lookup: safeLookup(allowPrivate) };
    this.httpAgent = new http.Agent(options);
    this.httpsAgent = new https.Agent(options);
  }

  send(target: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = Date.now();
    const done = (r: Omit<SendResult, 'durationMs'>): SendResult => ({ ...r, durationMs: Date.now() - started });
    const parsed = this.target(target);
    if ('problem' in parsed)
      return Promise.resolve(
        done({ statusCode: null, responseBody: null, error: parsed.problem, retryAfter: undefined }),
      );
    return new Promise((resolve) => {
      let settled = false;
      const finish = (r: Omit<SendResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.inFlight.delete(req);
        resolve(done(r));
      };
      const req = parsed.client.request(
        {
          ...parsed.options,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'user-agent': 'Formwork-Webhooks/1',
            ...headers,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let kept = 0;
          res.on('data', (chunk: Buffer) => {
            if (kept < RESPONSE_BODY_LIMIT) {
              chunks.push(chunk.subarray(0, RESPONSE_BODY_LIMIT - kept));
              kept += Math.min(chunk.length, RESPONSE_BODY_LIMIT - kept);
            }
          });
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            const text = chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8');
            const retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : undefined;
            let error: string | null = null;
            if (status >= 300 && status < 400)
              error = `redirect not followed (${status}${res.headers.location ? ` to ${String(res.headers.location).slice(0, 200)}` : ''})`;
            else if (status < 200 || status >= 300) error = `the endpoint answered ${status}`;
            finish({ statusCode: status, responseBody: text.length ? text : null, error, retryAfter });
          });
          res.on('error', (err) =>
            finish({
              statusCode: res.statusCode ?? null,
              responseBody: null,
              error: describe(err),
              retryAfter: undefined,
            }),
          );
          res.on('close', () =>
            finish({
              statusCode: res.statusCode ?? null,
              responseBody: null,
              error: 'the connection closed before the answer ended',
              retryAfter: undefined,
            }),
          );
        },
      );
      this.inFlight.add(req);
      const timer = setTimeout(() => req.destroy(new TimeoutError()), this.timeoutMs);
      req.on('error', (err) =>
        finish({
          statusCode: null,
          responseBody: null,
          error: err instanceof TimeoutError ? `no answer within ${this.timeoutMs / 1000} s` : describe(err),
          retryAfter: undefined,
        }),
      );
      req.end(body);
    });
  }

  /** Ends every request under way (the instance stops): each settles as a failed attempt. */
  abortAll(): void {
    for (const req of this.inFlight) req.destroy(new AbortedError('the instance stopped during the attempt'));
  }

  /** The request options of a URL, or why nothing is sent to it (parsed once per URL, not per attempt). */
  private target(raw: string): Target {
    let found = this.targets.get(raw);
    if (found) return found;
    found = parseTarget(raw, this.allowPrivate, this.httpAgent, this.httpsAgent);
    if (this.targets.size >= TARGET_CACHE_SIZE) this.targets.clear();
    this.targets.set(raw, found);
    return found;
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

class TimeoutError extends Error {}
class AbortedError extends Error {
  readonly code = 'ABORT_ERR';
}

function parseTarget(raw: string, allowPrivate: boolean, httpAgent: http.Agent, httpsAgent: https.Agent): Target {
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
  const secure = url.protocol === 'https:';
  return {
    client: secure ? https : http,
    options: {
      method: 'POST',
      protocol: url.protocol,
      hostname: host,
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      agent: secure ? httpsAgent : httpAgent,
    },
  };
}

/** A network error in words, without anything of the request (its headers carry signatures). */
function describe(err: Error & { code?: string }): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset by the endpoint';
    case 'ENOTFOUND':
      return 'the host does not resolve';
    case 'EBLOCKEDADDRESS':
      return err.message;
    case 'ABORT_ERR':
      return 'the instance stopped during the attempt';
    default:
      return err.code && /^[A-Z_]+$/.test(err.code)
        ? `network error (${err.code})`
        : `network error (${err.message.slice(0, 200)})`;
  }
}

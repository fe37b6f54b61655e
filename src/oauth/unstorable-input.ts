/**
 * Text PostgreSQL cannot store (NUL, lone surrogates) refused on the OAuth server's own endpoints.
 * oidc-provider runs before Fastify reads a body (it is mounted in a request hook and reads the
 * body itself), so the edge check of every other route (common/http/unstorable-text.ts) cannot see
 * its input: this is that check for its query strings and bodies, with the same
 * unstorableTextDetails, answered in OAuth's own formats. Without it, a NUL in client_name (POST
 * /oauth/register, no sign-in needed), a code, a token or a client_id reached the database and was
 * a 500 server_error with an error line.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQueryString } from 'node:querystring';
import { ErrorDetail } from '../common/errors/api-error';
import { nestingDepthDetails, unstorableTextDetails } from '../common/validation/schema-validator';
import { errorPage, PAGE_HEADERS } from './interaction.pages';
import { OAUTH_ROUTES } from './oauth-config';

/** oidc-provider's own limit on a body it reads (selective_body.js): a larger one it refuses itself, unread here. */
const OAUTH_BODY_LIMIT = 56 * 1024;

/**
 * Checks one request to the OAuth server: answers it with a 400 (and resolves undefined) when its
 * query string or body holds unstorable text; otherwise resolves with the request to hand to
 * oidc-provider: `req` itself, or, when its body was read to be checked, a copy that replays it.
 */
export async function checkOAuthInput(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): Promise<IncomingMessage | undefined> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const query = q < 0 ? undefined : parseQueryString(url.slice(q + 1));
  let found = query && unstorableIn(query);
  let forward = req;
  if (!found && hasReadableBody(req)) {
    const body = await readBody(req, OAUTH_BODY_LIMIT);
    if (body === undefined) {
      refuse(res, path, 'invalid_request', 'the request body is too large');
      return undefined;
    }
    found = unstorableIn(parseBody(req, body));
    forward = replay(req, body);
  }
  if (!found) return forward;
  const name = found.path.split('/')[1] ?? '';
  const problem = `${name || 'a parameter name'} ${found.message.replace(/^the name /, 'has a name that ')}`;
  refuse(res, path, path === OAUTH_ROUTES.registration ? 'invalid_client_metadata' : 'invalid_request', problem);
  return undefined;
}

function unstorableIn(value: unknown): ErrorDetail | undefined {
  if (value === undefined || nestingDepthDetails(value).length > 0) return undefined; // deeper: oidc-provider's to refuse
  return unstorableTextDetails(value)[0];
}

/** A body oidc-provider would read: a form post or JSON, of a size it takes (a larger one it refuses unread). */
function hasReadableBody(req: IncomingMessage): boolean {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return false;
  if (!/^application\/(?:x-www-form-urlencoded|json)\s*(?:;|$)/i.test(req.headers['content-type'] ?? '')) return false;
  const length = Number(req.headers['content-length'] ?? NaN);
  return !(length > OAUTH_BODY_LIMIT);
}

function parseBody(req: IncomingMessage, body: Buffer): unknown {
  const text = body.toString('utf8');
  if (!/json/i.test(req.headers['content-type'] ?? '')) return parseQueryString(text);
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // oidc-provider reports it
  }
}

/** The whole body, or undefined once it passes `limit` bytes (a chunked body sent without Content-Length). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.once('end', () => resolve(size <= limit ? Buffer.concat(chunks) : undefined));
    req.once('error', reject);
  });
}

/**
 * A copy of a request whose body was read, that gives the same body again to whoever reads it
 * (oidc-provider): same socket, method, URL and headers. Marked complete, as the parser marks the
 * original, so that its end does not read as an aborted request (which would close the connection).
 */
function replay(req: IncomingMessage, body: Buffer): IncomingMessage {
  const copy = new IncomingMessage(req.socket);
  copy.method = req.method;
  copy.url = req.url;
  copy.headers = req.headers;
  copy.rawHeaders = req.rawHeaders;
  copy.httpVersion = req.httpVersion;
  copy.httpVersionMajor = req.httpVersionMajor;
  copy.httpVersionMinor = req.httpVersionMinor;
  const original = (req as IncomingMessage & { originalUrl?: string }).originalUrl;
  if (original !== undefined) (copy as IncomingMessage & { originalUrl?: string }).originalUrl = original;
  copy.complete = true;
  copy.push(body);
  copy.push(null);
  return copy;
}

/**
 * A 400 in OAuth's format: the authorization endpoint is a page the person sees (our error page,
 * as oidc-provider's errors there); every other endpoint answers JSON (RFC 6749 §5.2, RFC 7591 §3.2.2).
 */
function refuse(res: ServerResponse, path: string, error: string, description: string): void {
  if (path === OAUTH_ROUTES.authorization || path.startsWith(`${OAUTH_ROUTES.authorization}/`)) {
    res.writeHead(400, { ...PAGE_HEADERS, 'Content-Type': 'text/html; charset=utf-8' });
    res.end(errorPage(`The app's request was refused (${error})`, `${description}.`));
    return;
  }
  res.writeHead(400, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify({ error, error_description: description }));
}

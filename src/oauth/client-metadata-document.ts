/**
 * Client ID Metadata Documents (CIMD, draft-ietf-oauth-client-id-metadata-document; the way MCP's
 * 2026-07-28 revision has clients identify themselves): a `client_id` that is an HTTPS URL names a
 * JSON document, served by the client, that holds its metadata. oidc-provider 8.8 (the version in
 * use, which runs on Node 20) does not know them, so the adapter resolves such ids with
 * fetchClientDocument and hands oidc-provider the metadata as if the client were registered.
 */
import { request } from 'node:https';
import { isIP } from 'node:net';
import { nestingDepthDetails, unstorableTextDetails } from '../common/validation/schema-validator';
import { hostOf, isBlockedAddress, MAX_URL_LENGTH, safeLookup } from '../webhooks/url-safety';
import { MAX_CLIENT_NAME_LENGTH } from './oauth-config';

/** Largest document read (bytes), and the longest the whole fetch may take. */
export const MAX_DOCUMENT_BYTES = 5 * 1024;
export const FETCH_TIMEOUT_MS = 5000;
/** How long a document is kept (its Cache-Control max-age, within these bounds; the default when it says nothing). */
export const MIN_CACHE_SECONDS = 60;
export const MAX_CACHE_SECONDS = 24 * 3600;
export const DEFAULT_CACHE_SECONDS = 600;

/** The metadata taken from a document; anything else in it is ignored. */
const KEPT = [
  'client_id',
  'client_name',
  'client_uri',
  'logo_uri',
  'tos_uri',
  'policy_uri',
  'contacts',
  'software_id',
  'software_version',
  'redirect_uris',
  'application_type',
] as const;

/** Why a document cannot be used: its message is the OAuth error_description (invalid_client). */
export class ClientDocumentError extends Error {}

/** Whether a client_id is meant as a metadata document's URL (an http one is refused with a reason, not "not found"). */
export function isClientDocumentId(id: string): boolean {
  return /^https?:\/\//i.test(id);
}

/** How the consent page names such a client: its name and where its document lives ("Example Agent (from agent.example)"). */
export function clientLabel(clientId: string, clientName: string | undefined | null): string {
  if (!isClientDocumentId(clientId)) return clientName ?? clientId;
  let host: string;
  try {
    host = new URL(clientId).host;
  } catch {
    return clientName ?? clientId;
  }
  return `${clientName ?? host} (from ${host})`;
}

/** The client_id as a URL, or why it cannot be one (the draft's rules: https, a path, no fragment, no credentials, no dot segments). */
function documentUrl(id: string): URL {
  const fail = (why: string) => {
    throw new ClientDocumentError(`client_id ${why}`);
  };
  if (id.length > MAX_URL_LENGTH) fail(`is a URL of more than ${MAX_URL_LENGTH} characters`);
  let url: URL | undefined;
  try {
    url = new URL(id);
  } catch {
    url = undefined;
  }
  if (!url) return fail('is not a valid URL') as never;
  if (url.protocol !== 'https:') fail('must be an https:// URL to be read as a client metadata document');
  if (url.username || url.password) fail('must not carry a user name or password');
  if (url.hash || id.includes('#')) fail('must not have a #fragment');
  // The path as written: the URL parser decodes %2e in dot segments and drops them, so the raw text is checked.
  const path = /^https:\/\/[^/\\?#]*(.*)$/is.exec(id)?.[1] ?? '';
  if (url.pathname === '/' || /(^|[/\\]|%2f|%5c)(\.|%2e){1,2}([/\\]|%2f|%5c|$)/i.test(path.split('?')[0]))
    fail('must have a path (like https://app.example/oauth/client.json) without . or .. segments, plain or as %2e');
  // A server that decodes %2f or %5c before it resolves the path would see segments here.
  if (/%2f|%5c/i.test(path.split('?')[0])) fail('must not have a / or \\ written as %2f or %5c in its path');
  // What is fetched is what the id says: a path the parser would rewrite (backslashes, tabs, other encodings) is refused.
  if (path !== url.pathname + url.search)
    fail(`must be written as it is fetched: ${JSON.stringify(url.pathname + url.search)}, not ${JSON.stringify(path)}`);
  return url;
}

/**
 * The client's metadata, fetched from its client_id, checked, and reduced to what oidc-provider is
 * given; with how long it may be kept (null: not at all, the server said no-store or no-cache).
 * Throws ClientDocumentError with the reason. Loopback, private and reserved addresses are refused
 * (the webhooks' SSRF guard) unless `allowPrivate` (tests only).
 */
export async function fetchClientDocument(
  id: string,
  { allowPrivate }: { allowPrivate: boolean },
): Promise<{ metadata: Record<string, unknown>; cacheSeconds: number | null }> {
  const url = documentUrl(id);
  const host = hostOf(url);
  if (!allowPrivate && isIP(host) && isBlockedAddress(host))
    throw new ClientDocumentError(
      `client_id names ${host}, a loopback, private, link-local or reserved address: client metadata documents are read from public addresses only`,
    );
  const { status, body, cacheControl } = await get(url, allowPrivate);
  if (status !== 200)
    throw new ClientDocumentError(`the client metadata document at ${id} answered HTTP ${status}, not 200`);
  let document: unknown;
  try {
    document = JSON.parse(body);
  } catch {
    throw new ClientDocumentError(`the client metadata document at ${id} is not JSON`);
  }
  return { metadata: checkDocument(id, document), cacheSeconds: cacheSecondsOf(cacheControl) };
}

/** How long a document may be kept according to its Cache-Control, within the bounds above; null for no-store/no-cache. */
export function cacheSecondsOf(cacheControl: string | undefined): number | null {
  const directives = (cacheControl ?? '').toLowerCase();
  if (/(^|[\s,])(no-store|no-cache)([\s,=]|$)/.test(directives)) return null;
  const maxAge = /(^|[\s,])max-age\s*=\s*"?(\d+)/.exec(directives);
  if (!maxAge) return DEFAULT_CACHE_SECONDS;
  return Math.min(MAX_CACHE_SECONDS, Math.max(MIN_CACHE_SECONDS, Number(maxAge[2])));
}

/** The document's metadata for oidc-provider, or ClientDocumentError: it must describe a public client at exactly this URL. */
export function checkDocument(id: string, document: unknown): Record<string, unknown> {
  const fail = (why: string) => {
    throw new ClientDocumentError(`the client metadata document at ${id} ${why}`);
  };
  if (!document || typeof document !== 'object' || Array.isArray(document))
    return fail('is not a JSON object') as never;
  const doc = document as Record<string, unknown>;
  if (nestingDepthDetails(doc, 8).length) fail('nests too deep');
  if (unstorableTextDetails(doc).length) fail('holds a NUL character or a lone surrogate');
  if (doc.client_id !== id) fail(`says client_id ${JSON.stringify(doc.client_id ?? null)}: it must be its own URL`);
  if ('client_secret' in doc || 'client_secret_expires_at' in doc)
    fail('holds a client_secret: only public clients may use a metadata document (no secret is ever shared)');
  const method = doc.token_endpoint_auth_method ?? 'none';
  if (method !== 'none')
    fail(
      `asks for token_endpoint_auth_method ${JSON.stringify(method)}: only public clients are accepted ("none", or leave it out), with PKCE`,
    );
  const uris = doc.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || !uris.every((u) => typeof u === 'string'))
    fail('has no redirect_uris (a non-empty array of URLs)');
  if (doc.client_name !== undefined) {
    if (typeof doc.client_name !== 'string') fail('has a client_name that is not a string');
    else if (doc.client_name.length > MAX_CLIENT_NAME_LENGTH)
      fail(`has a client_name of ${doc.client_name.length} characters; at most ${MAX_CLIENT_NAME_LENGTH} are accepted`);
  }
  const metadata: Record<string, unknown> = {};
  for (const key of KEPT) if (doc[key] !== undefined) metadata[key] = doc[key];
  const grants = Array.isArray(doc.grant_types) ? doc.grant_types : ['authorization_code', 'refresh_token'];
  return {
    ...metadata,
    token_endpoint_auth_method: 'none',
    response_types: ['code'],
    grant_types: grants.filter((g) => g === 'authorization_code' || g === 'refresh_token'),
  };
}

/** GET with the limits: no redirects followed, at most MAX_DOCUMENT_BYTES read, FETCH_TIMEOUT_MS for all of it. */
function get(url: URL, allowPrivate: boolean): Promise<{ status: number; body: string; cacheControl?: string }> {
  const where = `the client metadata document at ${url.href}`;
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const fail = (err: Error) => {
      settle(() =>
        reject(
          err instanceof ClientDocumentError
            ? err
            : new ClientDocumentError(`${where} could not be fetched (${err.message})`),
        ),
      );
      req.destroy();
    };
    const req = request(url, {
      method: 'GET',
      headers: { accept: 'application/json', 'user-agent': 'Formwork OAuth (client metadata document)' },
      lookup: safeLookup(allowPrivate),
      agent: false,
    });
    const timer = setTimeout(
      () => fail(new ClientDocumentError(`${where} did not arrive within ${FETCH_TIMEOUT_MS / 1000} s`)),
      FETCH_TIMEOUT_MS,
    );
    req.on('error', fail);
    req.on('response', (res) => {
      res.on('error', fail);
      const declared = Number(res.headers['content-length']);
      if (declared > MAX_DOCUMENT_BYTES)
        return fail(new ClientDocumentError(`${where} is ${declared} bytes; at most ${MAX_DOCUMENT_BYTES} are read`));
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_DOCUMENT_BYTES)
          return fail(
            new ClientDocumentError(
              `${where} is more than ${MAX_DOCUMENT_BYTES} bytes; at most ${MAX_DOCUMENT_BYTES} are read`,
            ),
          );
        chunks.push(chunk);
      });
      res.on('end', () =>
        settle(() =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            cacheControl: res.headers['cache-control'],
          }),
        ),
      );
    });
    req.end();
  });
}

/**
 * `fetchDocument` that remembers a refusal for REFUSAL_MEMORY_MS in this process: oidc-provider
 * looks a client up a second time after a failed lookup (to decide where an error may go), and a
 * document server that does not answer would otherwise be waited on twice.
 */
export function rememberingRefusals<T>(fetchDocument: (id: string) => Promise<T>): (id: string) => Promise<T> {
  const refused = new Map<string, { until: number; error: ClientDocumentError }>();
  return async (id) => {
    const now = Date.now();
    const known = refused.get(id);
    if (known && known.until > now) throw known.error;
    try {
      return await fetchDocument(id);
    } catch (err) {
      if (err instanceof ClientDocumentError) {
        if (refused.size >= 1000) refused.clear();
        refused.set(id, { until: now + REFUSAL_MEMORY_MS, error: err });
      }
      throw err;
    }
  };
}

const REFUSAL_MEMORY_MS = 10_000;

import type { ErrorDetail } from '../common/errors/api-error';

/**
 * The origins a workspace allows to embed (frame) its respondent pages. Each becomes a source of
 * the pages' CSP `frame-ancestors`, so only plain origins are taken: scheme, host and optional port,
 * https (http only for this machine: localhost, 127.0.0.1, [::1]), no path, query or wildcard.
 */

export const MAX_EMBED_ORIGINS = 20;

/** scheme://host[:port] with at most a trailing slash, as typed (new URL alone would drop a path or take "https:host"). */
const ORIGIN_SHAPE = /^https?:\/\/[^/?#@\s]+\/?$/i;
/** A DNS name (letters, digits, inner dashes; punycode for other scripts) or an IPv4 address. */
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const IPV6 = /^\[[0-9a-f:.]+\]$/;
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export const EMBED_ORIGIN_HINT =
  'Give origins like https://forms.example.com or https://example.com:8443 (scheme, host, optional port; no path or wildcard; http only for localhost).';

/** The origins, normalized (lower case, default port dropped, duplicates removed), or what is wrong with each bad one. */
export function normalizeEmbedOrigins(input: readonly string[]): { origins: string[]; details: ErrorDetail[] } {
  const origins: string[] = [];
  const details: ErrorDetail[] = [];
  input.forEach((raw, i) => {
    const problem = (message: string) => details.push({ path: `/embedOrigins/${i}`, message: `"${raw}" ${message}` });
    const text = raw.trim();
    if (text.includes('*')) return problem('is a wildcard; list each origin');
    if (!ORIGIN_SHAPE.test(text))
      return problem('must be an origin: https://host[:port], without a path, query or credentials');
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return problem('is not a valid origin');
    }
    if (!HOSTNAME.test(url.hostname) && !IPV6.test(url.hostname)) return problem('has a host name that is not valid');
    if (url.protocol === 'http:' && !LOCAL_HOSTS.has(url.hostname))
      return problem('must use https (http only for localhost)');
    if (!origins.includes(url.origin)) origins.push(url.origin);
  });
  if (origins.length > MAX_EMBED_ORIGINS)
    details.push({ path: '/embedOrigins', message: `at most ${MAX_EMBED_ORIGINS} origins` });
  return { origins, details };
}

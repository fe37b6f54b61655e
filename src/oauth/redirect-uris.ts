/** Redirect URI matching beyond exact equality. */

/** The loopback IP literals of RFC 8252 §7.3 (not "localhost", which §8.3 advises against). */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]']);

/**
 * Whether `requested` is an http loopback redirect URI that equals one of `registered` but for its
 * port and which loopback address it names (RFC 8252 §7.3: the app picks the port at the time of
 * the request, and listens on 127.0.0.1 or [::1], whichever its system gives it).
 */
export function loopbackRedirectMatches(registered: readonly string[], requested: string): boolean {
  const wanted = loopbackWithoutPort(requested);
  return wanted !== undefined && registered.some((uri) => loopbackWithoutPort(uri) === wanted);
}

function loopbackWithoutPort(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' || !LOOPBACK_HOSTS.has(url.hostname) || url.username || url.password) return undefined;
  url.port = '';
  url.hostname = '127.0.0.1';
  return url.href;
}

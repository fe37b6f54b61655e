/**
 * What the respondent pages send besides their body, as plain functions of plain values, so the
 * HTTP layer only copies the result onto its answer.
 */

/**
 * Pages are whole documents: nothing may load or run in them but the service's favicon, its one
 * script file and its style sheet (page-assets.ts; no inline script, no eval). Styles: the sheet
 * from this origin, and the few style attributes of the pages (the honeypot kept off-screen, say).
 */
const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; form-action 'self'; base-uri 'none'";

/**
 * The headers of a respondent page. No site may frame it (clickjacking) unless the form's
 * workspace lists the origins allowed to embed its forms: then exactly those may.
 * X-Frame-Options is for browsers without frame-ancestors; it cannot name a list, so it is only
 * sent when no site may frame the page.
 */
export function pageHeaders(
  embedOrigins: readonly string[],
  uploadOrigin?: string,
  challenge = false,
): Record<string, string> {
  // A page with a file question: its script asks the page's own origin for an upload target and sends the bytes there.
  // A page that may ask for the spam check (issue 47): the widget fetches its challenge here and works in a worker served here.
  const connect = [uploadOrigin || challenge ? "connect-src 'self'" : '', uploadOrigin ?? ''].filter(Boolean).join(' ');
  const csp = [PAGE_CSP, connect, challenge ? "worker-src 'self'" : ''].filter(Boolean).join('; ');
  const framing: Record<string, string> = embedOrigins.length
    ? { 'Content-Security-Policy': `${csp}; frame-ancestors ${embedOrigins.join(' ')}` }
    : { 'Content-Security-Policy': `${csp}; frame-ancestors 'none'`, 'X-Frame-Options': 'DENY' };
  return {
    ...framing,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
  };
}

/**
 * Whether an Accept header prefers application/json to text/html: a higher weight, or the same
 * weight and listed first. Each type takes the weight of its most specific matching range (RFC
 * 9110 §12.5.1). Browsers list text/html first, so they get the page; no Accept gets it too.
 */
export function prefersJson(accept: string | undefined): boolean {
  if (!accept) return false;
  const ranges = accept.split(',').map((part, index) => {
    const [range, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    return { range, q: q === undefined ? 1 : Number(q.slice(2)), index };
  });
  const weigh = (type: string) => {
    const match =
      ranges.find((r) => r.range === type) ??
      ranges.find((r) => r.range === `${type.split('/')[0]}/*`) ??
      ranges.find((r) => r.range === '*/*');
    return match && match.q > 0 && match.q <= 1 ? match : { q: 0, index: Infinity };
  };
  const json = weigh('application/json');
  const html = weigh('text/html');
  return json.q > 0 && (json.q > html.q || (json.q === html.q && json.index < html.index));
}

/**
 * Where a post to a respondent page came from (issue 45, 6.2), from what the browser says:
 * `Sec-Fetch-Site` (every current browser) and `Origin`. The pages send Referrer-Policy
 * no-referrer, under which a browser's form post says `Origin: null` even to its own origin, so
 * Sec-Fetch-Site decides when it is there.
 * - 'same-origin': the page's own (Sec-Fetch-Site same-origin, or Origin one of `own`);
 * - 'embedding': another site's, an origin the form's workspace lists as embedding its forms;
 * - 'cross-site': another site's, not listed: refused, nothing stored;
 * - 'unknown': neither header says (an old browser, curl, a user agent's own navigation):
 *   served, but it never replaces a resume cookie the browser already holds.
 */
export type PostOrigin = 'same-origin' | 'embedding' | 'cross-site' | 'unknown';

export function postOrigin(
  headers: Record<string, string | string[] | undefined>,
  own: readonly string[],
  embedOrigins: readonly string[],
): PostOrigin {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.trim().toLowerCase();
  const site = one(headers['sec-fetch-site']);
  const origin = one(headers.origin);
  if (site === 'same-origin') return 'same-origin';
  const known = origin !== undefined && origin !== '' && origin !== 'null';
  if (known && own.some((o) => o.toLowerCase() === origin)) return 'same-origin';
  if (known && embedOrigins.some((o) => o.toLowerCase() === origin)) return 'embedding';
  if (site === 'same-site' || site === 'cross-site' || known) return 'cross-site';
  return 'unknown';
}

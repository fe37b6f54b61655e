import type { onRequestHookHandler } from 'fastify';
import type { AppConfig } from '../config/config';

/**
 * The headers every /api/v1 response carries while v1 is deprecated: `Deprecation: @<epoch
 * seconds>` (RFC 9745), `Sunset: <HTTP-date>` (RFC 8594) and `Link` to the notice. Empty when
 * neither date is configured (nothing is deprecated, so nothing is sent).
 */
export function deprecationHeaders(
  config: Pick<AppConfig, 'apiV1Deprecation' | 'apiV1Sunset' | 'apiV1DeprecationLink'>,
): Record<string, string> {
  const headers: Record<string, string> = {};
  const links: string[] = [];
  if (config.apiV1Deprecation) {
    headers.Deprecation = `@${Math.floor(config.apiV1Deprecation.getTime() / 1000)}`;
    links.push(`<${config.apiV1DeprecationLink}>; rel="deprecation"; type="text/html"`);
  }
  if (config.apiV1Sunset) {
    headers.Sunset = config.apiV1Sunset.toUTCString();
    links.push(`<${config.apiV1DeprecationLink}>; rel="sunset"; type="text/html"`);
  }
  if (links.length) headers.Link = links.join(', ');
  return headers;
}

/**
 * A request hook that adds the deprecation headers to every /api/v1 answer, errors included (on
 * the Node.js response, so that an early refusal such as a 429 carries them too).
 */
export function apiV1VersionHeaders(config: AppConfig): onRequestHookHandler {
  const headers = Object.entries(deprecationHeaders(config));
  return (req, reply, done) => {
    const url = req.url;
    if (url.startsWith('/api/v1') && (url.length === 7 || url[7] === '/' || url[7] === '?')) {
      for (const [name, value] of headers) reply.raw.setHeader(name, value);
    }
    done();
  };
}

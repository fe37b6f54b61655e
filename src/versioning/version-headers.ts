import type { NextFunction, Request, Response } from 'express';
import type { AppConfig } from '../config/config';

/**
 * The headers every /api/v1 response carries while v1 is deprecated: `Deprecation: @<epoch
 * seconds>` (RFC 9745), `Sunset: <HTTP-date>` (RFC 8594) and `Link` to the notice. Empty when
 * neither date is configured (nothing is deprecated, so nothing is sent).
 */
export function deprecationHeaders(config: Pick<AppConfig, 'apiV1Deprecation' | 'apiV1Sunset' | 'apiV1DeprecationLink'>): Record<string, string> {
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

/** Express middleware (mounted on /api/v1) that adds the deprecation headers, errors included; a no-op when none are configured. */
export function apiV1VersionHeaders(config: AppConfig) {
  const headers = Object.entries(deprecationHeaders(config));
  return (_req: Request, res: Response, next: NextFunction) => {
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}

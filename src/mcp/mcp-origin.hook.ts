import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { ApiError } from '../common/errors/api-error';
import type { AppConfig } from '../config/config';

/**
 * The Streamable HTTP transport's DNS rebinding defence, on /mcp only and before authentication:
 * a request from a browser page of another origin (a page that rebound a name to this service)
 * is refused with 403 origin_not_allowed. Allowed: PUBLIC_URL's origin and MCP_ALLOWED_ORIGINS; when
 * PUBLIC_URL is a loopback address, every loopback origin too (localhost, 127.0.0.1 and [::1], any
 * port, as MCP's DNS rebinding rule has it: a page served from this machine is not a rebound name).
 * A request without Origin (an MCP client that is not a browser) is served.
 * Fastify has routed the request when this hook runs: the check reads the route the request
 * reached, not its raw path, so no spelling of the path (percent-encoded like /%6dcp, a trailing
 * slash, a query string) reaches /mcp past it.
 */
export function mcpOriginCheck(config: AppConfig): onRequestHookHandler {
  const allowed = new Set([new URL(config.publicUrl).origin, ...config.mcpAllowedOrigins]);
  const anyLoopback = isLoopback(new URL(config.publicUrl).hostname);
  return (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const origin = req.headers.origin;
    if (origin === undefined) return done();
    if (req.routeOptions.url !== MCP_ROUTE) return done();
    const url = parse(origin);
    if (url && allowed.has(url.origin)) return done();
    if (anyLoopback && url && /^https?:$/.test(url.protocol) && isLoopback(url.hostname)) return done();
    done(
      new ApiError('origin_not_allowed', {
        message: `Requests from the origin ${JSON.stringify(origin.slice(0, 200))} are not allowed on /mcp.`,
      }),
    );
  };
}

/** The route of McpController, as Fastify names it. */
const MCP_ROUTE = '/mcp';

/** The loopback names of MCP's rule: localhost, 127.0.0.1 and [::1] (as URL.hostname writes them). */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
function isLoopback(hostname: string): boolean {
  return LOOPBACK.has(hostname.toLowerCase());
}

/** An Origin header as a URL (its origin as URL.origin writes it: lower-case host, no default port); undefined when it is not one. */
function parse(origin: string): URL | undefined {
  try {
    return new URL(origin);
  } catch {
    return undefined;
  }
}

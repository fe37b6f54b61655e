import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { ApiError } from '../common/errors/api-error';
import type { AppConfig } from '../config/config';

/**
 * The Streamable HTTP transport's DNS rebinding defence, on /mcp only and before authentication:
 * a request from a browser page of another origin (a page that rebound a name to this service)
 * is refused with 403 origin_not_allowed. Allowed: PUBLIC_URL's origin and MCP_ALLOWED_ORIGINS.
 * A request without Origin (an MCP client that is not a browser) is served.
 * Fastify has routed the request when this hook runs: the check reads the route the request
 * reached, not its raw path, so no spelling of the path (percent-encoded like /%6dcp, a trailing
 * slash, a query string) reaches /mcp past it.
 */
export function mcpOriginCheck(config: AppConfig): onRequestHookHandler {
  const allowed = new Set([new URL(config.publicUrl).origin, ...config.mcpAllowedOrigins]);
  return (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const origin = req.headers.origin;
    if (origin === undefined) return done();
    if (req.routeOptions.url !== MCP_ROUTE) return done();
    if (allowed.has(normalise(origin))) return done();
    done(
      new ApiError('origin_not_allowed', {
        message: `Requests from the origin ${JSON.stringify(origin.slice(0, 200))} are not allowed on /mcp.`,
      }),
    );
  };
}

/** The route of McpController, as Fastify names it. */
const MCP_ROUTE = '/mcp';

/** An Origin header as URL.origin writes it (lower-case host, no default port); '' when it is not one. */
function normalise(origin: string): string {
  try {
    return new URL(origin).origin;
  } catch {
    return '';
  }
}

import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { ApiError } from '../common/errors/api-error';
import { pathOf } from '../common/errors/api-exception.filter';
import type { AppConfig } from '../config/config';

/**
 * The Streamable HTTP transport's DNS rebinding defence, on /mcp only and before authentication:
 * a request from a browser page of another origin (a page that rebound a name to this service)
 * is refused with 403 origin_not_allowed. Allowed: PUBLIC_URL's origin and MCP_ALLOWED_ORIGINS.
 * A request without Origin (an MCP client that is not a browser) is served.
 */
export function mcpOriginCheck(config: AppConfig): onRequestHookHandler {
  const allowed = new Set([new URL(config.publicUrl).origin, ...config.mcpAllowedOrigins]);
  return (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const origin = req.headers.origin;
    if (origin === undefined) return done();
    const path = pathOf(req.url);
    if (path !== '/mcp' && path !== '/mcp/') return done();
    if (allowed.has(normalise(origin))) return done();
    done(
      new ApiError('origin_not_allowed', {
        message: `Requests from the origin ${JSON.stringify(origin.slice(0, 200))} are not allowed on /mcp.`,
      }),
    );
  };
}

/** An Origin header as URL.origin writes it (lower-case host, no default port); '' when it is not one. */
function normalise(origin: string): string {
  try {
    return new URL(origin).origin;
  } catch {
    return '';
  }
}

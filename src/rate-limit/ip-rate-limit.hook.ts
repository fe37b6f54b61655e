/** The IP budget, spent in an early request hook before any body is read. */
import type { FastifyReply, FastifyRequest, onRequestHookHandler, onSendHookHandler } from 'fastify';
import { RateLimitService } from './rate-limit.service';

/** Paths the load balancer polls: they must not spend (or be refused by) a client's budget. */
const EXEMPT = new Set(['/healthz', '/readyz']);

/**
 * An early request hook (before any body is read or route runs): the client IP's budget
 * (240/min). The IP is Fastify's request.ip: the peer address, or the X-Forwarded-For entry that
 * TRUST_PROXY allows (an address the client wrote itself is never reached when the hop count is
 * right). The headers go on the Node.js response, so that every answer carries them, the OAuth
 * server's included.
 *
 * A request with a bearer credential to an API route (/api/..., /mcp) is not counted here: once the
 * credential is verified, CredentialRateLimitGuard counts the IP's and the credential's budgets in
 * one call (sent to Redis together). If the request ends before that guard (401, a refused body),
 * `settleDeferredIpBudget` counts the IP budget alone as the answer goes out.
 */
export function ipRateLimit(rateLimit: RateLimitService): onRequestHookHandler {
  return (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const url = req.url;
    const q = url.indexOf('?');
    if (EXEMPT.has(q < 0 ? url : url.slice(0, q))) return done();
    if (hasBearer(req.headers.authorization) && countsBothLater(req.routeOptions.url)) {
      req.rateLimitDeferred = true;
      return done();
    }
    rateLimit.consume('ip', req.ip ?? 'unknown').then(
      (budget) => {
        if (!budget) return done(); // budgets turned off
        req.ipBudget = budget;
        rateLimit.writeHeaders(reply.raw, [budget]);
        done(budget.exceeded ? rateLimit.rateLimited(budget) : undefined);
      },
      (err: Error) => done(err),
    );
  };
}

/**
 * For a deferred request that was answered before its budgets were counted (a 401, a body refused
 * with 413 or 415, an outage): counts the IP budget alone and, when it is spent, answers the 429
 * the early hook would have answered instead.
 */
export function settleDeferredIpBudget(rateLimit: RateLimitService): onSendHookHandler {
  // Callback style: every answer passes here, and most leave at once.
  return (req, reply, payload, done) => {
    if (!req.rateLimitDeferred) return done(null, payload);
    req.rateLimitDeferred = false;
    rateLimit.consume('ip', req.ip ?? 'unknown').then((budget) => {
      if (!budget) return done(null, payload);
      rateLimit.writeHeaders(reply.raw, [budget]);
      if (!budget.exceeded) return done(null, payload);
      const error = rateLimit.rateLimited(budget);
      reply.removeHeader('WWW-Authenticate');
      reply
        .code(error.status)
        .headers(error.headers ?? {})
        .type('application/json; charset=utf-8');
      done(null, JSON.stringify(error.toJSON(req.id)));
    }, done);
  };
}

/** Routes whose guard counts both budgets once the credential is known: the tools API and the MCP connector. */
function countsBothLater(route: string | undefined): boolean {
  return route !== undefined && (route.startsWith('/api/') || route === '/mcp');
}

function hasBearer(header: string | undefined): boolean {
  return typeof header === 'string' && header.length > 7 && header.slice(0, 7).toLowerCase() === 'bearer ';
}

import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { RateLimitService } from './rate-limit.service';

/** Paths the load balancer polls: they must not spend (or be refused by) a client's budget. */
const EXEMPT = new Set(['/healthz', '/readyz']);

/**
 * An early request hook (before any body is read or route runs): the client IP's budget
 * (240/min). The IP is Fastify's request.ip: the peer address, or the X-Forwarded-For entry that
 * TRUST_PROXY allows (an address the client wrote itself is never reached when the hop count is
 * right). The headers go on the Node.js response, so that every answer carries them, the OAuth
 * server's included.
 */
export function ipRateLimit(rateLimit: RateLimitService): onRequestHookHandler {
  return (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const url = req.url;
    const q = url.indexOf('?');
    if (EXEMPT.has(q < 0 ? url : url.slice(0, q))) return done();
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

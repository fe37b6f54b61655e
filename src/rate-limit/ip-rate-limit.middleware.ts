import type { NextFunction, Request, Response } from 'express';
import { RateLimitService } from './rate-limit.service';

/** Paths the load balancer polls: they must not spend (or be refused by) a client's budget. */
const EXEMPT = new Set(['/healthz', '/readyz']);

/**
 * First step of every request: the client IP's budget (240/min), before any parsing or lookup.
 * The IP is Express's req.ip: the peer address, or the X-Forwarded-For entry that TRUST_PROXY
 * allows (an address the client wrote itself is never reached when the hop count is right).
 */
export function ipRateLimit(rateLimit: RateLimitService) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (EXEMPT.has(req.path)) return next();
    rateLimit
      .consume('ip', req.ip ?? 'unknown')
      .then((budget) => {
        if (!budget) return next(); // budgets turned off
        req.ipBudget = budget;
        rateLimit.writeHeaders(res, [budget]);
        next(budget.exceeded ? rateLimit.rateLimited(budget) : undefined);
      })
      .catch(next);
  };
}

import type { NextFunction, Request, Response } from 'express';
import { RateLimitService } from './rate-limit.service';

/** Paths the load balancer polls: they must not spend (or be refused by) a client's budget. */
const EXEMPT = new Set(['/healthz', '/readyz']);

/** First step of every request: the client IP's budget (240/min), before any parsing or lookup. */
export function ipRateLimit(rateLimit: RateLimitService) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (EXEMPT.has(req.path)) return next();
    rateLimit
      .consume('ip', req.ip ?? 'unknown')
      .then((budget) => {
        req.ipBudget = budget;
        rateLimit.writeHeaders(res, [budget]);
        next(budget.exceeded ? rateLimit.rateLimited(budget) : undefined);
      })
      .catch(next);
  };
}

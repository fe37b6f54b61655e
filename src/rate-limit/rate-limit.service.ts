import { Inject, Injectable } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import type { Response } from 'express';
import { APP_CONFIG, AppConfig } from '../config/config';
import { ApiError } from '../common/errors/api-error';

export type BudgetName = 'ip' | 'credential';

export interface BudgetState {
  name: BudgetName;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
  exceeded: boolean;
}

const WINDOW_MS = 60_000;

/**
 * The two request budgets: per client IP (every request) and per credential (authenticated
 * requests; an API token, or an OAuth grant so that a refresh does not reset it). Counters live
 * in the ThrottlerStorage given to the module: in-process now, Redis when instances share them.
 */
@Injectable()
export class RateLimitService {
  constructor(
    @Inject(ThrottlerStorage) private readonly storage: ThrottlerStorage,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async consume(name: BudgetName, key: string): Promise<BudgetState> {
    const limit = name === 'ip' ? this.config.rateLimit.ipPerMin : this.config.rateLimit.credentialPerMin;
    const record = await this.storage.increment(`rl:${name}:${key}`, WINDOW_MS, limit, 0, name);
    return {
      name,
      limit,
      remaining: Math.max(0, limit - record.totalHits),
      resetSeconds: record.timeToExpire,
      exceeded: record.totalHits > limit,
    };
  }

  /**
   * Writes the headers of the tighter budget (fewer requests left) on the response:
   * RateLimit-* (IETF draft) and the same three values as X-RateLimit-*.
   */
  writeHeaders(res: Response, budgets: Array<BudgetState | undefined>): void {
    const tightest = tighter(budgets);
    if (!tightest) return;
    const limit = String(tightest.limit);
    const remaining = String(tightest.remaining);
    const reset = String(tightest.resetSeconds);
    res.setHeader('RateLimit-Limit', limit);
    res.setHeader('RateLimit-Remaining', remaining);
    res.setHeader('RateLimit-Reset', reset);
    res.setHeader('X-RateLimit-Limit', limit);
    res.setHeader('X-RateLimit-Remaining', remaining);
    res.setHeader('X-RateLimit-Reset', reset);
  }

  rateLimited(budget: BudgetState): ApiError {
    const who = budget.name === 'ip' ? 'this client address' : 'this credential';
    return new ApiError('rate_limited', {
      message: `More than ${budget.limit} requests in a minute from ${who}.`,
      headers: { 'Retry-After': String(budget.resetSeconds) },
    });
  }
}

export function tighter(budgets: Array<BudgetState | undefined>): BudgetState | undefined {
  let best: BudgetState | undefined;
  for (const b of budgets) {
    if (!b) continue;
    if (!best || b.remaining < best.remaining || (b.remaining === best.remaining && b.resetSeconds > best.resetSeconds)) best = b;
  }
  return best;
}

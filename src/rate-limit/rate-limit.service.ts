/** The two request budgets (per IP, per credential): spending them, and the RateLimit headers of every answer. */
import { Inject, Injectable } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import { APP_CONFIG, AppConfig } from '../config/config';
import { ApiError } from '../common/errors/api-error';
import type { BudgetStorage, ThrottlerStorageRecord } from './budget-storage';
import { FailOpenThrottlerStorage } from './fail-open.storage';
import { metrics } from '../observability/metrics';

export type BudgetName = 'ip' | 'credential';

export interface BudgetState {
  name: BudgetName;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
  exceeded: boolean;
}

export interface RateLimitHealth {
  /** shared: in Redis, by every instance; per instance: in-process (no REDIS_URL, or Redis down); off: RATE_LIMIT_ENABLED=false. */
  counting: 'shared' | 'per instance' | 'off';
  redis: 'ok' | 'unreachable' | 'not configured';
  unreachableSince?: string;
}

/** Where the headers go: the Node.js response, so that every answer carries them (the OAuth server's too). */
export interface HeaderTarget {
  setHeader(name: string, value: string): unknown;
}

const WINDOW_MS = 60_000;

/** Policy names in the RateLimit-Policy and RateLimit fields. */
const POLICY_NAMES: Record<BudgetName, string> = { ip: 'ip', credential: 'cred' };

/**
 * The two request budgets: per client IP (every request) and per credential (authenticated
 * requests; an API token, or an OAuth grant so that a refresh does not reset it). Counters live
 * in the ThrottlerStorage given to the module: Redis when REDIS_URL is set (shared by every
 * instance, per-instance while it is down), in-process otherwise.
 */
@Injectable()
export class RateLimitService {
  constructor(
    @Inject(ThrottlerStorage) private readonly storage: BudgetStorage,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** The budget's state after this request, or undefined when budgets are turned off (RATE_LIMIT_ENABLED=false). */
  async consume(name: BudgetName, key: string): Promise<BudgetState | undefined> {
    if (!this.config.rateLimit.enabled) return undefined;
    const limit = this.limitOf(name);
    return state(name, limit, await this.storage.increment(`rl:${name}:${key}`, WINDOW_MS, limit, 0, name));
  }

  /**
   * A link used without a bearer (an export's, a file's) spends one request of the budget of the
   * credential that made it, so links cannot go around that credential's rate limit; the headers
   * show the tighter of it and the IP's (spent by the early hook). Throws 429 when it is exceeded.
   */
  async spendForLink(ipBudget: BudgetState | undefined, credentialKey: string, res: HeaderTarget): Promise<void> {
    const budget = await this.consume('credential', credentialKey);
    if (!budget) return;
    this.writeHeaders(res, [ipBudget, budget]);
    if (budget.exceeded) throw this.rateLimited(budget);
  }

  /**
   * Both budgets of an authenticated request in one call to the store (sent to Redis together): the
   * IP's first, then the credential's only when the IP's is not exceeded, so that an IP refusal
   * does not spend the credential's budget (it is then missing from the result). Undefined when
   * budgets are turned off.
   */
  async consumeBoth(ip: string, credentialKey: string): Promise<BudgetState[] | undefined> {
    if (!this.config.rateLimit.enabled) return undefined;
    const [ipLimit, credentialLimit] = [this.limitOf('ip'), this.limitOf('credential')];
    const pair = await this.storage.incrementPair(
      `rl:ip:${ip}`,
      `rl:credential:${credentialKey}`,
      WINDOW_MS,
      ipLimit,
      credentialLimit,
    );
    const ipState = state('ip', ipLimit, pair.first);
    return pair.second ? [ipState, state('credential', credentialLimit, pair.second)] : [ipState];
  }

  /**
   * Counts one hit on `first` and, unless that passed its limit, on `second`, in one-minute windows
   * of the budgets' store (Redis, shared by every instance, when configured: one round trip);
   * whether either passed its limit. Counted even when the request budgets are turned off: other
   * rules (the spam gate) use it.
   */
  async passesEither(first: [key: string, limit: number], second: [key: string, limit: number]): Promise<boolean> {
    const pair = await this.storage.incrementPair(`rl:${first[0]}`, `rl:${second[0]}`, WINDOW_MS, first[1], second[1]);
    return !pair.second || pair.first.isBlocked || pair.second.isBlocked;
  }

  private limitOf(name: BudgetName): number {
    return name === 'ip' ? this.config.rateLimit.ipPerMin : this.config.rateLimit.credentialPerMin;
  }

  /**
   * Writes the headers of the tighter budget (fewer requests left) on the response: RateLimit-*
   * (IETF draft -06 and earlier) and the same three values as X-RateLimit-*; and every budget as
   * one item of RateLimit-Policy and RateLimit (the draft's structured fields).
   */
  writeHeaders(res: HeaderTarget, budgets: Array<BudgetState | undefined>): void {
    const tightest = tighter(budgets);
    if (!tightest) return;
    const known = budgets.filter((b): b is BudgetState => b !== undefined);
    res.setHeader(
      'RateLimit-Policy',
      known.map((b) => `"${POLICY_NAMES[b.name]}";q=${b.limit};w=${WINDOW_MS / 1000}`).join(', '),
    );
    res.setHeader(
      'RateLimit',
      known.map((b) => `"${POLICY_NAMES[b.name]}";r=${b.remaining};t=${b.resetSeconds}`).join(', '),
    );
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

  /** Where budgets are counted, checking Redis now when it is configured (for /readyz). */
  async storeHealth(): Promise<RateLimitHealth> {
    if (!this.config.rateLimit.enabled) return { counting: 'off', redis: 'not configured' };
    if (!(this.storage instanceof FailOpenThrottlerStorage))
      return { counting: 'per instance', redis: 'not configured' };
    await this.storage.probe();
    const health = this.storage.health();
    return health.state === 'ok'
      ? { counting: 'shared', redis: 'ok' }
      : { counting: 'per instance', redis: 'unreachable', unreachableSince: health.since };
  }

  rateLimited(budget: BudgetState): ApiError {
    metrics.rateLimitRefusals.inc({ budget: budget.name });
    const who = budget.name === 'ip' ? 'this client address' : 'this credential';
    return new ApiError('rate_limited', {
      message: `More than ${budget.limit} requests in a minute from ${who}.`,
      headers: { 'Retry-After': String(budget.resetSeconds) },
    });
  }
}

function state(name: BudgetName, limit: number, record: ThrottlerStorageRecord): BudgetState {
  return {
    name,
    limit,
    remaining: Math.max(0, limit - record.totalHits),
    resetSeconds: record.timeToExpire,
    exceeded: record.totalHits > limit,
  };
}

export function tighter(budgets: Array<BudgetState | undefined>): BudgetState | undefined {
  let best: BudgetState | undefined;
  for (const b of budgets) {
    if (!b) continue;
    if (!best || b.remaining < best.remaining || (b.remaining === best.remaining && b.resetSeconds > best.resetSeconds))
      best = b;
  }
  return best;
}

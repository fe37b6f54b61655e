/** The storage contract of the request budgets: a hit on one key, or on two budgets at once. */
import type { ThrottlerStorage } from '@nestjs/throttler';

export type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/** Both budgets of one request, counted together: `second` is missing when `first` refused it (and was not spent). */
export interface PairRecord {
  first: ThrottlerStorageRecord;
  second?: ThrottlerStorageRecord;
}

/**
 * @nestjs/throttler's storage contract (one key per hit) plus the hit on two budgets at once, sent
 * together to Redis: when the first refuses, the second is not spent (an IP refusal does not spend
 * the credential's budget).
 */
export interface BudgetStorage extends ThrottlerStorage {
  incrementPair(
    firstKey: string,
    secondKey: string,
    ttl: number,
    firstLimit: number,
    secondLimit: number,
  ): Promise<PairRecord>;
}

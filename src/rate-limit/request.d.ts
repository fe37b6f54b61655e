/** The fields the IP budget's hook puts on a Fastify request for the credential's guard. */
import type { BudgetState } from './rate-limit.service';

declare module 'fastify' {
  interface FastifyRequest {
    /** The IP budget's state, set by the IP rate-limit hook (headers are recomputed from it). */
    ipBudget?: BudgetState;
    /** True while the IP budget waits to be counted with the credential's (ip-rate-limit.hook.ts). */
    rateLimitDeferred?: boolean;
  }
}

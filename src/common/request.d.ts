import type { Principal } from './access/principal';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling, set by the authentication guard. */
    principal?: Principal;
    /** The IP budget's state, set by the IP rate-limit hook (headers are recomputed from it). */
    ipBudget?: import('../rate-limit/rate-limit.service').BudgetState;
    /** True while the IP budget waits to be counted with the credential's (rate-limit/ip-rate-limit.hook.ts). */
    rateLimitDeferred?: boolean;
  }
}

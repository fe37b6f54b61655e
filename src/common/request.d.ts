import type { Principal } from './access/principal';
import type { ToolRequirement } from './access/tool-requirement';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling, set by the authentication guard. */
    principal?: Principal;
    /** What the called tool needs, set when the tool is resolved. */
    toolRequirement?: ToolRequirement;
    /** The IP budget's state, set by the IP rate-limit hook (headers are recomputed from it). */
    ipBudget?: import('../rate-limit/rate-limit.service').BudgetState;
  }
}

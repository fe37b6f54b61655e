import type { Principal } from './access/principal';
import type { ToolRequirement } from './access/tool-requirement';

declare module 'express-serve-static-core' {
  interface Request {
    /** Request id, also sent back as X-Request-Id. */
    id: string;
    /** Who is calling, set by the authentication guard. */
    principal?: Principal;
    /** What the called tool needs, set when the tool is resolved. */
    toolRequirement?: ToolRequirement;
    /** A body that could not be parsed, reported at the arguments step. */
    bodyError?: import('./errors/api-error').ApiError;
    /** The IP budget's state, set by the IP rate-limit middleware (headers are recomputed from it). */
    ipBudget?: import('../rate-limit/rate-limit.service').BudgetState;
  }
}

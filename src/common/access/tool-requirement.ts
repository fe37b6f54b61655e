/** What calling a tool takes (scope, plan, role), as the access checks read it. */
import type { Role, Scope } from './roles';

/** The plan a tool needs: Pro (403 pro_required on Free), or any plan. */
export type RequiredPlan = 'pro' | 'any';

/** What calling a tool takes; derived from its declaration (src/tools/tool.decorator.ts) and checked by the access guard. */
export interface ToolRequirement {
  name: string;
  scope: Scope;
  plan: RequiredPlan;
  minRole: Role;
}

import type { Role, Scope } from './roles';

/** What calling a tool takes; declared on the tool and checked by the access guard. */
export interface ToolRequirement {
  name: string;
  scope: Scope;
  /** Write tools need a Pro workspace. */
  write: boolean;
  minRole: Role;
}

/** The access checks of a tool call (scope, plan, role), for the guard and for listing what a caller may call. */
import { ApiError } from '../errors/api-error';
import type { Principal } from './principal';
import { roleAtLeast } from './roles';
import type { ToolRequirement } from './tool-requirement';

/**
 * The checks a tool call passes after authentication, in the order the design fixes:
 * scope (403 insufficient_scope), plan (403 pro_required), role (403 forbidden).
 */
export function assertMayCall(principal: Principal, tool: ToolRequirement, resourceMetadataUrl: string): void {
  if (!principal.scopes.includes(tool.scope)) {
    throw new ApiError('insufficient_scope', {
      message: `The tool ${tool.name} needs the scope ${tool.scope}, which this credential was not granted.`,
      hint: `Use a credential granted ${tool.scope} (for OAuth, authorize again asking for it).`,
      headers: {
        'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${tool.scope}", resource_metadata="${resourceMetadataUrl}"`,
      },
    });
  }
  if (!onRequiredPlan(principal, tool)) {
    throw new ApiError('pro_required', {
      message: `The tool ${tool.name} changes data and needs a Pro workspace; "${principal.workspace.slug}" is on Free.`,
    });
  }
  if (!roleAtLeast(principal.role, tool.minRole)) {
    throw new ApiError('forbidden', {
      message: `The tool ${tool.name} needs the role ${tool.minRole} or higher; this credential acts as ${principal.role}.`,
    });
  }
}

/** Whether a call would pass the checks above (used to list the tools a caller may call). */
export function mayCall(principal: Principal, tool: ToolRequirement): boolean {
  return (
    principal.scopes.includes(tool.scope) &&
    onRequiredPlan(principal, tool) &&
    roleAtLeast(principal.role, tool.minRole)
  );
}

function onRequiredPlan(principal: Principal, tool: ToolRequirement): boolean {
  return tool.plan === 'any' || principal.workspace.plan === tool.plan;
}

import { applyDecorators, Injectable, SetMetadata } from '@nestjs/common';
import type { Static, TSchema } from '@sinclair/typebox';
import type { Principal } from '../common/access/principal';
import type { Role, Scope } from '../common/access/roles';

/** MCP tool annotations (hints for agents; not enforced). */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** Everything a tool declares about itself. The schemas are the single source for validation and docs. */
export interface ToolDefinition<I extends TSchema = TSchema, O extends TSchema = TSchema> {
  name: string;
  title: string;
  description: string;
  scope: Scope;
  /** Write tools need a Pro workspace. */
  write: boolean;
  minRole: Role;
  input: I;
  output: O;
  annotations?: ToolAnnotations;
}

export interface ToolContext {
  principal: Principal;
  requestId: string;
}

export interface ToolHandler<I extends TSchema = TSchema, O extends TSchema = TSchema> {
  run(input: Static<I>, ctx: ToolContext): Promise<Static<O>>;
}

export const TOOL_METADATA = 'formwork:tool';

/** Declares a tool: an injectable class with `run(input, ctx)`, found by the registry at boot. */
export function Tool<I extends TSchema, O extends TSchema>(definition: ToolDefinition<I, O>) {
  return applyDecorators(Injectable(), SetMetadata(TOOL_METADATA, definition));
}

/**
 * The @Tool decorator and what a tool is: its declaration, and the definition derived from it once
 * here (what follows from a tool being a write: its plan, its default role, its annotations).
 */
import { applyDecorators, Injectable, SetMetadata } from '@nestjs/common';
import type { Static, TSchema } from '@sinclair/typebox';
import type { Principal } from '../common/access/principal';
import type { Role, Scope } from '../common/access/roles';
import type { AppView } from '../apps/view-uris';
import type { RequiredPlan } from '../common/access/tool-requirement';

/** MCP tool annotations (hints for agents; not enforced). */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** What a tool file declares. The schemas are the single source for validation and docs. */
export interface ToolDeclaration<I extends TSchema = TSchema, O extends TSchema = TSchema> {
  name: string;
  title: string;
  description: string;
  scope: Scope;
  /** Whether the tool changes data: it decides the plan, the default role and the annotations (below). */
  write: boolean;
  /** Only where it differs from the default: editor for a write, viewer for a read. */
  minRole?: Role;
  input: I;
  output: O;
  /** Only the hints that differ from the defaults below (readOnlyHint always says `!write`). */
  annotations?: Partial<Omit<ToolAnnotations, 'readOnlyHint'>>;
  /**
   * MCP Apps (io.modelcontextprotocol/ui): the view a host opens beside the tool's result, and who
   * may call the tool (default both; ["app"]: only a view, the host keeps it from the model).
   */
  ui?: { resourceUri?: AppView; visibility?: Array<'model' | 'app'> };
  /** The largest request body a call takes, in bytes, where more than JSON_BODY_LIMIT (1 MB). */
  bodyLimit?: number;
}

/** A tool as the registry, the access checks and the discovery documents know it: nothing left to default. */
export interface ToolDefinition<I extends TSchema = TSchema, O extends TSchema = TSchema> extends ToolDeclaration<
  I,
  O
> {
  minRole: Role;
  plan: RequiredPlan;
  annotations: ToolAnnotations;
}

/**
 * Defaults by kind of tool. A write needs a Pro workspace and the editor role, and by default
 * adds or changes data without destroying any, and not idempotently; a read works on every plan
 * for any member, and reading twice is the same as once. Neither reaches beyond Formwork unless
 * it says so (openWorldHint: webhook tools that send to a URL).
 */
export const TOOL_DEFAULTS = {
  write: {
    plan: 'pro',
    minRole: 'editor',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
  read: {
    plan: 'any',
    minRole: 'viewer',
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  },
} as const;

/** The full definition of a declared tool (the one place the defaults above are applied). */
export function defineTool<I extends TSchema, O extends TSchema>(
  declaration: ToolDeclaration<I, O>,
): ToolDefinition<I, O> {
  const kind = TOOL_DEFAULTS[declaration.write ? 'write' : 'read'];
  return {
    ...declaration,
    minRole: declaration.minRole ?? kind.minRole,
    plan: kind.plan,
    annotations: { ...kind.annotations, ...declaration.annotations },
  };
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
export function Tool<I extends TSchema, O extends TSchema>(declaration: ToolDeclaration<I, O>) {
  return applyDecorators(Injectable(), SetMetadata(TOOL_METADATA, defineTool(declaration)));
}

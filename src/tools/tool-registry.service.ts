/** The registry of every tool, found at boot, and what GET /api/v1/tools publishes of each. */
import { Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { ToolRequirement } from '../common/access/tool-requirement';
import { publishedOutput } from '../common/validation/published-output';
import { gatherDefinitions } from '../common/validation/schema-definitions';
import { createAjv, ValidateFunction } from '../common/validation/schema-validator';
import type { Principal } from '../common/access/principal';
import { TOOL_METADATA, ToolAnnotations, ToolDefinition, ToolHandler } from './tool.decorator';
import { callableBy, compactToolList } from './tool-list';

export interface RegisteredTool {
  definition: ToolDefinition;
  /** The input schema as validated and published: plain JSON, shared definitions gathered at its root. */
  input: Record<string, unknown>;
  requirement: ToolRequirement;
  handler: ToolHandler;
  validate: ValidateFunction;
}

/** What GET /api/v1/tools publishes per tool (the same schema objects validation uses). */
export interface ToolDescriptor {
  name: string;
  title: string;
  description: string;
  inputSchema: object;
  /** Left out of a list where an earlier tool has the same (tool-list.ts). */
  outputSchema?: object;
  annotations: ToolAnnotations;
}

/**
 * Every tool of the service, found at boot among the providers marked @Tool: adding a tool is
 * adding its class to a module. Input validators are compiled once here.
 */
@Injectable()
export class ToolRegistry implements OnModuleInit {
  private readonly tools = new Map<string, RegisteredTool>();
  private descriptors: ToolDescriptor[] = [];
  /** The compacted lists sent so far, by the names they hold (a few sets of tools: by scope, plan and role). */
  private readonly lists = new Map<string, ToolDescriptor[]>();

  constructor(private readonly discovery: DiscoveryService) {}

  onModuleInit() {
    const ajv = createAjv();
    for (const wrapper of this.discovery.getProviders()) {
      const { metatype, instance } = wrapper;
      if (!metatype || !instance) continue;
      const definition = Reflect.getMetadata(TOOL_METADATA, metatype) as ToolDefinition | undefined;
      if (!definition) continue;
      if (this.tools.has(definition.name)) throw new Error(`Two tools are named "${definition.name}"`);
      if (!/^[a-z][a-z0-9_]*$/.test(definition.name))
        throw new Error(`Tool name "${definition.name}" is not snake_case`);
      if (!definition.input || !definition.output)
        throw new Error(`Tool "${definition.name}" has no input or output schema`);
      if (typeof (instance as ToolHandler).run !== 'function')
        throw new Error(`Tool "${definition.name}" has no run() method`);
      const input = gatherDefinitions(plainSchema(definition.input));
      this.tools.set(definition.name, {
        definition,
        input,
        requirement: {
          name: definition.name,
          scope: definition.scope,
          plan: definition.plan,
          minRole: definition.minRole,
        },
        handler: instance as ToolHandler,
        validate: ajv.compile(input),
      });
    }
    this.descriptors = [...this.tools.values()].map(({ definition: d, input }) => ({
      name: d.name,
      title: d.title,
      description: d.description,
      // JSON Schema 2020-12 without a $schema keyword: it is MCP's default dialect, some clients
      // refuse the keyword, and it would be written out 42 times in a list an agent pays for.
      inputSchema: input,
      outputSchema: publishedOutput(plainSchema(d.output)),
      // The title once, beside the name (MCP shows it before annotations.title, which it would repeat).
      annotations: d.annotations,
      // Access rules (scope, role, plan) are in /openapi.json (x-formwork), not in the list an agent pays for.
    }));
  }

  get(name: string): RegisteredTool | undefined {
    return this.tools.get(name);
  }

  all(): RegisteredTool[] {
    return [...this.tools.values()];
  }

  /** Every tool on its own, in full (what /openapi.json documents). */
  describe(): ToolDescriptor[] {
    return this.descriptors;
  }

  /**
   * The tools a principal may call (mayCall: the access guard's own check), or all of them for
   * no principal (the public listing).
   */
  callableBy(principal: Principal | undefined): RegisteredTool[] {
    return callableBy(this.all(), principal);
  }

  /** The tool list a principal is sent (all of them for none), each thing said once (tool-list.ts). */
  listFor(principal: Principal | undefined): ToolDescriptor[] {
    const names = new Set(this.callableBy(principal).map((t) => t.definition.name));
    const key = [...names].join(',');
    let list = this.lists.get(key);
    if (!list) {
      list = compactToolList(this.descriptors.filter((d) => names.has(d.name)));
      this.lists.set(key, list);
    }
    return list;
  }
}

/** A schema as plain JSON (TypeBox adds symbol keys; a JSON round trip drops them). */
export function plainSchema(schema: object): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

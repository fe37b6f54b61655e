/** The steps of one tool call, shared by the REST route and the MCP connector. */
import { Inject, Injectable } from '@nestjs/common';
import { assertMayCall } from '../common/access/access';
import type { Principal } from '../common/access/principal';
import { ApiError } from '../common/errors/api-error';
import { payloadTooLarge } from '../common/errors/request-checks';
import { JSON_BODY_LIMIT } from '../common/http/body';
import { APP_CONFIG, AppConfig, resourceMetadataUrl } from '../config/config';
import { nestingDepthDetails, toDetails, unstorableTextDetails } from '../common/validation/schema-validator';
import { RegisteredTool, ToolRegistry } from './tool-registry.service';
import { inSpan } from '../observability/tracing';

/** A call that passed every check: the tool, its checked arguments, and who calls. */
export interface ToolCall {
  tool: RegisteredTool;
  args: unknown;
  principal: Principal;
  requestId: string;
}

/**
 * The steps of one tool call, in the order the design fixes: resolve the tool (404), check scope,
 * plan and role (403), check the arguments (400), run it. The REST route runs them as guards and a
 * handler (tools.controller.ts); the MCP connector (src/mcp/) calls the same ones. (The Idempotency-Key
 * step, between the arguments and the run, is IdempotencyService.)
 */
@Injectable()
export class ToolCallService {
  private readonly metadataUrl: { 'api/v1': string; mcp: string };

  constructor(
    private readonly registry: ToolRegistry,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.metadataUrl = { 'api/v1': resourceMetadataUrl(config), mcp: resourceMetadataUrl(config, 'mcp') };
  }

  /** The tool named `name`, or 404 naming the tools there are. */
  resolve(name: string): RegisteredTool {
    const tool = this.registry.get(name);
    if (!tool) {
      throw new ApiError('not_found', {
        message: `There is no tool named "${name}".`,
        hint: `GET /api/v1/tools lists the tools: ${this.registry
          .all()
          .map((t) => t.definition.name)
          .join(', ')}.`,
      });
    }
    return tool;
  }

  /**
   * Scope (403 insufficient_scope, with a challenge naming it and the metadata of the resource
   * called: the tools API or the MCP connector), plan (403 pro_required), role (403 forbidden).
   */
  authorize(principal: Principal, tool: RegisteredTool, resource: 'api/v1' | 'mcp' = 'api/v1'): void {
    assertMayCall(principal, tool.requirement, this.metadataUrl[resource]);
  }

  /** The scope check alone (403 insufficient_scope): MCP answers it as an HTTP status before the call runs. */
  authorizeScope(principal: Principal, tool: RegisteredTool, resource: 'api/v1' | 'mcp' = 'api/v1'): void {
    if (!principal.scopes.includes(tool.requirement.scope)) this.authorize(principal, tool, resource);
  }

  /**
   * A body larger than the call takes (1 MB, or the tool's bodyLimit): 413 payload_too_large. The
   * tool routes read up to TOOL_ROUTE_BODY_LIMIT, so this is where the limit of each call is held.
   */
  checkBodySize(tool: RegisteredTool | undefined, bytes: number): void {
    const limit = tool?.definition.bodyLimit ?? JSON_BODY_LIMIT;
    if (bytes > limit) throw payloadTooLarge(limit);
  }

  /**
   * The arguments as the tool takes them (schema defaults filled in), or 400 invalid_arguments:
   * nesting too deep for the later steps to walk (first, so nothing overflows the stack), text
   * PostgreSQL cannot store (NUL, lone surrogates), then the input schema, which is strict (an
   * unknown argument is refused, not ignored).
   */
  checkArguments(tool: RegisteredTool, value: unknown): unknown {
    const tooDeep = nestingDepthDetails(value);
    if (tooDeep.length) {
      throw new ApiError('invalid_arguments', {
        message: 'The arguments nest too deeply.',
        hint: 'Send flatter JSON: tool arguments need only a few levels of objects and arrays.',
        details: tooDeep,
      });
    }
    const unstorable = unstorableTextDetails(value);
    if (unstorable.length) {
      throw new ApiError('invalid_arguments', {
        message: 'Some text in the arguments cannot be stored.',
        hint: 'Remove NUL characters (\\u0000) and lone surrogates from the strings named in details.',
        details: unstorable,
      });
    }
    if (!tool.validate(value)) {
      throw new ApiError('invalid_arguments', {
        message: `The arguments do not match the input schema of ${tool.definition.name}.`,
        details: toDetails(tool.validate.errors),
      });
    }
    return value;
  }

  /** Runs the tool (in a `tool <name>` span when tracing is on); its result is the answer. */
  run(call: ToolCall): Promise<unknown> {
    const run = () =>
      call.tool.handler.run(call.args as never, { principal: call.principal, requestId: call.requestId });
    return inSpan(`tool ${call.tool.definition.name}`, run);
  }
}

/** The guards of POST /api/v1/tools/{name}: resolve the tool, check access, check the arguments. */
import { CanActivate, createParamDecorator, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../common/errors/api-error';
import { isJsonRequest, parseJson } from '../common/http/body';
import { ToolCall, ToolCallService } from './tool-call.service';
import type { RegisteredTool } from './tool-registry.service';

declare module 'fastify' {
  interface FastifyRequest {
    /** The tool call as the guards establish it: the tool once resolved, then its checked arguments. */
    toolCall?: { tool: RegisteredTool; args?: unknown };
  }
}

/**
 * POST /api/v1/tools/{name} runs these after authentication and the credential's budget (the
 * global guards), in this order; each reports its own refusal:
 *   ToolResolveGuard (404, 413 past the tool's body limit) -> ToolAccessGuard (403 scope, plan, role) -> ToolArgumentsGuard (400, 415)
 * then IdempotencyInterceptor (calls with an Idempotency-Key only) and the handler. The arguments are a guard because Nest runs
 * interceptors before pipes, and they must be checked before an Idempotency-Key is claimed.
 */
@Injectable()
export class ToolResolveGuard implements CanActivate {
  constructor(private readonly calls: ToolCallService) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    const tool = this.calls.resolve(String((req.params as { name?: string }).name));
    if (typeof req.body === 'string') this.calls.checkBodySize(tool, Buffer.byteLength(req.body));
    req.toolCall = { tool };
    return true;
  }
}

@Injectable()
export class ToolAccessGuard implements CanActivate {
  constructor(private readonly calls: ToolCallService) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    this.calls.authorize(req.principal!, req.toolCall!.tool);
    return true;
  }
}

@Injectable()
export class ToolArgumentsGuard implements CanActivate {
  constructor(private readonly calls: ToolCallService) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    const call = req.toolCall!;
    call.args = this.calls.checkArguments(call.tool, argumentsOf(req));
    return true;
  }
}

/**
 * The arguments sent over HTTP: the JSON body (kept as text until now, so that malformed JSON is
 * reported here, after 401, 404 and 403), or {} for an empty body. Any other body is 415.
 */
function argumentsOf(req: FastifyRequest): unknown {
  if (req.body === undefined) return {};
  if (!isJsonRequest(req)) {
    throw new ApiError('unsupported_media_type', {
      message: `Tool arguments must be sent as JSON, not ${req.headers['content-type'] ?? 'an untyped body'}.`,
    });
  }
  const value = parseJson(req.body as string);
  return value === undefined ? {} : value;
}

/** The checked call, for the handler: what the guards established, with the caller and the request id. */
export const CheckedToolCall = createParamDecorator((_data: unknown, context: ExecutionContext): ToolCall => {
  const req = context.switchToHttp().getRequest<FastifyRequest>();
  const { tool, args } = req.toolCall!;
  return { tool, args, principal: req.principal!, requestId: req.id };
});

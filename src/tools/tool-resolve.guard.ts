import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../common/errors/api-error';
import { ToolRegistry } from './tool-registry.service';

/** Finds the called tool (404 when there is none) and puts its requirement on the request. */
@Injectable()
export class ToolResolveGuard implements CanActivate {
  constructor(private readonly registry: ToolRegistry) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    const name = String((req.params as { name: string }).name);
    const tool = this.registry.get(name);
    if (!tool) {
      throw new ApiError('not_found', {
        message: `There is no tool named "${name}".`,
        hint: `GET /api/v1/tools lists the tools: ${this.registry.all().map((t) => t.definition.name).join(', ')}.`,
      });
    }
    req.toolRequirement = tool.requirement;
    return true;
  }
}

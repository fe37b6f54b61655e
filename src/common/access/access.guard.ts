import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { APP_CONFIG, AppConfig, resourceMetadataUrl } from '../../config/config';
import { assertMayCall } from './access';

/**
 * Scope, plan and role checks of a tool call, reading the requirement the tools layer resolved
 * (req.toolRequirement) and the principal the authentication guard set.
 */
@Injectable()
export class AccessGuard implements CanActivate {
  private readonly metadataUrl: string;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.metadataUrl = resourceMetadataUrl(config);
  }

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    if (!req.principal || !req.toolRequirement) throw new Error('AccessGuard needs an authenticated principal and a resolved tool');
    assertMayCall(req.principal, req.toolRequirement, this.metadataUrl);
    return true;
  }
}

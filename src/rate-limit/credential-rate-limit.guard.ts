import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RateLimitService } from './rate-limit.service';

/** Runs right after authentication: the credential's budget (120/min), shared by all its routes. */
@Injectable()
export class CredentialRateLimitGuard implements CanActivate {
  constructor(private readonly rateLimit: RateLimitService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    if (!req.principal) return true; // public route
    const budget = await this.rateLimit.consume('credential', req.principal.credentialKey);
    if (!budget) return true; // budgets turned off
    this.rateLimit.writeHeaders(context.switchToHttp().getResponse<FastifyReply>().raw, [req.ipBudget, budget]);
    if (budget.exceeded) throw this.rateLimit.rateLimited(budget);
    return true;
  }
}

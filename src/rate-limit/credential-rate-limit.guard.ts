/** The global guard that spends the credential's budget (with the IP's, when deferred) after authentication. */
import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BudgetState, RateLimitService } from './rate-limit.service';

/**
 * Runs right after authentication. For a request whose IP budget the early hook deferred (a bearer
 * credential on an API route): both budgets in one call (IP 240/min, credential 120/min shared by
 * all its routes), or the IP's alone when the route is public. A refusal by the IP budget does not
 * spend the credential's.
 */
@Injectable()
export class CredentialRateLimitGuard implements CanActivate {
  constructor(private readonly rateLimit: RateLimitService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    let budgets: Array<BudgetState | undefined> | undefined;
    if (req.rateLimitDeferred) {
      req.rateLimitDeferred = false;
      const ip = req.ip ?? 'unknown';
      budgets = req.principal
        ? await this.rateLimit.consumeBoth(ip, req.principal.credentialKey)
        : [await this.rateLimit.consume('ip', ip)];
    } else if (req.principal) {
      // The IP budget was counted by the early hook (a route outside /api/ that needs a credential).
      budgets = [req.ipBudget, await this.rateLimit.consume('credential', req.principal.credentialKey)];
    }
    if (!budgets) return true; // public route counted by the early hook, or budgets turned off
    this.rateLimit.writeHeaders(context.switchToHttp().getResponse<FastifyReply>().raw, budgets);
    const refused = budgets.find((b) => b?.exceeded);
    if (refused) throw this.rateLimit.rateLimited(refused);
    return true;
  }
}

import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { from, lastValueFrom, Observable } from 'rxjs';
import { IdempotencyService } from './idempotency.service';

/**
 * Idempotency-Key on a tool call (after the tool guards, so the arguments are checked before a key
 * is claimed). Without the header the call runs as it is. With it, IdempotencyService runs the
 * handler at most once per key: for a write tool inside the transaction that claims the key (the
 * handler's writes join it), and answers with the first answer, status and body byte for byte, on a
 * retry (`Idempotency-Replayed: true`). A refusal of the key itself (422, 409) is thrown as usual.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(private readonly idempotency: IdempotencyService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    const key = IdempotencyService.parseKey(req.headers['idempotency-key']);
    if (key === undefined) return next.handle();
    const { tool, args } = req.toolCall!;
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    const call = {
      principal: req.principal!,
      tool: tool.definition.name,
      write: tool.definition.write,
      key,
      args,
      requestId: req.id,
    };
    // next.handle() is called inside run(), so that the handler runs in the claim's transaction.
    return from(
      this.idempotency
        .run(call, () => lastValueFrom(next.handle()))
        .then((outcome) => {
          reply.status(outcome.status).headers(outcome.headers);
          if (outcome.replayed) reply.header('Idempotency-Replayed', 'true');
          // The stored JSON text as it is: Fastify sends a string with a JSON type unchanged.
          reply.type('application/json; charset=utf-8');
          return outcome.body;
        }),
    );
  }
}

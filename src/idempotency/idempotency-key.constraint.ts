import type { ConstraintStrategy, Handler, HTTPVersion } from 'find-my-way';

/**
 * A Fastify route constraint: `{ idempotencyKey: 'present' }` matches the requests that carry an
 * Idempotency-Key header (any value, an empty or overlong one included: the interceptor refuses
 * those with 400). Requests without it fall through to the same route without the constraint.
 * The tool route is registered both ways so that only keyed calls go through Nest's interceptor
 * machinery (rxjs, and AsyncResource.bind twice per call), which costs unkeyed calls more than the
 * rest of their pipeline's slots (see docs/architecture.md, "The route of one tool call").
 */
export const idempotencyKeyConstraint: ConstraintStrategy<HTTPVersion.V1, string> = {
  name: 'idempotencyKey',
  storage() {
    const handlers = new Map<string, Handler<HTTPVersion.V1>>();
    return {
      get: (value: string) => handlers.get(value) ?? null,
      set: (value: string, store: Handler<HTTPVersion.V1>) => void handlers.set(value, store),
    };
  },
  // find-my-way reads undefined as "no constraint derived" (its own types say string).
  deriveConstraint: (req) =>
    req.headers['idempotency-key'] !== undefined ? 'present' : (undefined as unknown as string),
  mustMatchWhenDerived: false,
};

export const IDEMPOTENCY_KEY_PRESENT = { idempotencyKey: 'present' };

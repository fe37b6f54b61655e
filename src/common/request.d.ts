/** The fields the app's common layer adds to a Fastify request. */
import type { Principal } from './access/principal';

// What the app puts on a request before the handlers read it. Features add their own fields beside
// their code (rate-limit/request.d.ts, tools/tool-call.guards.ts), so that common/ imports none of them.
declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling, set by the authentication guard. */
    principal?: Principal;
  }
}

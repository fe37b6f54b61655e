/** The methods served on each path, for 405 answers and their Allow header. */
import type { FastifyInstance } from 'fastify';
import Router, { HTTPMethod } from 'find-my-way';

const noop = () => undefined;

/**
 * The methods the app serves on each path, for 405 answers and their Allow header. Fastify answers
 * a known path with an unknown method as 404 (it has no 405), so every route is also recorded here,
 * in a router of its own that matches a path the way Fastify does.
 */
export class RouteMethods {
  private readonly router = Router({ ignoreTrailingSlash: true, maxParamLength: 500 });

  /** Records the routes registered from now on (call before the routes are added). */
  constructor(app: FastifyInstance) {
    app.addHook('onRoute', (route) => {
      // The catch-all OPTIONS route of CORS answers preflights; it is not an allowed method of a path.
      if (route.url === '*' || route.url === '/*') return;
      for (const m of Array.isArray(route.method) ? route.method : [route.method]) {
        const method = m.toUpperCase() as HTTPMethod;
        if (method === 'OPTIONS') continue;
        if (!this.router.hasRoute(method, route.url)) this.router.on(method, route.url, noop);
      }
    });
  }

  /** The methods served on `path` (HEAD wherever GET is). */
  allowed(path: string): string[] {
    const methods: string[] = [];
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const) {
      if (this.router.find(method, path)) methods.push(method);
    }
    return methods;
  }
}

import { AsyncResource } from 'node:async_hooks';

type Bound = (...args: unknown[]) => unknown;

/**
 * Fastify's body parser binds a callback to a new AsyncResource for every request with a body (so
 * that AsyncLocalStorage follows the body's events into the handler). On Node 20,
 * AsyncResource#bind also defines the deprecated `asyncResource` property (DEP0172) on every bound
 * function, through two util.deprecate wrappers that cost more than the binding itself: 12 to 17 µs
 * of CPU per tool call in bench/get-form.js's profiles (nodejs/node#58218; Node 24 no longer pays
 * it, nodejs/node#59195). Where the runtime still defines that property, bind is replaced by the same
 * binding without it: the function runs in the resource's async scope with the same `this`,
 * arguments and result. Returns whether it was replaced. Called once, before the server starts.
 */
export function useLeanAsyncResourceBind(): boolean {
  const probe = new AsyncResource('formwork.bind-probe').bind(() => undefined);
  if (!Object.getOwnPropertyDescriptor(probe, 'asyncResource')) return false;
  Object.defineProperty(AsyncResource.prototype, 'bind', {
    configurable: true,
    writable: true,
    value: function bind(this: AsyncResource, fn: Bound, thisArg?: unknown): Bound {
      if (typeof fn !== 'function') throw new TypeError('The "fn" argument must be of type function');
      if (thisArg !== undefined) return this.runInAsyncScope.bind(this, fn, thisArg) as Bound;
      // eslint-disable-next-line @typescript-eslint/no-this-alias -- the resource, beside the caller's `this`
      const resource = this;
      return function (this: unknown, ...args: unknown[]) {
        return resource.runInAsyncScope(fn, this, ...args);
      };
    },
  });
  return true;
}

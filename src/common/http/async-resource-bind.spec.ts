import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { useLeanAsyncResourceBind } from './async-resource-bind';

describe('useLeanAsyncResourceBind', () => {
  const original = Object.getOwnPropertyDescriptor(AsyncResource.prototype, 'bind')!;
  afterEach(() => Object.defineProperty(AsyncResource.prototype, 'bind', original));

  it('replaces bind where the runtime defines the deprecated property (Node 20), and not where it does not', () => {
    const defines = !!Object.getOwnPropertyDescriptor(
      new AsyncResource('t').bind(() => 1),
      'asyncResource',
    );
    expect(useLeanAsyncResourceBind()).toBe(defines);
    // Either way, a bound function no longer carries the deprecated property.
    expect(
      Object.getOwnPropertyDescriptor(
        new AsyncResource('t').bind(() => 1),
        'asyncResource',
      ),
    ).toBeUndefined();
  });

  it('runs the function in the context it was bound in, with its this, arguments and result', () => {
    useLeanAsyncResourceBind();
    const als = new AsyncLocalStorage<string>();
    const seen: unknown[] = [];
    const bound = als.run('request-1', () =>
      new AsyncResource('t').bind(function (this: unknown, a: number, b: number) {
        seen.push(als.getStore(), this, a, b);
        return a + b;
      }),
    );
    const self = { name: 'caller' };
    const result = als.run('request-2', () => bound.call(self, 2, 3));
    expect(result).toBe(5);
    expect(seen).toEqual(['request-1', self, 2, 3]);

    // Node's bind takes a thisArg that @types/node does not declare.
    type WithThisArg = { bind(fn: () => unknown, thisArg: unknown): () => unknown };
    const withThis = als.run('request-3', () =>
      (new AsyncResource('t') as unknown as WithThisArg).bind(function (this: unknown) {
        return [als.getStore(), this];
      }, self),
    );
    expect(withThis()).toEqual(['request-3', self]);
    // The static helper goes through the same method.
    expect(als.run('request-4', () => AsyncResource.bind(() => als.getStore()))()).toBe('request-4');
  });

  it('refuses what is not a function, as the original does', () => {
    useLeanAsyncResourceBind();
    // By message: an app built earlier in the same jest worker may have installed it from another realm.
    expect(() => new AsyncResource('t').bind(42 as unknown as () => void)).toThrow(
      /"fn" argument must be of type function/,
    );
  });
});

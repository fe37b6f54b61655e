/** The request being served, carried through async calls so that log lines can name it. */
import { AsyncLocalStorage } from 'node:async_hooks';

/** What every log line written while serving a request can name. */
export interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` (and everything it awaits) as part of the request `context`. */
export function runInRequestContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The request being served, if any (the logger adds its id to each line). */
export function currentRequestContext(): RequestContext | undefined {
  return storage.getStore();
}

/** Runs `fn` as part of no request: for work several requests share (its log lines name none). */
export function outsideRequestContext<T>(fn: () => T): T {
  return storage.exit(fn);
}

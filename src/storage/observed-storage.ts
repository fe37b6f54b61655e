/** The storage port with its failures counted and its calls traced (src/observability). */
import { metrics } from '../observability/metrics';
import { inSpan } from '../observability/tracing';
import { FileStorage, FileTooLargeError, ObjectExistsError, UploadIdleError } from './file-storage';

/** The operations that reach the disk or the bucket. */
const OPERATIONS = new Set([
  'uploadTarget',
  'head',
  'readStart',
  'peek',
  'write',
  'seal',
  'read',
  'downloadRedirect',
  'delete',
  'ready',
]);

/** A refusal of what a client sent, not a failure of the store. */
const CLIENT_ERRORS = [FileTooLargeError, UploadIdleError, ObjectExistsError];

/**
 * `storage`, each operation in a `storage <op>` span and its failures counted by operation
 * (formwork_storage_errors_total). The same object for everything else (instanceof, fields).
 */
export function observedStorage<T extends FileStorage>(storage: T): T {
  return new Proxy(storage, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function' || typeof property !== 'string' || !OPERATIONS.has(property)) return value;
      const operation = property;
      return (...args: unknown[]) =>
        inSpan(`storage ${operation}`, async () => {
          try {
            return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          } catch (err) {
            if (!CLIENT_ERRORS.some((kind) => err instanceof kind)) metrics.storageErrors.inc({ operation });
            throw err;
          }
        });
    },
  });
}

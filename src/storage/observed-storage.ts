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
 * `storage` with each operation in a `storage <op>` span and its failures counted by operation
 * (formwork_storage_errors_total): the same object (instanceof and fields hold), each operation
 * replaced by an own property that calls the class's method.
 */
export function observedStorage<T extends FileStorage>(storage: T): T {
  const methods = storage as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const operation of OPERATIONS) {
    const run = methods[operation];
    methods[operation] = (...args: unknown[]) =>
      inSpan(`storage ${operation}`, async () => {
        try {
          return await run.apply(storage, args);
        } catch (err) {
          if (!CLIENT_ERRORS.some((kind) => err instanceof kind)) metrics.storageErrors.inc({ operation });
          throw err;
        }
      });
  }
  return storage;
}

/**
 * The storage port: where uploaded files live. One adapter is chosen at start (disk when
 * STORAGE_S3_BUCKET is unset, S3 otherwise); nothing outside src/storage knows which runs.
 */
export interface UploadTarget {
  url: string;
  method: 'PUT';
  headers: Record<string, string>;
}

export class FileTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`more than ${maxBytes} bytes`);
  }
}

/** `<workspaceId>/<formId>/<uploadId>`: never the respondent's filename. */
export const objectKey = (workspaceId: string, formId: string, uploadId: string) =>
  `${workspaceId}/${formId}/${uploadId}`;

/** The Nest provider token; StorageModule is @Global and exports it. */
export abstract class FileStorage {
  abstract readonly kind: 'disk' | 's3';
  /** Where a client PUTs the bytes of `key` until expiresAt; the headers must be sent as given (Content-Type at least). */
  abstract uploadTarget(key: string, o: { size: number; contentType: string; expiresAt: Date }): Promise<UploadTarget>;
  /** The stored object's size, or undefined when there is none. */
  abstract head(key: string): Promise<{ size: number } | undefined>;
  /** The first `bytes` bytes (fewer when the object is shorter), for type sniffing. */
  abstract readStart(key: string, bytes: number): Promise<Buffer>;
  /**
   * Streams `body` into `key`; past maxBytes it stops reading, leaves nothing stored and throws
   * FileTooLargeError. `body` is never destroyed, only left unread: a request can still be answered.
   */
  abstract write(
    key: string,
    body: NodeJS.ReadableStream,
    o: { contentType: string; maxBytes: number },
  ): Promise<{ size: number }>;
  /** The whole object as a stream (the service serves it). */
  abstract read(key: string): Promise<NodeJS.ReadableStream>;
  /** S3: a presigned GET that answers Content-Disposition: attachment (RFC 6266 filename*=UTF-8'') and the stored type; disk: undefined (the service serves the bytes). */
  abstract downloadRedirect(
    key: string,
    o: { filename: string; contentType: string; expiresInSeconds: number },
  ): Promise<string | undefined>;
  /** Deletes these keys (absent ones are fine). */
  abstract delete(keys: string[]): Promise<void>;
  /** Every key under a prefix (tests and audits list the bucket or the disk with it). */
  abstract list(prefix: string): AsyncIterable<string>;
  /** Throws when the store cannot be reached (for /readyz). */
  abstract ready(): Promise<void>;
}

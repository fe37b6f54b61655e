import type { ApiError } from '../common/errors/api-error';

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

/** The sender stopped sending for longer than the idle bound (UPLOAD_IDLE_TIMEOUT_MS). */
export class UploadIdleError extends Error {
  constructor(readonly idleMs: number) {
    super(`no bytes for ${idleMs} ms`);
  }
}

/** The disk adapter writes each key once: its bytes can no longer change once stored. */
export class ObjectExistsError extends Error {
  constructor() {
    super('the object exists');
  }
}

/** What a write stored: its size, and its first bytes when asked for (the type check). */
export interface StoredBytes {
  size: number;
  start: Buffer;
}

export interface WriteOptions {
  contentType: string;
  maxBytes: number;
  /** How many first bytes to answer in `start` (0 by default). */
  startBytes?: number;
}

/** `<workspaceId>/<formId>/<uploadId>`: never the respondent's filename. */
export const objectKey = (workspaceId: string, formId: string, uploadId: string) =>
  `${workspaceId}/${formId}/${uploadId}`;

/**
 * What the uploads service says of an upload target's bytes that come through the service (the
 * disk endpoint); S3's go to the bucket unseen. One body per URL, once (issue 45, item 6.5).
 */
export interface UploadListener {
  /** How many first bytes `received` needs (the type check). */
  startBytes: number;
  /** Before any byte is read: undefined when the key's upload waits for its bytes, else the refusal (nothing is written). */
  admit(key: string): Promise<ApiError | undefined>;
  /** Once the bytes are stored: undefined when they are taken, else the refusal (the listener deleted them). */
  received(key: string, stored: StoredBytes): Promise<ApiError | undefined>;
}

/** The Nest provider token; StorageModule is @Global and exports it. */
export abstract class FileStorage {
  abstract readonly kind: 'disk' | 's3';
  /**
   * How long an upload target takes bytes. A presigned S3 URL cannot be revoked (a PUT after its
   * upload is gone lands until it expires): S3's are short.
   */
  abstract readonly uploadUrlMinutes: number;
  /** How long a write waits for the sender's next bytes (UPLOAD_IDLE_TIMEOUT_MS); 0: no bound. */
  idleMs = 30_000;
  listener?: UploadListener;
  /** Where a client PUTs the bytes of `key` until expiresAt; the headers must be sent as given (Content-Type at least). */
  abstract uploadTarget(key: string, o: { size: number; contentType: string; expiresAt: Date }): Promise<UploadTarget>;
  /** The stored object's size, or undefined when there is none. */
  abstract head(key: string): Promise<{ size: number } | undefined>;
  /** The first `bytes` bytes (fewer when the object is shorter), for type sniffing. */
  abstract readStart(key: string, bytes: number): Promise<Buffer>;
  /**
   * What a client has sent for `key` so far, sealed or not, without sealing it (a dry run's look):
   * its size and first `startBytes`, or undefined when nothing arrived.
   */
  abstract peek(key: string, startBytes: number): Promise<StoredBytes | undefined>;
  /**
   * Streams `body` into `key`; past maxBytes it stops reading, leaves nothing stored and throws
   * FileTooLargeError (UploadIdleError when the sender stops). `body` is never destroyed, only left
   * unread: a request can still be answered. On disk a key is written once (ObjectExistsError).
   */
  abstract write(key: string, body: NodeJS.ReadableStream, o: WriteOptions): Promise<StoredBytes>;
  /**
   * Before a response holds `key`: from then on no upload URL can change its bytes. Disk: nothing
   * (its endpoint writes a key once). S3: a presigned PUT cannot be revoked, so it targets
   * `<key>.upload`, copied here to `key`, which no URL names.
   */
  abstract seal(key: string): Promise<void>;
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
  /**
   * Every key last written before `before`, and S3's `.upload` objects last written before
   * `uploadedBefore` (by default `before` too): the orphan sweep's candidates.
   */
  abstract stale(before: Date, uploadedBefore?: Date): AsyncIterable<string>;
  /** Throws when the store cannot be reached (for /readyz). */
  abstract ready(): Promise<void>;
}

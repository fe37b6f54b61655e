/** Files in an S3-compatible bucket (AWS S3, MinIO, Ceph RGW, Cloudflare R2, Garage). */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Readable } from 'node:stream';
import type { S3Settings } from '../config/config';
import { attachmentDisposition } from './content-disposition';
import { FileStorage, StoredBytes, UploadTarget, WriteOptions } from './file-storage';
import { limitedBody } from './limited-body';

/** Bytes held in memory per part of a streamed write (S3's smallest part is 5 MiB). */
const PART_BYTES = 8 * 1024 * 1024;
/** Where a presigned PUT puts the bytes of `key`, until seal() copies them to `key` (see FileStorage.seal). */
const UPLOADED = '.upload';

export class S3FileStorage extends FileStorage {
  readonly kind = 's3';
  /**
   * A presigned PUT cannot be revoked: a PUT after its upload is gone lands under `.upload` until
   * the URL expires (the orphan sweep deletes it). S3 checks the expiry when a request starts, so
   * a large file begun in time still arrives whole.
   */
  readonly uploadUrlMinutes = 5;
  private readonly client: S3Client;
  private readonly bucket: string;

  constructor(settings: S3Settings) {
    super();
    this.bucket = settings.bucket;
    this.client = new S3Client({
      endpoint: settings.endpoint,
      region: settings.region,
      credentials: settings.credentials,
      forcePathStyle: settings.forcePathStyle,
      // The SDK's default (a CRC32 on every request) breaks several S3-compatible stores.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  /**
   * A presigned PUT straight to the bucket (to `<key>.upload`), with the Content-Type signed. It
   * cannot enforce the size (and some stores check no signature at all): the service checks the
   * object once sealed.
   */
  async uploadTarget(key: string, o: { size: number; contentType: string; expiresAt: Date }): Promise<UploadTarget> {
    const command = new PutObjectCommand({ Bucket: this.bucket, Key: key + UPLOADED, ContentType: o.contentType });
    const url = await getSignedUrl(this.client, command, {
      expiresIn: secondsUntil(o.expiresAt),
      signableHeaders: new Set(['content-type']),
    });
    return { url, method: 'PUT', headers: { 'Content-Type': o.contentType } };
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: head.ContentLength ?? 0 };
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async readStart(key: string, bytes: number): Promise<Buffer> {
    try {
      const object = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: `bytes=0-${bytes - 1}` }),
      );
      // A store that ignores Range sends it all: keep the first bytes only.
      return Buffer.from(await object.Body!.transformToByteArray()).subarray(0, bytes);
    } catch (e) {
      // An empty object has no byte 0: S3 answers 416, some stores break the connection.
      if ((await this.head(key))?.size === 0) return Buffer.alloc(0);
      throw e;
    }
  }

  /** The sealed object, else what a presigned PUT left under `<key>.upload`. */
  async peek(key: string, startBytes: number): Promise<StoredBytes | undefined> {
    for (const k of [key, key + UPLOADED]) {
      const stored = await this.head(k);
      if (stored) return { size: stored.size, start: await this.readStart(k, startBytes) };
    }
    return undefined;
  }

  /**
   * One PutObject up to 8 MiB; past that a multipart upload of 8 MiB parts, one part sent while
   * the next is read (so reading never waits for the store, and at most two parts are in memory),
   * aborted on failure.
   */
  async write(key: string, body: NodeJS.ReadableStream, o: WriteOptions): Promise<StoredBytes> {
    const limited = limitedBody(body, { maxBytes: o.maxBytes, idleMs: this.idleMs, startBytes: o.startBytes });
    let uploadId: string | undefined;
    const parts: { PartNumber: number; ETag: string | undefined }[] = [];
    let sending: Promise<void> = Promise.resolve();
    const sendPart = async (part: Buffer) => {
      await sending;
      uploadId ??= (
        await this.client.send(
          new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: o.contentType }),
        )
      ).UploadId;
      const slot = { PartNumber: parts.length + 1, ETag: undefined as string | undefined };
      parts.push(slot);
      const command = new UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, Body: part, ...slot });
      sending = this.client.send(command).then(({ ETag }) => void (slot.ETag = ETag));
      sending.catch(() => undefined); // awaited by the next part or the end: not unhandled meanwhile
    };
    try {
      // Chunks are copied into the part being filled (one copy, no list of chunks kept beside it).
      // Two buffers take turns: the one filled and the one sent (a new 8 MiB buffer per part cost
      // its page faults, and RSS until the garbage collector freed the last).
      let part = Buffer.allocUnsafe(PART_BYTES);
      let sent: typeof part | undefined;
      let filled = 0;
      for await (const chunk of limited.stream as AsyncIterable<Buffer>) {
        for (let offset = 0; offset < chunk.length;) {
          const copied = chunk.copy(part, filled, offset);
          filled += copied;
          offset += copied;
          if (filled < PART_BYTES) continue;
          await sendPart(part); // once the previous part is sent: its buffer is free
          [part, sent] = [sent ?? Buffer.allocUnsafe(PART_BYTES), part];
          filled = 0;
        }
      }
      const rest = part.subarray(0, filled);
      if (uploadId === undefined) {
        await this.client.send(
          new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: rest, ContentType: o.contentType }),
        );
      } else {
        if (rest.length > 0) await sendPart(rest);
        await sending;
        await this.client.send(
          new CompleteMultipartUploadCommand({
            Bucket: this.bucket,
            Key: key,
            UploadId: uploadId,
            MultipartUpload: { Parts: parts },
          }),
        );
      }
      return { size: limited.bytes(), start: limited.start() };
    } catch (e) {
      await sending.catch(() => undefined);
      if (uploadId !== undefined)
        await this.client
          .send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }))
          .catch(() => undefined); // the bucket's lifecycle rule for incomplete uploads is the backstop
      throw e;
    } finally {
      limited.release();
    }
  }

  /**
   * Copies what the presigned PUT stored to `key` (inside the store), then drops the copied object.
   * Nothing under `<key>.upload` (never sent, or sealed before): `key` stays as it is.
   */
  async seal(key: string): Promise<void> {
    try {
      await this.client.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: key,
          // URL-encoded by segment: some stores (s3rver) take no encoded slash.
          CopySource: `${this.bucket}/${(key + UPLOADED).split('/').map(encodeURIComponent).join('/')}`,
        }),
      );
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    // Best effort: `key` holds the bytes now, and nothing reads `<key>.upload` (nor a later PUT to
    // the URL landing there again): the orphan sweep or the response's deletion removes it.
    await this.delete([key + UPLOADED]).catch(() => undefined);
  }

  async read(key: string): Promise<NodeJS.ReadableStream> {
    const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    return object.Body as Readable;
  }

  /** A presigned GET whose answer is an attachment of the stored type, whatever the object's metadata says. */
  async downloadRedirect(
    key: string,
    o: { filename: string; contentType: string; expiresInSeconds: number },
  ): Promise<string | undefined> {
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ResponseContentDisposition: attachmentDisposition(o.filename),
      ResponseContentType: o.contentType,
    });
    return getSignedUrl(this.client, command, { expiresIn: o.expiresInSeconds });
  }

  /** The keys and, for each, what a presigned PUT may have left under `<key>.upload`. */
  async delete(keys: string[]): Promise<void> {
    const all = keys.flatMap((key) => (key.endsWith(UPLOADED) ? [key] : [key, key + UPLOADED]));
    for (let i = 0; i < all.length; i += 1000) {
      const batch = all.slice(i, i + 1000);
      const answer = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      const failed = (answer.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (failed.length > 0) throw new Error(`the store kept ${failed.length} object(s): ${failed[0].Code}`);
    }
  }

  async *list(prefix: string): AsyncIterable<string> {
    for await (const object of this.objects(prefix)) if (object.Key) yield object.Key;
  }

  async *stale(before: Date, uploadedBefore = before): AsyncIterable<string> {
    for await (const object of this.objects('')) {
      const bound = object.Key?.endsWith(UPLOADED) ? uploadedBefore : before;
      if (object.Key && object.LastModified && object.LastModified < bound) yield object.Key;
    }
  }

  private async *objects(prefix: string): AsyncIterable<{ Key?: string; LastModified?: Date }> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      yield* page.Contents ?? [];
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async ready(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
  }
}

function secondsUntil(when: Date): number {
  return Math.max(1, Math.ceil((when.getTime() - Date.now()) / 1000));
}

function isNotFound(e: unknown): boolean {
  return (
    e instanceof S3ServiceException &&
    (e.$metadata.httpStatusCode === 404 || e.name === 'NotFound' || e.name === 'NoSuchKey')
  );
}

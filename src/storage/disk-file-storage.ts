/** Files on disk under DATA_DIR/uploads (the embedded default): several instances may share the path. */
import { constants, createReadStream } from 'node:fs';
import { access, link, mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { FileStorage, ObjectExistsError, StoredBytes, UploadTarget, WriteOptions } from './file-storage';
import { limitedBody } from './limited-body';
import { UploadGrant, UploadUrlSigner } from './upload-url';

/**
 * A key is segments of letters, digits, `_` and `-` (ids): nothing that could leave the root; a
 * write in progress is `<key>.part` (listed, so that the orphan sweep removes one a crash left).
 */
const KEY = /^[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*(?:\.part)?$/;
const PART = '.part';
/** Bytes moved per read and write of a stored file (Node's default, 64 KiB, costs more calls per MB). */
const CHUNK = 1024 * 1024;

export class DiskFileStorage extends FileStorage {
  readonly kind = 'disk';
  /** The endpoint takes one body per URL, once, and only for an upload still waiting for it. */
  readonly uploadUrlMinutes = 15;

  constructor(
    /** DATA_DIR/uploads */
    readonly root: string,
    private readonly publicUrl: string,
    readonly signer: UploadUrlSigner,
  ) {
    super();
  }

  /** The service's own upload endpoint (disk-upload.route.ts), signed. */
  async uploadTarget(key: string, o: { size: number; contentType: string; expiresAt: Date }): Promise<UploadTarget> {
    this.path(key);
    const grant: UploadGrant = { key, ...o };
    return {
      url: `${this.publicUrl}/api/v1/uploads/${key}?${await this.signer.query(grant)}`,
      method: 'PUT',
      headers: { 'Content-Type': o.contentType },
    };
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    try {
      const s = await stat(this.path(key));
      return s.isFile() ? { size: s.size } : undefined;
    } catch (e) {
      if (isAbsent(e)) return undefined;
      throw e;
    }
  }

  async readStart(key: string, bytes: number): Promise<Buffer> {
    const file = await open(this.path(key), 'r');
    try {
      const buffer = Buffer.alloc(bytes);
      const { bytesRead } = await file.read(buffer, 0, bytes, 0);
      return buffer.subarray(0, bytesRead);
    } finally {
      await file.close();
    }
  }

  async peek(key: string, startBytes: number): Promise<StoredBytes | undefined> {
    const stored = await this.head(key);
    return stored && { size: stored.size, start: await this.readStart(key, startBytes) };
  }

  /**
   * Into `<key>.part`, created exclusively (a second writer meanwhile is refused), then linked to
   * the key, which fails if it exists: a key is written once and only whole, so its bytes never
   * change after a response checked them, and no check sees a file still being written. A failed
   * write removes its part; one a crash left is removed by the orphan sweep.
   */
  async write(key: string, body: NodeJS.ReadableStream, o: WriteOptions): Promise<StoredBytes> {
    const target = this.path(key);
    const part = this.path(key + PART);
    await mkdir(dirname(target), { recursive: true });
    const file = await open(part, 'wx').catch((e: NodeJS.ErrnoException) => {
      throw e.code === 'EEXIST' ? new ObjectExistsError() : e;
    });
    const limited = limitedBody(body, { maxBytes: o.maxBytes, idleMs: this.idleMs, startBytes: o.startBytes });
    try {
      await pipeline(limited.stream, file.createWriteStream({ highWaterMark: CHUNK }));
      await link(part, target).catch((e: NodeJS.ErrnoException) => {
        throw e.code === 'EEXIST' ? new ObjectExistsError() : e;
      });
      return { size: limited.bytes(), start: limited.start() };
    } finally {
      limited.release();
      await rm(part, { force: true });
    }
  }

  async read(key: string): Promise<NodeJS.ReadableStream> {
    const path = this.path(key);
    await access(path, constants.R_OK); // absent: fails here, not on the stream's first read
    return createReadStream(path, { highWaterMark: CHUNK });
  }

  async downloadRedirect(): Promise<string | undefined> {
    return undefined;
  }

  async seal(): Promise<void> {}

  async delete(keys: string[]): Promise<void> {
    for (const key of keys) await rm(this.path(key), { force: true });
  }

  async *list(prefix: string): AsyncIterable<string> {
    for await (const key of this.walk('')) if (key.startsWith(prefix)) yield key;
  }

  async *stale(before: Date): AsyncIterable<string> {
    for await (const key of this.walk('')) {
      const s = await stat(this.path(key)).catch(() => undefined);
      if (s && s.mtimeMs < before.getTime()) yield key;
    }
  }

  async ready(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    await access(this.root, constants.W_OK);
  }

  private async *walk(dir: string): AsyncIterable<string> {
    let entries;
    try {
      entries = await readdir(join(this.root, dir), { withFileTypes: true });
    } catch (e) {
      if (isAbsent(e)) return;
      throw e;
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name.startsWith('.')) continue;
      const key = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) yield* this.walk(key);
      else if (entry.isFile()) yield key;
    }
  }

  private path(key: string): string {
    if (!KEY.test(key)) throw new Error(`not a storage key: ${JSON.stringify(key.slice(0, 100))}`);
    return join(this.root, ...key.split('/'));
  }
}

function isAbsent(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

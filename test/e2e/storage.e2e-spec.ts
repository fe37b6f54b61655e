/**
 * The storage port (src/storage): both adapters through one table of cases, on a real disk and a
 * real S3-protocol server (s3rver); the disk adapter's upload endpoint and its refusals; /readyz.
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import request from 'supertest';
import {
  FileStorage,
  FileTooLargeError,
  ObjectExistsError,
  objectKey,
  UploadIdleError,
  UploadTarget,
} from '../../src/storage/file-storage';
import { createTestApp } from '../utils/create-test-app';
import { expectError } from '../utils/http';
import { startS3, TestS3 } from '../utils/s3';

const newKey = (workspace = randomUUID()) => objectKey(workspace, randomUUID(), `upl_${randomUUID().slice(0, 8)}`);
const inFifteen = () => new Date(Date.now() + 15 * 60_000);

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

async function keys(storage: FileStorage, prefix: string): Promise<string[]> {
  const found: string[] = [];
  for await (const key of storage.list(prefix)) found.push(key);
  return found;
}

/** A stream of `total` bytes in 64 KiB chunks, from a generator (so no Content-Length is known). */
function bytesStream(bytes: Buffer): Readable {
  return Readable.from(
    (function* () {
      for (let i = 0; i < bytes.length; i += 65536) yield bytes.subarray(i, i + 65536);
    })(),
  );
}

interface Running {
  app: NestFastifyApplication;
  storage: FileStorage;
  /** The address the app listens on: the disk adapter's URLs name PUBLIC_URL, as behind a proxy. */
  base: string;
  dataDir: string;
  s3?: TestS3;
}

async function start(kind: 'disk' | 's3', env: Record<string, string> = {}): Promise<Running> {
  const dataDir = mkdtempSync(join(tmpdir(), 'formwork-storage-'));
  const s3 = kind === 's3' ? await startS3() : undefined;
  const app = await createTestApp({ DATA_DIR: dataDir, ...(s3?.env ?? {}), ...env });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  const storage = app.get(FileStorage);
  // The port alone: these keys have no upload rows; the uploads service's own checks of what the
  // endpoint receives (one body while the upload waits, the type) are uploads.e2e-spec's.
  storage.listener = undefined;
  return { app, storage, base: `http://127.0.0.1:${port}`, dataDir, s3 };
}

async function stop(r: Running | undefined) {
  await r?.app.close();
  await r?.s3?.stop();
  if (r) rmSync(r.dataDir, { recursive: true, force: true });
}

/** PUT the bytes where the target says, with its headers (the service's own URLs reached at `base`). */
function put(r: Running, target: UploadTarget, body: Buffer | Readable, headers: Record<string, string> = {}) {
  const url = new URL(target.url);
  const address = r.storage.kind === 'disk' ? `${r.base}${url.pathname}${url.search}` : target.url;
  return fetch(address, {
    method: target.method,
    headers: { ...target.headers, ...headers },
    body: body instanceof Readable ? (Readable.toWeb(body) as ReadableStream) : body,
    ...(body instanceof Readable ? { duplex: 'half' } : {}),
  } as RequestInit);
}

describe.each(['disk', 's3'] as const)('FileStorage on %s', (kind) => {
  let r: Running;
  beforeAll(async () => {
    r = await start(kind);
  });
  afterAll(() => stop(r));

  it(`is the ${kind} adapter`, () => {
    expect(r.storage.kind).toBe(kind);
  });

  it('takes a real HTTP PUT to the upload target; head, readStart, read and list then find the bytes', async () => {
    const workspace = randomUUID();
    const key = newKey(workspace);
    const bytes = randomBytes(300_000);
    const target = await r.storage.uploadTarget(key, {
      size: bytes.length,
      contentType: 'application/pdf',
      expiresAt: inFifteen(),
    });
    expect(target).toMatchObject({ method: 'PUT', headers: { 'Content-Type': 'application/pdf' } });
    // The store is asked to hold the client to the type (s3rver checks nothing: the URL is what proves it).
    if (kind === 's3') expect(new URL(target.url).searchParams.get('X-Amz-SignedHeaders')).toBe('content-type;host');
    const res = await put(r, target, bytes);
    expect(res.status).toBe(200);
    // S3: the PUT's bytes wait under `<key>.upload` until sealed (no URL names the key itself).
    if (kind === 's3') expect(await r.storage.head(key)).toBeUndefined();
    await r.storage.seal(key);
    expect(await r.storage.head(key)).toEqual({ size: bytes.length });
    expect((await r.storage.readStart(key, 4100)).equals(bytes.subarray(0, 4100))).toBe(true);
    expect((await readAll(await r.storage.read(key))).equals(bytes)).toBe(true);
    expect(await keys(r.storage, `${workspace}/`)).toEqual([key]);
  });

  it('peeks at what a PUT sent without sealing it (a dry run), and at nothing when nothing came', async () => {
    const key = newKey();
    expect(await r.storage.peek(key, 4100)).toBeUndefined();
    const bytes = Buffer.from('%PDF-1.7 peek');
    const target = await r.storage.uploadTarget(key, {
      size: bytes.length,
      contentType: 'application/pdf',
      expiresAt: inFifteen(),
    });
    expect((await put(r, target, bytes)).status).toBe(200);
    expect(await r.storage.peek(key, 4)).toEqual({ size: bytes.length, start: Buffer.from('%PDF') });
    // Not sealed: on S3 the bytes still wait under `.upload`.
    if (kind === 's3') expect(await r.storage.head(key)).toBeUndefined();
  });

  it('answers no head for an absent key, and fewer bytes from readStart when the object is shorter', async () => {
    expect(await r.storage.head(newKey())).toBeUndefined();
    const key = newKey();
    await r.storage.write(key, Readable.from([Buffer.from('%PDF')]), { contentType: 'application/pdf', maxBytes: 10 });
    expect((await r.storage.readStart(key, 4100)).toString()).toBe('%PDF');
    const empty = newKey();
    expect(await r.storage.write(empty, Readable.from([]), { contentType: 'text/plain', maxBytes: 10 })).toEqual({
      size: 0,
      start: Buffer.alloc(0),
    });
    expect(await r.storage.readStart(empty, 4100)).toHaveLength(0);
  });

  it('writes a stream within the limit, several parts long, byte-identical', async () => {
    const key = newKey();
    const bytes = randomBytes(9 * 1024 * 1024 + 12345); // more than one 8 MiB part on S3
    const body = bytesStream(bytes);
    const written = await r.storage.write(key, body, {
      contentType: 'video/mp4',
      maxBytes: bytes.length,
      startBytes: 4100,
    });
    expect(written.size).toBe(bytes.length);
    // The first bytes, for the type check, come with the write: nothing is read back.
    expect(written.start.equals(bytes.subarray(0, 4100))).toBe(true);
    expect((await readAll(await r.storage.read(key))).equals(bytes)).toBe(true);
  });

  it('stops a write when the sender stops sending (UploadIdleError), keeping nothing', async () => {
    const key = newKey();
    const body = new Readable({ read() {} });
    body.push(randomBytes(1000)); // then nothing more, and no end
    const idleMs = r.storage.idleMs;
    r.storage.idleMs = 300;
    try {
      const error = await r.storage
        .write(key, body, { contentType: 'application/pdf', maxBytes: 10_000 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UploadIdleError);
      expect(body.destroyed).toBe(false);
      expect(await r.storage.head(key)).toBeUndefined();
    } finally {
      r.storage.idleMs = idleMs;
      body.destroy();
    }
  });

  it("keeps a key's bytes once stored: on disk a second write is refused; on S3 a PUT after seal changes nothing", async () => {
    const key = newKey();
    const first = Buffer.from('%PDF-1 first');
    if (kind === 'disk') {
      await r.storage.write(key, Readable.from([first]), { contentType: 'application/pdf', maxBytes: 100 });
      await expect(
        r.storage.write(key, Readable.from([Buffer.from('second')]), { contentType: 'application/pdf', maxBytes: 100 }),
      ).rejects.toBeInstanceOf(ObjectExistsError);
    } else {
      const target = await r.storage.uploadTarget(key, {
        size: first.length,
        contentType: 'application/pdf',
        expiresAt: inFifteen(),
      });
      expect((await put(r, target, first)).status).toBe(200);
      await r.storage.seal(key);
      // The URL is still valid (15 minutes) and s3rver takes anything: the bytes land beside, unread.
      expect((await put(r, target, Buffer.from('%PDF-1 other'))).status).toBe(200);
      expect(await keys(r.storage, key)).toEqual([key, `${key}.upload`]);
    }
    expect((await readAll(await r.storage.read(key))).equals(first)).toBe(true);
    await r.storage.delete([key]);
    expect(await keys(r.storage, key)).toEqual([]);
  });

  it('disk: a file still being written is no key yet, and a second write of the key meanwhile is refused', async () => {
    if (kind !== 'disk') return expect(r.storage.kind).toBe('s3'); // S3 shows an object only once written whole
    const key = newKey();
    const body = new Readable({ read() {} });
    body.push(Buffer.from('%PDF-1 all the declared bytes')); // as many as declared, but not ended
    const writing = r.storage.write(key, body, { contentType: 'application/pdf', maxBytes: 29 });
    await new Promise((done) => setTimeout(done, 200));
    // A check now (a response naming the upload) must not take bytes that may still change.
    expect(await r.storage.head(key)).toBeUndefined();
    await expect(
      r.storage.write(key, Readable.from([Buffer.from('other')]), { contentType: 'application/pdf', maxBytes: 29 }),
    ).rejects.toBeInstanceOf(ObjectExistsError);
    body.push(null);
    expect((await writing).size).toBe(29);
    expect(await r.storage.head(key)).toEqual({ size: 29 });
    expect(await keys(r.storage, key)).toEqual([key]);
    await r.storage.delete([key]);
  });

  it('stops a write past the limit with FileTooLargeError, stores nothing, and leaves the body undestroyed', async () => {
    const workspace = randomUUID();
    for (const size of [1000, 9 * 1024 * 1024]) {
      const key = newKey(workspace);
      // 16 MiB more than the limit, so the body is still being sent when the limit stops it.
      const chunk = randomBytes(65536);
      const body = Readable.from(
        (function* () {
          for (let sent = 0; sent <= size + 16 * 1024 * 1024; sent += chunk.length) yield chunk;
        })(),
      );
      await expect(
        r.storage.write(key, body, { contentType: 'application/pdf', maxBytes: size }),
      ).rejects.toBeInstanceOf(FileTooLargeError);
      expect(body.destroyed).toBe(false);
      body.destroy();
      expect(await r.storage.head(key)).toBeUndefined();
    }
    expect(await keys(r.storage, `${workspace}/`)).toEqual([]);
  });

  it('deletes keys, absent ones included, and lists only under the prefix', async () => {
    const workspace = randomUUID();
    const [a, b] = [newKey(workspace), newKey(workspace)];
    const other = newKey();
    for (const key of [a, b, other])
      await r.storage.write(key, Readable.from([Buffer.from('x')]), { contentType: 'text/plain', maxBytes: 1 });
    expect(await keys(r.storage, `${workspace}/`)).toEqual([a, b].sort());
    await r.storage.delete([a, b, newKey(workspace)]);
    expect(await keys(r.storage, `${workspace}/`)).toEqual([]);
    expect(await r.storage.head(other)).toEqual({ size: 1 });
    await r.storage.delete([]);
  });

  it("lists as stale the keys last written before a time (the orphan sweep's candidates)", async () => {
    const key = newKey();
    await r.storage.write(key, Readable.from([Buffer.from('x')]), { contentType: 'text/plain', maxBytes: 1 });
    const stale = async (before: Date) => {
      const found: string[] = [];
      for await (const k of r.storage.stale(before)) found.push(k);
      return found;
    };
    expect(await stale(new Date(Date.now() - 60_000))).not.toContain(key);
    expect(await stale(new Date(Date.now() + 60_000))).toContain(key);
    await r.storage.delete([key]);
  });

  it('downloads: on S3 a presigned GET that answers an attachment of the stored type; on disk none (the service serves)', async () => {
    const key = newKey();
    const bytes = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    await r.storage.write(key, Readable.from([bytes]), { contentType: 'image/svg+xml', maxBytes: 1000 });
    const url = await r.storage.downloadRedirect(key, {
      filename: 'Résumé "final".svg',
      contentType: 'image/svg+xml',
      expiresInSeconds: 60,
    });
    if (kind === 'disk') return expect(url).toBeUndefined();
    const res = await fetch(url!);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="R_sum_ _final_.svg"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%22final%22.svg`,
    );
    expect(res.headers.get('content-type')).toBe('image/svg+xml');
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('is ready, and /readyz says so with its kind', async () => {
    await expect(r.storage.ready()).resolves.toBeUndefined();
    const res = await request(r.app.getHttpServer()).get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', storage: { kind, ok: true } });
  });
});

describe('FileStorage on S3: a store that cannot be reached', () => {
  it('fails /readyz with 503 and storage ok: false', async () => {
    const r = await start('s3');
    try {
      await r.s3!.stop();
      const res = await request(r.app.getHttpServer()).get('/readyz');
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({
        status: 'unavailable',
        checks: { database: 'ok' },
        storage: { kind: 's3', ok: false },
      });
    } finally {
      r.s3 = undefined;
      await stop(r);
    }
  });
});

describe('the disk upload endpoint', () => {
  let r: Running;
  beforeAll(async () => {
    r = await start('disk', { UPLOAD_IDLE_TIMEOUT_MS: '500' });
  });
  afterAll(() => stop(r));

  const target = (key: string, size: number, contentType = 'image/png', expiresAt = inFifteen()) =>
    r.storage.uploadTarget(key, { size, contentType, expiresAt });

  /** The answer as JSON, and that nothing was stored under the key. */
  async function refused(res: Response, status: number, code: string, key: string) {
    const body = await res.json();
    expectError(
      { status: res.status, body, headers: { 'content-type': res.headers.get('content-type') } } as never,
      status,
      code,
    );
    expect(await r.storage.head(key)).toBeUndefined();
    return body.error as { message: string; hint: string };
  }

  it('answers 200 { size }, spends the IP budget, and takes any type as raw bytes (JSON over 1 MB included)', async () => {
    const key = newKey();
    const bytes = Buffer.from(JSON.stringify({ data: 'x'.repeat(2 * 1024 * 1024) }));
    const res = await put(r, await target(key, bytes.length, 'application/json'), bytes);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ size: bytes.length });
    expect(res.headers.get('ratelimit-remaining')).toMatch(/^\d+$/);
    expect((await readAll(await r.storage.read(key))).equals(bytes)).toBe(true);
  });

  it('refuses an altered URL: another size, type or key, or a signature not its own (403)', async () => {
    const key = newKey();
    const t = await target(key, 10);
    const alter = (f: (u: URL) => void) => {
      const u = new URL(t.url);
      f(u);
      return { ...t, url: u.toString() };
    };
    const body = Buffer.alloc(10);
    for (const altered of [
      alter((u) => u.searchParams.set('size', '100000000')),
      alter((u) => u.searchParams.set('exp', String(Date.now() + 86_400_000))),
      alter((u) =>
        u.searchParams.set(
          'sig',
          u.searchParams.get('sig')!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')),
        ),
      ),
      alter((u) => u.searchParams.delete('sig')),
    ]) {
      const error = await refused(await put(r, altered, body), 403, 'forbidden', key);
      expect(error.message).toMatch(/altered/);
      expect(error.hint).toMatch(/new upload URL/);
    }
    const elsewhere = newKey();
    const moved = alter((u) => (u.pathname = `/api/v1/uploads/${elsewhere}`));
    await refused(await put(r, moved, body), 403, 'forbidden', elsewhere);
  });

  it('refuses an expired URL (403)', async () => {
    const key = newKey();
    const t = await target(key, 10, 'image/png', new Date(Date.now() - 1000));
    const error = await refused(await put(r, t, Buffer.alloc(10)), 403, 'forbidden', key);
    expect(error.message).toMatch(/expired at/);
  });

  it('refuses a Content-Type other than the one signed (403)', async () => {
    const key = newKey();
    const t = await target(key, 10, 'image/png');
    const error = await refused(
      await put(r, t, Buffer.alloc(10), { 'Content-Type': 'text/html' }),
      403,
      'forbidden',
      key,
    );
    expect(error.message).toContain('image/png');
    expect(error.hint).toContain('Content-Type: image/png');
  });

  it('refuses a body larger than signed (413): at once by its Content-Length, and where a chunked one passes the size', async () => {
    const key = newKey();
    const t = await target(key, 1000);
    const error = await refused(await put(r, t, randomBytes(1001)), 413, 'payload_too_large', key);
    expect(error.message).toContain('1000 bytes');
    // Chunked, no length: 5 MB against 1000 bytes; the answer comes, nothing is kept.
    await refused(await put(r, t, bytesStream(randomBytes(5 * 1024 * 1024))), 413, 'payload_too_large', key);
  });

  it("takes a URL's bytes once: a second PUT is refused (403) and the stored bytes stay as they were", async () => {
    const key = newKey();
    const bytes = randomBytes(1000);
    const t = await target(key, 1000);
    expect((await put(r, t, bytes)).status).toBe(200);
    const res = await put(r, t, randomBytes(1000));
    expect(res.status).toBe(403);
    const body = await res.json();
    expect(body.error).toMatchObject({ code: 'forbidden', message: expect.stringMatching(/already has its bytes/) });
    expect((await readAll(await r.storage.read(key))).equals(bytes)).toBe(true);
  });

  it('cuts a sender that stops sending: 408 request_timeout after UPLOAD_IDLE_TIMEOUT_MS, nothing kept', async () => {
    const key = newKey();
    const url = new URL((await target(key, 100_000)).url);
    const started = Date.now();
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        `${r.base}${url.pathname}${url.search}`,
        { method: 'PUT', headers: { 'Content-Type': 'image/png', 'Content-Length': '100000' } },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.on('error', reject);
      req.write(randomBytes(10_000)); // a tenth, then silence
    });
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body).error).toMatchObject({
      code: 'request_timeout',
      message: expect.stringMatching(/No bytes arrived for 0\.5 s/),
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    expect(await r.storage.head(key)).toBeUndefined();
  });

  it('stops reading a body past the size: the answer arrives while the client is still sending', async () => {
    const key = newKey();
    const t = await target(key, 1000);
    const url = new URL(t.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        `${r.base}${url.pathname}${url.search}`,
        { method: 'PUT', headers: { 'Content-Type': 'image/png' } },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
          req.destroy();
        },
      );
      req.on('error', reject);
      // More than the size, then the request is left open: only an early answer ends this test.
      req.write(randomBytes(64 * 1024));
    });
    expect(status).toBe(413);
    expect(await r.storage.head(key)).toBeUndefined();
  });

  it('is not a route when files are on S3 (the bytes go to the bucket)', async () => {
    const s3 = await start('s3');
    try {
      const res = await request(s3.app.getHttpServer()).put(`/api/v1/uploads/${newKey()}?exp=1&size=1&type=a&sig=b`);
      expect(res.status).toBe(404);
      expect(existsSync(join(s3.dataDir, 'uploads'))).toBe(false);
    } finally {
      await stop(s3);
    }
  });
});

/**
 * Uploads through the service have their own total bound (UPLOAD_REQUEST_TIMEOUT_MS), not the
 * request timeout of every other request: a slow but steady sender is received past the request
 * bound, on both upload routes (the disk upload URL, the page's multipart post); a sender that
 * stalls is still cut by the idle bound (UPLOAD_IDLE_TIMEOUT_MS, 408); any other request still
 * gets the request bound. The server is configured as main.ts does, with short bounds.
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { configureServer } from '../../src/common/http-server';
import { FileStorage, objectKey } from '../../src/storage/file-storage';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

const REQUEST_MS = 400;
const IDLE_MS = 800;
const UPLOAD_MS = 30_000;
/** 20 chunks of 600 bytes, one every 100 ms: 2 s, five times the request bound, never idle for long. */
const CHUNKS = 20;
const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(CHUNKS * 600 - 9, 0x41)]);

interface Answer {
  status: number;
  body: string;
}

/** Sends `head` then `body` in CHUNKS pieces every 100 ms; `stallAfter` pieces, then silence. */
function trickle(
  url: string,
  method: string,
  headers: Record<string, string>,
  head: Buffer,
  body: Buffer,
  stallAfter = CHUNKS,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const size = Math.ceil(body.length / CHUNKS);
    let sent = 0;
    const req = http.request(url, { method, headers }, (res) => {
      clearInterval(timer);
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        resolve({ status: res.statusCode!, body: text });
        req.destroy();
      });
    });
    req.on('error', reject);
    req.write(head);
    const timer = setInterval(() => {
      if (sent >= stallAfter) return;
      req.write(body.subarray(sent * size, (sent + 1) * size));
      if (++sent === CHUNKS) {
        clearInterval(timer);
        req.end();
      }
    }, 100);
  });
}

describe('uploads: their own total bound, the idle bound kept', () => {
  let app: NestFastifyApplication;
  let dataDir: string;
  let ws: TestWorkspace;
  let token: string;
  let base: string;
  let publicId: string;
  let blockId: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'formwork-upload-timeouts-'));
    app = await createTestApp({ DATA_DIR: dataDir, UPLOAD_IDLE_TIMEOUT_MS: String(IDLE_MS) });
    await app.listen(0, '127.0.0.1');
    configureServer(app.getHttpServer(), { requestMs: REQUEST_MS, uploadMs: UPLOAD_MS });
    base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    const created = await callTool(app, token, 'create_form', {
      title: 'Claim',
      blocks: [{ ref: 'photo', type: 'file_upload', title: 'Photo', maxSizeMb: 1 }],
    });
    expect(created.status).toBe(200);
    publicId = created.body.publicId;
    blockId = created.body.blocks[0].id;
    expect((await callTool(app, token, 'publish_form', { publicId })).status).toBe(200);
  });
  afterAll(async () => {
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const uploads = () =>
    app.get(DataSource).query(
      `SELECT u.id, u.form_id AS "formId", u.stored_size AS "storedSize", u.response_id AS "responseId"
           FROM uploads u JOIN forms f ON f.id = u.form_id WHERE f.public_id = $1 ORDER BY u.created_at`,
      [publicId],
    ) as Promise<Array<{ id: string; formId: string; storedSize: string | null; responseId: string | null }>>;
  /** The stored object of an upload, if any. */
  const stored = async (upload: { id: string; formId: string }) =>
    app.get(FileStorage).head(objectKey(ws.id, upload.formId, upload.id));

  async function uploadUrl(): Promise<{ uploadId: string; url: string; headers: Record<string, string> }> {
    const target = await callTool(app, token, 'create_upload', {
      publicId,
      block: 'photo',
      filename: 'photo.pdf',
      contentType: 'application/pdf',
      size: PDF.length,
    });
    expect(target.status).toBe(200);
    const url = new URL(target.body.url);
    return { ...target.body, url: `${base}${url.pathname}${url.search}` };
  }

  const multipart = (boundary: string) => ({
    headers: {
      'Content-Type': `multipart/form-data; boundary=${boundary}`,
    },
    head: Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${blockId}"; filename="photo.pdf"\r\n` +
        'Content-Type: application/pdf\r\n\r\n',
    ),
    tail: Buffer.from(`\r\n--${boundary}--\r\n`),
  });

  it('takes a slow but steady PUT to the disk upload URL past the request bound', async () => {
    const target = await uploadUrl();
    const started = Date.now();
    const res = await trickle(
      target.url,
      'PUT',
      { ...target.headers, 'Content-Length': String(PDF.length) },
      Buffer.alloc(0),
      PDF,
    );
    expect(Date.now() - started).toBeGreaterThan(3 * REQUEST_MS);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ size: PDF.length });
    const upload = (await uploads()).find((u) => u.id === target.uploadId)!;
    expect(upload.storedSize).toBe(String(PDF.length));
    expect(await stored(upload)).toEqual({ size: PDF.length });
  });

  it('takes a slow but steady multipart post of the page past the request bound, and stores the response', async () => {
    const before = (await uploads()).length;
    const post = multipart('formwork-slow-post');
    const body = Buffer.concat([PDF, post.tail]);
    const started = Date.now();
    const res = await trickle(
      `${base}/f/${publicId}`,
      'POST',
      { ...post.headers, 'Content-Length': String(post.head.length + body.length) },
      post.head,
      body,
    );
    expect(Date.now() - started).toBeGreaterThan(3 * REQUEST_MS);
    expect(res.status).toBe(200);
    const after = await uploads();
    expect(after).toHaveLength(before + 1);
    const upload = after[after.length - 1];
    expect(upload).toMatchObject({ storedSize: String(PDF.length), responseId: expect.any(String) });
    expect(await stored(upload)).toEqual({ size: PDF.length });
  });

  it('cuts a PUT that stalls: 408 request_timeout after the idle bound, nothing kept', async () => {
    const target = await uploadUrl();
    const started = Date.now();
    const res = await trickle(
      target.url,
      'PUT',
      { ...target.headers, 'Content-Length': String(PDF.length) },
      Buffer.alloc(0),
      PDF,
      3,
    );
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body).error.code).toBe('request_timeout');
    expect(Date.now() - started).toBeLessThan(UPLOAD_MS);
    const upload = (await uploads()).find((u) => u.id === target.uploadId)!;
    expect(upload.storedSize).toBeNull();
    expect(await stored(upload)).toBeUndefined();
  });

  it('cuts a multipart post that stalls: the 408 page after the idle bound, no upload kept', async () => {
    const before = await uploads();
    const post = multipart('formwork-stalled-post');
    const body = Buffer.concat([PDF, post.tail]);
    const res = await trickle(
      `${base}/f/${publicId}`,
      'POST',
      { ...post.headers, 'Content-Length': String(post.head.length + body.length) },
      post.head,
      body,
      3,
    );
    expect(res.status).toBe(408);
    expect(await uploads()).toEqual(before);
  });

  it('keeps the request bound for every other request: a trickled tool call is cut with 408', async () => {
    const json = Buffer.from(JSON.stringify({ filler: 'x'.repeat(3000) }));
    const res = await trickle(
      `${base}/api/v1/tools/list_forms`,
      'POST',
      { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Content-Length': String(json.length) },
      Buffer.alloc(0),
      json,
    );
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body).error).toMatchObject({
      code: 'request_timeout',
      hint: expect.stringContaining('0.4 seconds'),
    });
  });
});

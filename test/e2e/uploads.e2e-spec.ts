/**
 * Uploads (issue 35, part U): create_upload, then the bytes PUT where it says, then create_response
 * naming the upload, on disk and on an S3-protocol server (s3rver, on the PostgreSQL server run).
 * Every bad input of the issue is refused with a 4xx and stores nothing; deleting a response, a
 * form, and the 24-hour sweep leave no object behind (listed after); another workspace can neither
 * attach nor delete an upload.
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { ResponsesService } from '../../src/responses/responses.service';
import { FileStorage } from '../../src/storage/file-storage';
import { UploadsService } from '../../src/uploads/uploads.service';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';
import { startS3, TestS3 } from '../utils/s3';

const onServer = process.env.FORMWORK_TEST_DATABASE_KIND === 'server';
const kinds = onServer ? (['disk', 's3'] as const) : (['disk'] as const);

const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(2000, 0x20)]);
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
const EXE = Buffer.concat([Buffer.from('MZ\x90\x00\x03\x00\x00\x00'), Buffer.alloc(500, 1)]);
const HTML = Buffer.from('<!DOCTYPE html><html><body><script>alert(document.cookie)</script></body></html>');

describe.each(kinds)('uploads on %s', (kind) => {
  let app: NestFastifyApplication;
  let base: string;
  let dataDir: string;
  let s3: TestS3 | undefined;
  let storage: FileStorage;
  let db: DataSource;
  let ws: TestWorkspace;
  let token: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'formwork-uploads-'));
    s3 = kind === 's3' ? await startS3() : undefined;
    app = await createTestApp({ DATA_DIR: dataDir, ...(s3?.env ?? {}) });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    storage = app.get(FileStorage);
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws)).token;
  });
  afterAll(async () => {
    await app?.close();
    await s3?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const fileForm = (w = ws, accept?: string[]) =>
    createForm(app, w, {
      status: 'published',
      blocks: [
        { type: 'short_text', title: 'Name', ref: 'name' } as never,
        { type: 'file_upload', title: 'CV', ref: 'cv', maxSizeMb: 1, ...(accept ? { accept } : {}) } as never,
        { type: 'file_upload', title: 'Photos', ref: 'photos', maxFiles: 3 } as never,
      ],
    });

  /** Every key under the workspace, from the store itself. */
  async function objects(w = ws): Promise<string[]> {
    const found: string[] = [];
    for await (const key of storage.list(`${w.id}/`)) found.push(key);
    return found.sort();
  }
  const rows = (where: string, params: unknown[]) =>
    db.query(`SELECT id, name, response_id AS "responseId" FROM uploads WHERE ${where}`, params);

  /** create_upload, then PUT `bytes` where it says (the service's own URL reached at the listening address). */
  async function upload(
    publicId: string,
    block: string,
    bytes: Buffer,
    o: { filename?: string; contentType?: string; size?: number; token?: string } = {},
  ): Promise<{ uploadId: string; put: number; again: () => Promise<Response>; answer: string }> {
    const res = await callTool(app, o.token ?? token, 'create_upload', {
      publicId,
      block,
      filename: o.filename ?? 'cv.pdf',
      contentType: o.contentType ?? 'application/pdf',
      size: o.size ?? bytes.length,
    });
    expect(res.status).toBe(200);
    const url = new URL(res.body.url);
    const address = kind === 'disk' ? `${base}${url.pathname}${url.search}` : res.body.url;
    const send = () => fetch(address, { method: 'PUT', headers: res.body.headers, body: new Uint8Array(bytes) });
    const put = await send();
    return { uploadId: res.body.uploadId, put: put.status, again: send, answer: await put.text() };
  }

  it('takes a file: create_upload, PUT, create_response names it; the upload is held by the response', async () => {
    const form = await fileForm();
    const res = await callTool(app, token, 'create_upload', {
      publicId: form.publicId,
      block: 'cv',
      filename: 'cv.pdf',
      contentType: 'application/pdf',
      size: PDF.length,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      uploadId: expect.stringMatching(/^upl_[0-9A-Za-z]{22}$/),
      url: expect.any(String),
      method: 'PUT',
      headers: expect.objectContaining({ 'Content-Type': 'application/pdf' }),
      expiresAt: expect.any(String),
    });
    // A presigned S3 URL cannot be revoked: it is short (issue 45, item 6.5).
    const minutes = (Date.parse(res.body.expiresAt) - Date.now()) / 60_000;
    const expiry = kind === 's3' ? 5 : 15;
    expect(minutes).toBeGreaterThan(expiry - 1);
    expect(minutes).toBeLessThanOrEqual(expiry);
    const url = new URL(res.body.url);
    const put = await fetch(kind === 'disk' ? `${base}${url.pathname}${url.search}` : res.body.url, {
      method: 'PUT',
      headers: res.body.headers,
      body: PDF,
    });
    expect(put.status).toBe(200);
    const photo = await upload(form.publicId, 'photos', PNG, { filename: 'a.png', contentType: 'image/png' });

    // A single id for a one-file block; a list for the other; by ref.
    const created = await callTool(app, token, 'create_response', {
      publicId: form.publicId,
      answers: { name: 'Ada', cv: res.body.uploadId, photos: [photo.uploadId] },
    });
    expect(created.status).toBe(200);
    const held = await rows('id = ANY($1)', [[res.body.uploadId, photo.uploadId]]);
    expect(held.map((r: { responseId: string }) => r.responseId)).toEqual([created.body.id, created.body.id]);
    const [stored] = await db.query(`SELECT answers FROM responses WHERE id = $1`, [created.body.id]);
    const [cv, photos] = form.blocks.slice(1).map((b) => b.id);
    expect(stored.answers).toMatchObject({ [cv]: [res.body.uploadId], [photos]: [photo.uploadId] });
    expect(await objects()).toEqual(
      expect.arrayContaining([`${ws.id}/${form.id}/${res.body.uploadId}`, `${ws.id}/${form.id}/${photo.uploadId}`]),
    );
  });

  /** create_response naming `answers` is refused at /answers/<key>, and nothing is stored. */
  async function refused(publicId: string, formId: string, answers: Record<string, unknown>, key: string) {
    const res = await callTool(app, token, 'create_response', { publicId, answers });
    const error = expectError(res, 400, 'invalid_arguments');
    expect(error.details?.map((d) => d.path)).toContain(`/answers/${key}`);
    const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM responses WHERE form_id = $1`, [formId]);
    expect(n).toBe(0);
    return error;
  }

  it('refuses a declared size over the block or plan limit, and a type outside accept, storing nothing', async () => {
    const form = await fileForm(ws, ['application/pdf', '.docx']);
    const ask = (args: Record<string, unknown>) =>
      callTool(app, token, 'create_upload', {
        publicId: form.publicId,
        block: 'cv',
        filename: 'cv.pdf',
        contentType: 'application/pdf',
        size: 100,
        ...args,
      });
    const tooBig = expectError(await ask({ size: 1024 * 1024 + 1 }), 400, 'invalid_arguments');
    expect(tooBig.details).toEqual([{ path: '/size', message: expect.stringContaining('1 MB') }]);
    expect(tooBig.hint).toMatch(/maxSizeMb/);
    const wrongType = expectError(await ask({ contentType: 'image/png', filename: 'a.png' }), 400, 'invalid_arguments');
    expect(wrongType.details?.[0].path).toBe('/contentType');
    expect(wrongType.hint).toContain('application/pdf, .docx');
    expectError(await ask({ contentType: 'not a type' }), 400, 'invalid_arguments');
    expectError(await ask({ block: 'name' }), 400, 'invalid_arguments');
    expect((await ask({ contentType: 'application/msword', filename: 'cv.docx' })).status).toBe(200);
    // The plan's limit: Free takes 10 MB per file whatever the block says.
    const free = await createWorkspace(app, 'free');
    const freeForm = await createForm(app, free, {
      blocks: [{ type: 'file_upload', title: 'Video', maxSizeMb: 100 } as never],
    });
    const uploads = app.get(UploadsService);
    const input = {
      workspaceId: free.id,
      plan: 'free' as const,
      form: freeForm,
      block: freeForm.blocks[0].id,
      filename: 'v.mp4',
      contentType: 'video/mp4',
    };
    await expect(uploads.create({ ...input, size: 10 * 1024 * 1024 + 1 })).rejects.toMatchObject({
      code: 'invalid_arguments',
      details: [{ path: '/size' }],
    });
    await expect(uploads.create({ ...input, size: 10 * 1024 * 1024 })).resolves.toBeDefined();
    expect(await rows('form_id = $1 AND size > 1000', [form.id])).toEqual([]);
  });

  it('refuses bytes that contradict the declared type: an .exe named .pdf, HTML named .png', async () => {
    const form = await fileForm();
    const exe = await upload(form.publicId, 'cv', EXE);
    const e1 = await refused(form.publicId, form.id, { cv: exe.uploadId }, 'cv');
    expect(e1.details![0].message).toMatch(/exe/);
    expect(e1.hint).toMatch(/Declare the type/);
    const html = await upload(form.publicId, 'photos', HTML, { filename: 'cat.png', contentType: 'image/png' });
    const e2 = await refused(form.publicId, form.id, { photos: [html.uploadId] }, 'photos');
    expect(e2.details![0].message).toMatch(/HTML/);
    // Declared as HTML but named .png: refused at once (the name would present it as an image).
    const html2 = await callTool(app, token, 'create_upload', {
      publicId: form.publicId,
      block: 'photos',
      filename: 'cat.png',
      contentType: 'text/html',
      size: HTML.length,
    });
    expect(expectError(html2, 400, 'invalid_arguments').details![0].path).toBe('/filename');
    // Nothing held: both still pending.
    const pending = await rows('form_id = $1 AND response_id IS NULL', [form.id]);
    expect(pending).toHaveLength(2);
  });

  it('refuses a PUT larger or smaller than declared, and an upload never PUT', async () => {
    const form = await fileForm();
    const larger = await upload(form.publicId, 'cv', PDF, { size: PDF.length - 10 });
    if (larger.put === 200) await refused(form.publicId, form.id, { cv: larger.uploadId }, 'cv');
    else expect(larger.put).toBe(413); // the disk endpoint stops reading past the signed size
    const smaller = await upload(form.publicId, 'cv', PDF, { size: PDF.length + 10 });
    expect(smaller.put).toBe(kind === 'disk' ? 422 : 200); // the disk endpoint checks what arrived at once
    const e = await refused(form.publicId, form.id, { cv: smaller.uploadId }, 'cv');
    expect(e.details![0].message).toContain(`${PDF.length} bytes`);
    const never = await callTool(app, token, 'create_upload', {
      publicId: form.publicId,
      block: 'cv',
      filename: 'cv.pdf',
      contentType: 'application/pdf',
      size: 10,
    });
    const e2 = await refused(form.publicId, form.id, { cv: never.body.uploadId }, 'cv');
    expect(e2.details![0].message).toMatch(/no bytes stored/);
  });

  it('S3: a seal (copy) that fails is 503 with nothing stored, the upload still pending; a cleanup that fails refuses nothing', async () => {
    if (kind !== 's3') return expect(storage.kind).toBe('disk'); // disk bytes are checked as they arrive: no seal
    const form = await fileForm();
    const a = await upload(form.publicId, 'cv', PDF);
    const seal = jest.spyOn(storage, 'seal').mockRejectedValueOnce(new Error('socket hang up'));
    try {
      const res = await callTool(app, token, 'create_response', {
        publicId: form.publicId,
        answers: { cv: a.uploadId },
      });
      expectError(res, 503, 'service_unavailable');
      expect(res.headers['retry-after']).toBe('5');
      expect(await db.query('SELECT id FROM responses WHERE form_id = $1', [form.id])).toEqual([]);
      expect(await rows('id = $1', [a.uploadId])).toEqual([expect.objectContaining({ responseId: null })]);
    } finally {
      seal.mockRestore();
    }
    // The copy made, the removal of `.upload` failing: the response is taken from the sealed copy.
    const del = jest.spyOn(storage, 'delete').mockRejectedValueOnce(new Error('socket hang up'));
    try {
      const res = await callTool(app, token, 'create_response', {
        publicId: form.publicId,
        answers: { cv: a.uploadId },
      });
      expect(res.status).toBe(200);
    } finally {
      del.mockRestore();
    }
    expect(await objects()).toEqual(expect.arrayContaining([`${ws.id}/${form.id}/${a.uploadId}`]));
  });

  it('check_response refuses the uploads create_response would (foreign, unknown, other block, held) and holds nothing', async () => {
    const form = await fileForm();
    const otherWs = await createWorkspace(app, 'pro');
    const theirs = await upload((await fileForm(otherWs)).publicId, 'cv', PDF, {
      token: (await createToken(app, otherWs)).token,
    });
    const photos = await upload(form.publicId, 'photos', PDF);
    const mine = await upload(form.publicId, 'cv', PDF);
    const check = async (cv: string) => {
      const res = await callTool(app, token, 'check_response', { publicId: form.publicId, answers: { cv } });
      expect(res.status).toBe(200);
      return res.body as { ok: boolean; errors: Array<{ code: string; path: string; message: string }> };
    };
    for (const [id, said] of [
      [theirs.uploadId, /no such upload exists/],
      [`upl_${'z'.repeat(22)}`, /no such upload exists/],
      [photos.uploadId, /another block/],
    ] as const) {
      const checked = await check(id);
      expect(checked.ok).toBe(false);
      expect(checked.errors).toEqual([
        expect.objectContaining({
          code: 'invalid_arguments',
          path: '/answers/cv',
          message: expect.stringMatching(said),
        }),
      ]);
    }
    // A dry run holds nothing: the upload is still free for the response that names it.
    expect((await check(mine.uploadId)).ok).toBe(true);
    expect(await rows('id = $1 AND response_id IS NULL', [mine.uploadId])).toHaveLength(1);
    const created = await callTool(app, token, 'create_response', {
      publicId: form.publicId,
      answers: { cv: mine.uploadId },
    });
    expect(created.status).toBe(200);
    expect((await check(mine.uploadId)).errors).toEqual([
      expect.objectContaining({ path: '/answers/cv', message: expect.stringMatching(/already held/) }),
    ]);
  });

  it('refuses an upload of another workspace, form or block, and one already held by a response', async () => {
    const form = await fileForm();
    const other = await fileForm();
    const otherWs = await createWorkspace(app, 'pro');
    const otherToken = (await createToken(app, otherWs)).token;
    const theirForm = await fileForm(otherWs);
    const theirs = await upload(theirForm.publicId, 'cv', PDF, { token: otherToken });
    const e = await refused(form.publicId, form.id, { cv: theirs.uploadId }, 'cv');
    expect(e.details![0].message).toMatch(/no such upload exists/);
    const otherForms = await upload(other.publicId, 'cv', PDF);
    await refused(form.publicId, form.id, { cv: otherForms.uploadId }, 'cv');
    const photos = await upload(form.publicId, 'photos', PDF);
    const e2 = await refused(form.publicId, form.id, { cv: photos.uploadId }, 'cv');
    expect(e2.details![0].message).toMatch(/another block/);
    // The same upload named by a second response.
    const mine = await upload(form.publicId, 'cv', PDF);
    const first = await callTool(app, token, 'create_response', {
      publicId: form.publicId,
      answers: { cv: mine.uploadId },
    });
    expect(first.status).toBe(200);
    const second = await callTool(app, token, 'create_response', {
      publicId: form.publicId,
      answers: { cv: mine.uploadId },
    });
    expect(expectError(second, 400, 'invalid_arguments').details![0].message).toMatch(/already held/);
    // A malformed id, and two ids in a one-file block, are refused by the block's answer check.
    await refused(other.publicId, other.id, { cv: 'upl_../../etc/passwd' }, 'cv');
    await refused(other.publicId, other.id, { cv: [otherForms.uploadId, mine.uploadId] }, 'cv');
    // Their upload is still theirs, pending, its object in place.
    expect(await rows('id = $1 AND response_id IS NULL', [theirs.uploadId])).toHaveLength(1);
    // (On S3 a PUT's bytes wait under `<key>.upload` until a response names the upload.)
    const suffix = kind === 's3' ? '.upload' : '';
    expect(await objects(otherWs)).toEqual([`${otherWs.id}/${theirForm.id}/${theirs.uploadId}${suffix}`]);
  });

  it('holds an upload for one response only when several name it at once; an id named twice in one answer is refused', async () => {
    const form = await fileForm();
    const shared = await upload(form.publicId, 'photos', PNG, { filename: 'a.png', contentType: 'image/png' });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, n) =>
        callTool(app, token, 'create_response', {
          publicId: form.publicId,
          answers: { name: `racer ${n}`, photos: [shared.uploadId] },
        }),
      ),
    );
    const stored = answers.filter((r) => r.status === 200);
    expect(stored).toHaveLength(1);
    for (const r of answers.filter((a) => a.status !== 200))
      expect(expectError(r, 400, 'invalid_arguments').details![0].message).toMatch(/already held/);
    expect(await rows('id = $1', [shared.uploadId])).toEqual([
      expect.objectContaining({ responseId: stored[0].body.id }),
    ]);
    const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM responses WHERE form_id = $1`, [form.id]);
    expect(n).toBe(1);
    // One answer naming the same pending upload twice.
    const twice = await upload(form.publicId, 'photos', PNG, { filename: 'b.png', contentType: 'image/png' });
    const again = await callTool(app, token, 'create_response', {
      publicId: form.publicId,
      answers: { photos: [twice.uploadId, twice.uploadId] },
    });
    expectError(again, 400, 'invalid_arguments');
    expect(await rows('id = $1 AND response_id IS NULL', [twice.uploadId])).toHaveLength(1);
  });

  it('replays a keyed submission naming a file, holding the file once', async () => {
    const form = await fileForm();
    const cv = await upload(form.publicId, 'cv', PDF);
    const args = { publicId: form.publicId, answers: { name: 'Keyed', cv: cv.uploadId } };
    const key = `file-${cv.uploadId}`;
    const first = await callTool(app, token, 'create_response', args, { 'Idempotency-Key': key });
    expect(first.status).toBe(200);
    const again = await callTool(app, token, 'create_response', args, { 'Idempotency-Key': key });
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect(await rows('id = $1', [cv.uploadId])).toEqual([expect.objectContaining({ responseId: first.body.id })]);
  });

  it('cleans a filename of 5,000 characters, with ../, an RTL override or a NUL, before it reaches a path or a row', async () => {
    const form = await fileForm();
    const names = [`${'a'.repeat(5000)}.pdf`, '../../etc/passwd.pdf', 'invoice\u202Efdp.exe', 'a\u0000b.pdf'];
    for (const filename of names) {
      const res = await callTool(app, token, 'create_upload', {
        publicId: form.publicId,
        block: 'cv',
        filename,
        contentType: 'application/pdf',
        size: PDF.length,
      });
      if (res.status !== 200) {
        expectError(res, 400, 'invalid_arguments'); // refusing is fine too (JSON with a NUL)
        continue;
      }
      const [row] = await rows('id = $1', [res.body.uploadId]);
      expect(row.name.length).toBeLessThanOrEqual(255);
      for (const bad of ['/', '\\', '\u0000', '\u202E']) expect(row.name).not.toContain(bad);
      expect(row.name === filename).toBe(false);
      if (filename.startsWith('aaa')) expect(row.name).toMatch(/^a+\.pdf$/);
      // The object key is the upload's id, never the name.
      expect(new URL(res.body.url).pathname + res.body.url).not.toContain('passwd');
    }
  });

  it('deletes the objects with the response, with the form, and with the 24-hour sweep; another workspace deletes nothing', async () => {
    const form = await fileForm();
    const a = await upload(form.publicId, 'cv', PDF);
    const created = await callTool(app, token, 'create_response', {
      publicId: form.publicId,
      answers: { cv: a.uploadId },
    });
    expect(created.status).toBe(200);
    const keyA = `${ws.id}/${form.id}/${a.uploadId}`;
    expect(await objects()).toContain(keyA);

    // Another workspace cannot delete it: 404, and the object stays.
    const otherWs = await createWorkspace(app, 'pro');
    const otherToken = (await createToken(app, otherWs)).token;
    const theirs = await callTool(app, otherToken, 'delete_response', {
      publicId: form.publicId,
      responseId: created.body.id,
    });
    expectError(theirs, 404, 'not_found');
    expect(await objects()).toContain(keyA);

    expect(
      (await callTool(app, token, 'delete_response', { publicId: form.publicId, responseId: created.body.id })).status,
    ).toBe(200);
    expect(await objects()).not.toContain(keyA);
    expect(await rows('id = $1', [a.uploadId])).toEqual([]);

    // delete_form: held and pending uploads alike.
    const form2 = await fileForm();
    const held = await upload(form2.publicId, 'cv', PDF);
    await callTool(app, token, 'create_response', { publicId: form2.publicId, answers: { cv: held.uploadId } });
    await upload(form2.publicId, 'photos', PNG, { filename: 'p.png', contentType: 'image/png' });
    expect((await objects()).filter((k) => k.includes(form2.id))).toHaveLength(2);
    expect((await callTool(app, token, 'delete_form', { publicId: form2.publicId })).status).toBe(200);
    expect((await objects()).filter((k) => k.includes(form2.id))).toEqual([]);

    // The sweep: an upload no response named within 24 hours goes; a held one stays.
    const form3 = await fileForm();
    const pending = await upload(form3.publicId, 'cv', PDF);
    const kept = await upload(form3.publicId, 'photos', PNG, { filename: 'p.png', contentType: 'image/png' });
    await callTool(app, token, 'create_response', { publicId: form3.publicId, answers: { photos: [kept.uploadId] } });
    const uploads = app.get(UploadsService);
    await uploads.sweep(new Date(Date.now() + 23 * 3600_000));
    expect((await objects()).filter((k) => k.includes(form3.id))).toHaveLength(2);
    expect(await uploads.sweep(new Date(Date.now() + 25 * 3600_000))).toBeGreaterThanOrEqual(1);
    expect((await objects()).filter((k) => k.includes(form3.id))).toEqual([`${ws.id}/${form3.id}/${kept.uploadId}`]);
    expect(await rows('id = $1', [pending.uploadId])).toEqual([]);
  });

  it('takes bytes streamed through the service (the page without JavaScript), stopping at the limit with 413 and nothing kept', async () => {
    const form = await fileForm();
    const uploads = app.get(UploadsService);
    const input = {
      workspaceId: ws.id,
      plan: 'pro' as const,
      form,
      block: 'cv',
      filename: 'cv.pdf',
      contentType: 'application/pdf',
    };
    const ok = await uploads.createFromStream(input, Readable.from([PDF]));
    expect(ok).toEqual({ uploadId: expect.stringMatching(/^upl_/), size: PDF.length });
    expect(await objects()).toContain(`${ws.id}/${form.id}/${ok.uploadId}`);
    // What the service saw of the bytes is on the row: naming the upload reads no object.
    const [seen] = await db.query(
      `SELECT stored_size::int AS size, type_problem AS problem FROM uploads WHERE id = $1`,
      [ok.uploadId],
    );
    expect(seen).toEqual({ size: PDF.length, problem: null });
    // Bytes that contradict the declared type are refused at once, and nothing is kept.
    const objectsBefore = await objects();
    await expect(uploads.createFromStream(input, Readable.from([EXE]))).rejects.toMatchObject({
      code: 'invalid_arguments',
      message: expect.stringMatching(/exe/i),
    });
    expect(await objects()).toEqual(objectsBefore);
    expect(await rows('form_id = $1 AND response_id IS NULL', [form.id])).toEqual([
      expect.objectContaining({ id: ok.uploadId }),
    ]);
    const named = await callTool(app, token, 'create_response', {
      publicId: form.publicId,
      answers: { cv: ok.uploadId },
    });
    expect(named.status).toBe(200);
    // cv takes 1 MB: a stream of 2 MB is stopped, and leaves neither a row nor an object.
    const before = await objects();
    const big = Readable.from(
      (function* () {
        for (let i = 0; i < 32; i++) yield Buffer.alloc(65536, 0x41);
      })(),
    );
    await expect(uploads.createFromStream(input, big)).rejects.toMatchObject({
      code: 'payload_too_large',
      status: 413,
    });
    expect(await objects()).toEqual(before);
    expect(await rows('form_id = $1 AND response_id IS NULL', [form.id])).toEqual([]);
  });

  it('checks and holds the files an import names (ResponsesService.create), as a submission does', async () => {
    const form = await fileForm();
    const other = await fileForm();
    const responses = app.get(ResponsesService);
    const [, cv] = form.blocks;
    const theirs = await upload(other.publicId, 'cv', PDF);
    await expect(responses.create(form, { [cv.id]: theirs.uploadId }, { source: 'import' })).rejects.toMatchObject({
      code: 'invalid_arguments',
    });
    const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM responses WHERE form_id = $1`, [form.id]);
    expect(n).toBe(0);
    const mine = await upload(form.publicId, 'cv', PDF);
    const imported = await responses.create(form, { [cv.id]: mine.uploadId }, { source: 'import' });
    expect(await rows('id = $1', [mine.uploadId])).toEqual([expect.objectContaining({ responseId: imported.id })]);
  });

  it('create_upload over MCP (both revisions): the same answer in structuredContent, and its upload is taken', async () => {
    const form = await fileForm();
    const args = {
      publicId: form.publicId,
      block: 'cv',
      filename: 'cv.pdf',
      contentType: 'application/pdf',
      size: PDF.length,
    };
    const mcp = (version: string) => {
      const req = request(app.getHttpServer())
        .post('/mcp')
        .set('Accept', 'application/json, text/event-stream')
        .set('Content-Type', 'application/json')
        .set('Authorization', `Bearer ${token}`)
        .set('MCP-Protocol-Version', version);
      const params: Record<string, unknown> = { name: 'create_upload', arguments: args };
      if (version === '2026-07-28') {
        req.set('Mcp-Method', 'tools/call').set('Mcp-Name', 'create_upload');
        params._meta = {
          'io.modelcontextprotocol/protocolVersion': version,
          'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': {},
        };
      }
      return req.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }));
    };
    for (const version of ['2025-11-25', '2026-07-28']) {
      const res = await mcp(version);
      expect(res.status).toBe(200);
      const created = res.body.result.structuredContent;
      expect(created).toMatchObject({ uploadId: expect.stringMatching(/^upl_/), method: 'PUT' });
      expect(JSON.parse(res.body.result.content[0].text)).toEqual(created);
      const url = new URL(created.url);
      const put = await fetch(kind === 'disk' ? `${base}${url.pathname}${url.search}` : created.url, {
        method: 'PUT',
        headers: created.headers,
        body: PDF,
      });
      expect(put.status).toBe(200);
      const named = await callTool(app, token, 'create_response', {
        publicId: form.publicId,
        answers: { cv: created.uploadId },
      });
      expect(named.status).toBe(200);
    }
  });

  it('keeps a held file as it was checked: a PUT to its URL afterwards changes nothing (disk: 403)', async () => {
    const form = await fileForm();
    const res = await callTool(app, token, 'create_upload', {
      publicId: form.publicId,
      block: 'cv',
      filename: 'cv.pdf',
      contentType: 'application/pdf',
      size: PDF.length,
    });
    const url = new URL(res.body.url);
    const address = kind === 'disk' ? `${base}${url.pathname}${url.search}` : res.body.url;
    const putBytes = (body: Buffer) =>
      fetch(address, { method: 'PUT', headers: res.body.headers, body: new Uint8Array(body) });
    expect((await putBytes(PDF)).status).toBe(200);
    if (kind === 'disk') {
      // The disk endpoint recorded what it stored: naming the upload is a row check.
      const [seen] = await db.query(`SELECT stored_size::int AS size FROM uploads WHERE id = $1`, [res.body.uploadId]);
      expect(seen.size).toBe(PDF.length);
    }
    const named = await callTool(app, token, 'create_response', {
      publicId: form.publicId,
      answers: { cv: res.body.uploadId },
    });
    expect(named.status).toBe(200);
    // Within the URL's 15 minutes, other bytes of the same size: an HTML page instead of the PDF.
    const swap = Buffer.concat([HTML, Buffer.alloc(PDF.length - HTML.length, 0x20)]);
    const again = await putBytes(swap);
    if (kind === 'disk') {
      expect(again.status).toBe(403);
      expect((await again.json()).error.message).toMatch(/already has its bytes/);
    } else expect(again.status).toBe(200); // s3rver takes it, under `<key>.upload`, where nothing reads it
    const stream = await storage.read(`${ws.id}/${form.id}/${res.body.uploadId}`);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(PDF)).toBe(true);
    // The download link serves the checked bytes too.
    const got = await callTool(app, token, 'get_response', { publicId: form.publicId, responseId: named.body.id });
    const [cvId] = form.blocks.slice(1).map((b) => b.id);
    const link = new URL(got.body.answers[cvId][0].url);
    const download = await fetch(`${base}${link.pathname}${link.search}`);
    expect(Buffer.from(await download.arrayBuffer()).equals(PDF)).toBe(true);
    // Deleting the response leaves nothing, the late PUT's bytes included.
    await callTool(app, token, 'delete_response', { publicId: form.publicId, responseId: named.body.id });
    expect((await objects()).filter((k) => k.includes(res.body.uploadId))).toEqual([]);
  });

  it('sweeps objects older than 24 hours that no row names (a failed transaction, a late PUT), and nothing else', async () => {
    const form = await fileForm();
    const uploads = app.get(UploadsService);
    const write = (key: string) =>
      storage.write(key, Readable.from([PDF]), { contentType: 'application/pdf', maxBytes: PDF.length });
    // An object whose row never committed, beside a pending and a held upload.
    const orphan = `${ws.id}/${form.id}/upl_${'o'.repeat(22)}`;
    await write(orphan);
    const pending = await upload(form.publicId, 'photos', PNG, { filename: 'p.png', contentType: 'image/png' });
    const held = await upload(form.publicId, 'cv', PDF);
    expect(
      (await callTool(app, token, 'create_response', { publicId: form.publicId, answers: { cv: held.uploadId } }))
        .status,
    ).toBe(200);
    // S3: bytes PUT to a held upload's URL after its response took it land beside, never read.
    const late = `${ws.id}/${form.id}/${held.uploadId}.upload`;
    if (kind === 's3') await write(late);
    // Disk: what a crash left of a write in progress (`<key>.part`; the write's own name for it).
    const part = `${ws.id}/${form.id}/${pending.uploadId}.part`;
    if (kind === 'disk') writeFileSync(join(dataDir, 'uploads', ...part.split('/')), PDF.subarray(0, 10));
    // An object of another shape (another application's, in a shared bucket or folder) is never touched.
    const foreign = `${ws.id}/not-ours/readme`;
    await write(foreign);
    const ours = () => objects().then((all) => all.filter((k) => k.includes(form.id) || k === foreign));
    const before = await ours();
    // Younger than 24 hours: kept, but S3's late PUT, which no upload waits for, goes whatever its age.
    await uploads.sweepOrphans(new Date(Date.now() + 23 * 3600_000));
    expect(await ours()).toEqual(before.filter((k) => k !== late));
    expect(await uploads.sweepOrphans(new Date(Date.now() + 25 * 3600_000))).toBeGreaterThanOrEqual(1);
    const after = await ours();
    expect(after).not.toContain(orphan);
    expect(after).toEqual(before.filter((k) => k !== orphan && k !== late && k !== part));
    expect(after).toContain(`${ws.id}/${form.id}/${held.uploadId}`);
    expect(after.some((k) => k.includes(pending.uploadId))).toBe(true);
    expect(after).toContain(foreign);
    await storage.delete([foreign]);
  });

  it('keeps the objects when the transaction that deleted their rows rolls back', async () => {
    const form = await fileForm();
    const a = await upload(form.publicId, 'cv', PDF);
    const created = await callTool(app, token, 'create_response', {
      publicId: form.publicId,
      answers: { cv: a.uploadId },
    });
    const uploads = app.get(UploadsService);
    await expect(
      db.transaction(async (tx) => {
        await uploads.deleteForResponses(tx, [created.body.id]);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await objects()).toContain(`${ws.id}/${form.id}/${a.uploadId}`);
    expect(await rows('id = $1', [a.uploadId])).toHaveLength(1);
  });

  describe('issue 45: what the attacker and the agent found', () => {
    const putRefused = (sent: { put: number; answer: string }) => {
      // Disk: the PUT endpoint checks the bytes once they are in (422); S3's go to the bucket unseen (200).
      if (kind === 's3') return expect(sent.put).toBe(200);
      expect(sent.put).toBe(422);
      return expect(JSON.parse(sent.answer).error.code).toBe('file_refused');
    };

    it('6.3: refuses markup that is not declared, named and accepted as markup, by its name, its type or its bytes', async () => {
      const form = await fileForm();
      const ask = (filename: string, contentType: string, size = 100, block = 'photos') =>
        callTool(app, token, 'create_upload', { publicId: form.publicId, block, filename, contentType, size });
      // The four: a markup name, or a markup type the block does not list, is refused at once.
      for (const [filename, contentType] of [
        ['page.xml', 'application/xml'],
        ['page.html', 'text/plain'],
        ['photo.html', 'image/png'],
        ['logo.svg', 'application/octet-stream'],
        ['page.html', 'text/html'], // declared and named, but the block does not list HTML
        ['cv.pdf', 'image/svg+xml'],
      ]) {
        const res = await ask(filename, contentType);
        const error = expectError(res, 400, 'invalid_arguments');
        expect(error.details![0].path).toBe('/filename');
      }
      // Markup in bytes under innocent names and types: refused when they arrive, and never attached.
      const xhtml = Buffer.from(
        '<?xml version="1.0"?>\n<x:html xmlns:x="http://www.w3.org/1999/xhtml"><x:body onload="alert(1)"/></x:html>',
      );
      const div = Buffer.from('<div><img src=x onerror="alert(document.cookie)"></div>');
      const polyglot = Buffer.concat([PNG, Buffer.alloc(40, 0), Buffer.from('<html><script>alert(1)</script>')]);
      const svg = Buffer.from('<svg:svg xmlns:svg="http://www.w3.org/2000/svg" onload="alert(1)"/>');
      for (const [bytes, filename, contentType] of [
        [xhtml, 'page.txt', 'application/octet-stream'],
        [div, 'notes.txt', 'text/plain'],
        [polyglot, 'photo.png', 'image/png'],
        [svg, 'logo.bin', 'application/octet-stream'],
      ] as const) {
        const sent = await upload(form.publicId, 'photos', bytes, { filename, contentType });
        putRefused(sent);
        const checked = await callTool(app, token, 'check_response', {
          publicId: form.publicId,
          answers: { photos: [sent.uploadId] },
        });
        expect(checked.body.ok).toBe(false);
        const e = await refused(form.publicId, form.id, { photos: [sent.uploadId] }, 'photos');
        expect(e.details![0].message).toMatch(/HTML|SVG/);
      }
      // An SVG declared and named as one, where the block lists it, is taken.
      const svgForm = await createForm(app, ws, {
        status: 'published',
        blocks: [{ type: 'file_upload', title: 'Logo', ref: 'logo', accept: ['image/svg+xml'] } as never],
      });
      const logo = await upload(svgForm.publicId, 'logo', svg, { filename: 'logo.svg', contentType: 'image/svg+xml' });
      expect(logo.put).toBe(200);
      const taken = await callTool(app, token, 'create_response', {
        publicId: svgForm.publicId,
        answers: { logo: logo.uploadId },
      });
      expect(taken.status).toBe(200);
    });

    it('6.4: attaching checks the block as it is now: files uploaded before accept and maxSizeMb tightened are refused', async () => {
      const form = await createForm(app, ws, {
        status: 'published',
        blocks: [
          {
            type: 'file_upload',
            title: 'CV',
            ref: 'cv',
            maxSizeMb: 5,
            accept: ['application/pdf', 'text/html'],
          } as never,
        ],
      });
      const big = Buffer.concat([PDF, Buffer.alloc(3 * 1024 * 1024, 0x20)]);
      const html = await upload(form.publicId, 'cv', HTML, { filename: 'page.html', contentType: 'text/html' });
      const large = await upload(form.publicId, 'cv', big, { filename: 'big.pdf' });
      const small = await upload(form.publicId, 'cv', PDF);
      expect([html.put, large.put, small.put]).toEqual([200, 200, 200]);
      const read = (await callTool(app, token, 'get_form', { publicId: form.publicId })).body;
      const tightened = await callTool(app, token, 'update_form', {
        publicId: form.publicId,
        version: read.version,
        blocks: [{ ...read.blocks[0], accept: ['application/pdf'], maxSizeMb: 1 }],
      });
      expect(tightened.status).toBe(200);
      for (const [sent, said] of [
        [html, /not a type this block takes/],
        [large, /limit of 1 MB/],
      ] as const) {
        const checked = await callTool(app, token, 'check_response', {
          publicId: form.publicId,
          answers: { cv: sent.uploadId },
        });
        expect(checked.body).toMatchObject({
          ok: false,
          errors: [{ code: 'invalid_arguments', path: '/answers/cv', message: expect.stringMatching(said) }],
        });
        const e = await refused(form.publicId, form.id, { cv: sent.uploadId }, 'cv');
        expect(e.details![0].message).toMatch(said);
        expect(await rows('id = $1 AND response_id IS NULL', [sent.uploadId])).toHaveLength(1);
      }
      // What still fits is taken.
      const ok = await callTool(app, token, 'create_response', {
        publicId: form.publicId,
        answers: { cv: small.uploadId },
      });
      expect(ok.status).toBe(200);
    });

    it('6.5: an upload URL takes no bytes once its upload is gone (delete_response, delete_form); S3 leftovers are swept', async () => {
      const form = await fileForm();
      const sent = await upload(form.publicId, 'cv', PDF);
      const key = `${ws.id}/${form.id}/${sent.uploadId}`;
      const created = await callTool(app, token, 'create_response', {
        publicId: form.publicId,
        answers: { cv: sent.uploadId },
      });
      expect(created.status).toBe(200);
      // Held: a second body is refused (disk), or lands where nothing reads it (S3).
      expect((await sent.again()).status).toBe(kind === 'disk' ? 403 : 200);
      await callTool(app, token, 'delete_response', { publicId: form.publicId, responseId: created.body.id });
      expect(await objects()).not.toContain(key);
      const late = await sent.again();
      if (kind === 'disk') {
        expect(late.status).toBe(404);
        expect((await late.json()).error.code).toBe('not_found');
        expect((await objects()).filter((k) => k.startsWith(key))).toEqual([]);
      } else {
        // A presigned URL cannot be revoked: its bytes land under `.upload`, which the sweep deletes at once.
        expect(late.status).toBe(200);
        expect(await objects()).toContain(`${key}.upload`);
        await app.get(UploadsService).sweepOrphans();
        expect((await objects()).filter((k) => k.startsWith(key))).toEqual([]);
      }
      // delete_form: a pending upload's URL, never used, takes nothing after.
      const form2 = await fileForm();
      const res = await callTool(app, token, 'create_upload', {
        publicId: form2.publicId,
        block: 'cv',
        filename: 'cv.pdf',
        contentType: 'application/pdf',
        size: PDF.length,
      });
      expect((await callTool(app, token, 'delete_form', { publicId: form2.publicId })).status).toBe(200);
      const url = new URL(res.body.url);
      const put = await fetch(kind === 'disk' ? `${base}${url.pathname}${url.search}` : res.body.url, {
        method: 'PUT',
        headers: res.body.headers,
        body: new Uint8Array(PDF),
      });
      if (kind === 'disk') expect(put.status).toBe(404);
      else await app.get(UploadsService).sweepOrphans();
      expect((await objects()).filter((k) => k.includes(form2.id))).toEqual([]);
    });

    it('5: check_response refuses an upload whose bytes never came, and says a made-up id names no upload', async () => {
      const form = await fileForm();
      const never = await callTool(app, token, 'create_upload', {
        publicId: form.publicId,
        block: 'cv',
        filename: 'cv.pdf',
        contentType: 'application/pdf',
        size: PDF.length,
      });
      const check = (cv: unknown) =>
        callTool(app, token, 'check_response', { publicId: form.publicId, answers: { cv } });
      expect((await check(never.body.uploadId)).body).toMatchObject({
        ok: false,
        errors: [{ path: '/answers/cv', message: expect.stringMatching(/no bytes stored/) }],
      });
      for (const made of ['upl_doesnotexist123', `upl_${'q'.repeat(22)}`]) {
        const checked = (await check(made)).body;
        expect(checked).toMatchObject({
          ok: false,
          errors: [{ path: '/answers/cv', message: expect.stringMatching(/no such upload exists/) }],
        });
        const e = await refused(form.publicId, form.id, { cv: made }, 'cv');
        expect(e.details![0].message).toMatch(/no such upload exists/);
      }
      // A malformed id keeps the format message.
      expect((await check('../../etc/passwd')).body.errors[0].message).toMatch(/must be an upload id/);
      // Once sent, the same upload checks.
      const url = new URL(never.body.url);
      await fetch(kind === 'disk' ? `${base}${url.pathname}${url.search}` : never.body.url, {
        method: 'PUT',
        headers: never.body.headers,
        body: new Uint8Array(PDF),
      });
      expect((await check(never.body.uploadId)).body.ok).toBe(true);
    });

    it('2: a file whose bytes are not its declared type is refused when it finishes, naming the file, and never attached', async () => {
      const form = await fileForm();
      const uploads = app.get(UploadsService);
      const fake = await upload(form.publicId, 'cv', EXE, { filename: 'fake_cv.pdf' });
      const said = 'fake_cv.pdf is not a PDF: its contents are a Windows program (exe).';
      if (kind === 'disk') {
        expect(fake.put).toBe(422);
        const { error } = JSON.parse(fake.answer);
        expect(error).toMatchObject({ code: 'file_refused', message: said, hint: expect.any(String) });
        expect(error.message).not.toContain('upl_');
        expect(JSON.stringify(error.details)).toContain(fake.uploadId);
        // Nothing kept; a second try at the same URL is refused the same way.
        expect((await objects()).filter((k) => k.includes(fake.uploadId))).toEqual([]);
        expect((await fake.again()).status).toBe(422);
      } else expect(fake.put).toBe(200);
      // The page's endpoint asks after the browser's PUT: the same refusal on both stores.
      const verdict = await uploads.verifyReceived(fake.uploadId, form.id);
      expect(verdict).toMatchObject({ code: 'file_refused', status: 422, message: said });
      expect(verdict!.details![0].message).toContain(fake.uploadId);
      expect((await objects()).filter((k) => k.includes(fake.uploadId))).toEqual([]);
      await refused(form.publicId, form.id, { cv: fake.uploadId }, 'cv');
      // A good file is taken; one not sent yet is said so; another form's id is no upload of it.
      const good = await upload(form.publicId, 'cv', PDF);
      expect(await uploads.verifyReceived(good.uploadId, form.id)).toBeUndefined();
      expect(await uploads.verifyReceived(good.uploadId, (await fileForm()).id)).toMatchObject({ code: 'not_found' });
      const waiting = await callTool(app, token, 'create_upload', {
        publicId: form.publicId,
        block: 'photos',
        filename: 'p.png',
        contentType: 'image/png',
        size: PNG.length,
      });
      expect(await uploads.verifyReceived(waiting.body.uploadId, form.id)).toMatchObject({
        code: 'invalid_arguments',
        message: 'p.png has not arrived yet.',
      });
      const named = await callTool(app, token, 'create_response', {
        publicId: form.publicId,
        answers: { cv: good.uploadId },
      });
      expect(named.status).toBe(200);
    });
  });
});

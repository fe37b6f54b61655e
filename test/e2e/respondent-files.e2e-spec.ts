/**
 * File questions on the respondent page (issue 35, part P), without JavaScript: the form posts
 * multipart/form-data, the service streams each file to storage (413 past the question's limit,
 * nothing kept), and Back and Next keep the uploaded files across pages. Also the page's endpoint
 * the script asks for an upload target. On disk, and on the S3-protocol server on the PostgreSQL run.
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { FileStorage } from '../../src/storage/file-storage';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';
import { startS3, TestS3 } from '../utils/s3';

const onServer = process.env.FORMWORK_TEST_DATABASE_KIND === 'server';
const kinds = onServer ? (['disk', 's3'] as const) : (['disk'] as const);

const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(3000, 0x41)]);
const EXE = Buffer.concat([Buffer.from('MZ\x90\x00\x03\x00\x00\x00'), Buffer.alloc(500, 1)]);
const HTML = Buffer.from('<!DOCTYPE html><html><body><script>alert(document.cookie)</script></body></html>');
/** A short idle bound, for the test of a sender that stops. */
const IDLE_MS = 1000;

describe.each(kinds)('respondent page: files on %s', (kind) => {
  let app: NestFastifyApplication;
  let dataDir: string;
  let s3: TestS3 | undefined;
  let ws: TestWorkspace;
  let token: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'formwork-page-files-'));
    s3 = kind === 's3' ? await startS3() : undefined;
    app = await createTestApp({
      DATA_DIR: dataDir,
      UPLOAD_IDLE_TIMEOUT_MS: String(IDLE_MS),
      ...(s3?.env ?? {}),
    });
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(async () => {
    await app?.close();
    await s3?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function publish(blocks: unknown[]): Promise<{ publicId: string; ids: Record<string, string> }> {
    const created = await callTool(app, token, 'create_form', { title: 'Job application', blocks });
    expect(created.status).toBe(200);
    const { publicId } = created.body;
    expect((await callTool(app, token, 'publish_form', { publicId })).status).toBe(200);
    const ids = Object.fromEntries(created.body.blocks.map((b: { ref: string; id: string }) => [b.ref, b.id]));
    return { publicId, ids };
  }
  const db = () => app.get(DataSource);
  const uploadsOf = (publicId: string) =>
    db().query(
      `SELECT u.id, u.name, u.size, u.block_id AS "blockId", u.response_id AS "responseId"
         FROM uploads u JOIN forms f ON f.id = u.form_id WHERE f.public_id = $1 ORDER BY u.created_at`,
      [publicId],
    ) as Promise<Array<{ id: string; name: string; size: string; blockId: string; responseId: string | null }>>;
  const answersOf = (publicId: string) =>
    db().query(
      'SELECT r.answers FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1 ORDER BY r.submitted_at',
      [publicId],
    ) as Promise<Array<{ answers: Record<string, unknown> }>>;
  async function objects(): Promise<string[]> {
    const found: string[] = [];
    for await (const key of app.get(FileStorage).list(`${ws.id}/`)) found.push(key);
    return found;
  }
  async function bytesOf(publicId: string, uploadId: string): Promise<Buffer> {
    const [form] = await db().query('SELECT id FROM forms WHERE public_id = $1', [publicId]);
    const stream = await app.get(FileStorage).read(`${ws.id}/${form.id}/${uploadId}`);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }
  const stateOf = (html: string) => /name="_state" value="([^"]+)"/.exec(html)![1];
  /** The app's port, listening from the first call (the disk's upload URLs are the service's own). */
  async function listening(): Promise<number> {
    if (!app.getHttpServer().listening) await app.listen(0, '127.0.0.1');
    return (app.getHttpServer().address() as { port: number }).port;
  }

  it('one page: a labelled file input in a multipart form; the posted file is stored and held by the response', async () => {
    const { publicId, ids } = await publish([
      { ref: 'name', type: 'short_text', title: 'Name', required: true },
      { ref: 'cv', type: 'file_upload', title: 'Your CV', required: true, maxSizeMb: 1, accept: ['application/pdf'] },
    ]);
    const page = await request(app.getHttpServer()).get(`/f/${publicId}`);
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/enctype="multipart\/form-data"/i);
    expect(page.text).toContain(`<label for="f-${ids.cv}">Your CV`);
    expect(page.text).toMatch(new RegExp(`<p class="desc" id="a-${ids.cv}">Accepted: PDF files. Up to 1 MB.</p>`));
    const input = /<input type="file"[^>]*>/.exec(page.text)![0];
    for (const attr of [
      `id="f-${ids.cv}"`,
      `name="${ids.cv}"`,
      'accept="application/pdf"',
      `aria-describedby="a-${ids.cv}"`,
    ])
      expect(input).toContain(attr);
    expect(page.headers['content-security-policy']).toMatch(/connect-src 'self' https?:\/\/[^ ;]+/);

    const res = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .field(ids.name, 'Ada')
      .attach(ids.cv, PDF, { filename: 'cv.pdf', contentType: 'application/pdf' });
    expect(res.status).toBe(200);
    expect(res.text).toContain('Thank you!');
    const [upload] = await uploadsOf(publicId);
    expect(upload).toMatchObject({ name: 'cv.pdf', size: String(PDF.length), blockId: ids.cv });
    expect(upload.responseId).not.toBeNull();
    expect((await answersOf(publicId))[0].answers[ids.cv]).toEqual([upload.id]);
    expect((await bytesOf(publicId, upload.id)).equals(PDF)).toBe(true);
  });

  it('a file over the question’s limit: a 413 page stating the limit, and nothing kept', async () => {
    const { publicId, ids } = await publish([{ ref: 'cv', type: 'file_upload', title: 'CV', maxSizeMb: 1 }]);
    const before = await objects();
    const res = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .attach(ids.cv, Buffer.alloc(1024 * 1024 + 1, 0x41), { filename: 'big.pdf', contentType: 'application/pdf' });
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('at most 1 MB');
    expect(await uploadsOf(publicId)).toEqual([]);
    expect(await answersOf(publicId)).toEqual([]);
    expect(await objects()).toEqual(before);
  });

  it('a file of a type the question does not take: the page again with the problem in the error summary, nothing stored', async () => {
    const { publicId, ids } = await publish([
      { ref: 'cv', type: 'file_upload', title: 'CV', accept: ['application/pdf', '.docx'] },
    ]);
    const res = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .attach(ids.cv, EXE, { filename: 'setup.exe', contentType: 'application/x-msdownload' });
    expect(res.status).toBe(400);
    expect(res.text).toContain('There is a problem with your answers');
    expect(res.text).toContain('The file “setup.exe” cannot be used here: this question takes PDF or .docx files.');
    expect(await uploadsOf(publicId)).toEqual([]);
    expect(await answersOf(publicId)).toEqual([]);
  });

  it('two pages: Back and Next keep the file (shown with a Keep box), an unticked box removes it, and the submission holds it', async () => {
    const { publicId, ids } = await publish([
      { ref: 'cv', type: 'file_upload', title: 'CV' },
      { ref: 'more', type: 'page_break', title: 'More' },
      { ref: 'photos', type: 'file_upload', title: 'Photos', maxFiles: 3 },
    ]);
    const first = await request(app.getHttpServer()).get(`/f/${publicId}`);
    const next = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .field('_state', stateOf(first.text))
      .field('_action', 'next')
      .attach(ids.cv, PDF, { filename: '../../etc/cv.pdf', contentType: 'application/pdf' });
    expect(next.status).toBe(200);
    expect(next.text).toContain('Page 2 of 2');
    const [upload] = await uploadsOf(publicId);
    expect(upload.name).toBe('cv.pdf');

    const back = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .field('_state', stateOf(next.text))
      .field('_action', 'back');
    expect(back.text).toContain('Page 1 of 2');
    expect(back.text).toMatch(
      new RegExp(`<input type="checkbox" name="${ids.cv}" checked="" value="${upload.id}"/> Keep cv.pdf \\(2.9 KB\\)`),
    );

    // Next again keeping the file, then submit page 2 without one.
    const again = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .field('_state', stateOf(back.text))
      .field('_action', 'next')
      .field(ids.cv, upload.id);
    expect(again.text).toContain('Page 2 of 2');
    const done = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .field('_state', stateOf(again.text))
      .field('_action', 'submit');
    expect(done.status).toBe(200);
    expect(done.text).toContain('Thank you!');
    expect((await answersOf(publicId))[0].answers).toEqual({ [ids.cv]: [upload.id] });
    expect((await uploadsOf(publicId))[0].responseId).not.toBeNull();

    // Unticking the box (the post leaves the id out) removes the file from the answers.
    const other = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .field('_state', stateOf((await request(app.getHttpServer()).get(`/f/${publicId}`)).text))
      .field('_action', 'next')
      .attach(ids.cv, PDF, { filename: 'cv2.pdf', contentType: 'application/pdf' });
    const removed = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .field('_state', stateOf(other.text))
      .field('_action', 'back');
    const dropped = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .field('_state', stateOf(removed.text))
      .field('_action', 'next');
    expect(dropped.text).toContain('Page 2 of 2');
    await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .field('_state', stateOf(dropped.text))
      .field('_action', 'submit');
    expect((await answersOf(publicId))[1].answers).toEqual({});
  });

  it('an upload id of another form posted as kept shows nothing and is refused on submission', async () => {
    const a = await publish([{ ref: 'cv', type: 'file_upload', title: 'CV' }]);
    // A pending upload of form a (as the page's script makes them).
    const theirs = await request(app.getHttpServer())
      .post(`/f/${a.publicId}/uploads`)
      .send({ block: a.ids.cv, filename: 'secret-name.pdf', contentType: 'application/pdf', size: PDF.length });
    expect(theirs.status).toBe(201);
    const b = await publish([
      { ref: 'cv', type: 'file_upload', title: 'CV' },
      { ref: 'p2', type: 'page_break', title: 'Two' },
      { ref: 'x', type: 'short_text', title: 'X' },
    ]);
    const first = await request(app.getHttpServer()).get(`/f/${b.publicId}`);
    const next = await request(app.getHttpServer())
      .post(`/f/${b.publicId}`)
      .field('_state', stateOf(first.text))
      .field('_action', 'next')
      .field(b.ids.cv, theirs.body.uploadId);
    const back = await request(app.getHttpServer())
      .post(`/f/${b.publicId}`)
      .field('_state', stateOf(next.text))
      .field('_action', 'back');
    expect(back.text).not.toContain('secret-name');
    // Submitting it anyway (the id posted again): the submission's checks refuse it, nothing stored.
    const again = await request(app.getHttpServer())
      .post(`/f/${b.publicId}`)
      .field('_state', stateOf(back.text))
      .field('_action', 'next')
      .field(b.ids.cv, theirs.body.uploadId);
    const submitted = await request(app.getHttpServer())
      .post(`/f/${b.publicId}`)
      .field('_state', stateOf(again.text))
      .field('_action', 'submit');
    expect(submitted.status).toBe(400);
    expect(submitted.text).toContain('There is a problem with your answers');
    expect(await answersOf(b.publicId)).toEqual([]);
  });

  it('the script’s endpoint answers an upload target on the form’s plan, and refuses a file over the limit in the envelope', async () => {
    const { publicId, ids } = await publish([{ ref: 'cv', type: 'file_upload', title: 'CV', maxSizeMb: 1 }]);
    const ok = await request(app.getHttpServer())
      .post(`/f/${publicId}/uploads`)
      .send({ block: ids.cv, filename: 'cv.pdf', contentType: 'application/pdf', size: PDF.length });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ uploadId: expect.stringMatching(/^upl_/), method: 'PUT' });
    expect(ok.body.headers['Content-Type'] ?? ok.body.headers['content-type']).toBe('application/pdf');

    const over = await request(app.getHttpServer())
      .post(`/f/${publicId}/uploads`)
      .send({ block: ids.cv, filename: 'cv.pdf', contentType: 'application/pdf', size: 2 * 1024 * 1024 });
    expect(over.status).toBe(400);
    expect(over.body.error).toMatchObject({
      code: 'invalid_arguments',
      message: expect.stringContaining('at most 1 MB'),
    });
    const bad = await request(app.getHttpServer()).post(`/f/${publicId}/uploads`).send({ block: ids.cv });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: { path: string }) => d.path)).toEqual(['/filename', '/contentType', '/size']);
    expect((await uploadsOf(publicId)).length).toBe(1);
  });

  it('the script’s check after the PUT: a text file sent as a PDF is refused in the page’s words, naming it (issue 45)', async () => {
    const { publicId, ids } = await publish([
      { ref: 'cv', type: 'file_upload', title: 'CV', accept: ['application/pdf'] },
    ]);
    const text = Buffer.from('not a PDF, a letter\n'.repeat(50));
    const target = await request(app.getHttpServer())
      .post(`/f/${publicId}/uploads`)
      .send({ block: ids.cv, filename: 'fake_cv.pdf', contentType: 'application/pdf', size: text.length });
    expect(target.status).toBe(201);
    const url = new URL(target.body.url);
    const address =
      kind === 'disk' ? `http://127.0.0.1:${await listening()}${url.pathname}${url.search}` : target.body.url;
    await fetch(address, { method: 'PUT', headers: target.body.headers, body: new Uint8Array(text) });
    const check = await request(app.getHttpServer())
      .post(`/f/${publicId}/uploads/${target.body.uploadId}/check`)
      .send({ block: ids.cv });
    expect(check.status).toBe(400);
    expect(check.body.error.message).toMatch(/^The file “fake_cv\.pdf” is not what its name says/);
    expect(check.body.error.message).not.toMatch(/upl_|application\//);
    expect(await uploadsOf(publicId)).toEqual([]);
  });

  it('one file among several whose bytes contradict its type: refused at once (no row, no object); the good one is kept', async () => {
    const { publicId, ids } = await publish([
      { ref: 'cv', type: 'file_upload', title: 'CV', accept: ['application/pdf'] },
      { ref: 'photos', type: 'file_upload', title: 'Photos', maxFiles: 3 },
    ]);
    const before = await objects();
    const res = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .attach(ids.cv, PDF, { filename: 'cv.pdf', contentType: 'application/pdf' })
      .attach(ids.photos, HTML, { filename: 'cat.png', contentType: 'image/png' });
    expect(res.status).toBe(400);
    expect(res.text).toContain('There is a problem with your answers');
    expect(res.text).toContain('cat.png');
    const uploads = await uploadsOf(publicId);
    expect(uploads).toEqual([expect.objectContaining({ name: 'cv.pdf', blockId: ids.cv, responseId: null })]);
    expect(res.text).toContain('Keep cv.pdf');
    const added = (await objects()).filter((k) => !before.includes(k));
    expect(added).toEqual([expect.stringMatching(new RegExp(`/${uploads[0].id}$`))]);
    expect(await answersOf(publicId)).toEqual([]);
  });

  it('a sender that stops in the middle of a file is cut (408) after the idle bound, and nothing is kept', async () => {
    const { publicId, ids } = await publish([{ ref: 'cv', type: 'file_upload', title: 'CV', maxSizeMb: 1 }]);
    if (!app.getHttpServer().listening) await app.listen(0, '127.0.0.1');
    const { port } = app.getHttpServer().address() as { port: number };
    const boundary = 'formwork-idle-test';
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name="${ids.cv}"; filename="cv.pdf"\r\n` +
      'Content-Type: application/pdf\r\n\r\n';
    const before = await objects();
    const started = Date.now();
    const { status, connection } = await new Promise<{ status: number; connection?: string }>((resolve, reject) => {
      const req = http.request(
        `http://127.0.0.1:${port}/f/${publicId}`,
        {
          method: 'POST',
          headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'Content-Length': '500000' },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            resolve({ status: res.statusCode!, connection: res.headers.connection });
            req.destroy(); // the rest of the body will never come
          });
        },
      );
      req.on('error', reject);
      req.write(head);
      req.write(PDF); // then silence, the body far from its length
    });
    expect(status).toBe(408);
    expect(connection).toBe('close'); // the stalled socket is not kept open behind the page
    expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_MS - 50);
    expect(await uploadsOf(publicId)).toEqual([]);
    expect(await objects()).toEqual(before);
  });
});

/**
 * What the respondent page says about files (issue 45, items 2 and 3): every refusal in the page's
 * words naming the file (never an upload id or a MIME type), the received bytes checked as soon as
 * the script's PUT is done, a refused file never kept, a save that fails keeping the person on the
 * page, and a file over its limit without JavaScript answered with the same page, its other
 * answers kept. On disk (the embedded default's store).
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(3000, 0x41)]);
/** Text, sent as a PDF. */
const FAKE_PDF = Buffer.from('Dear hiring team,\nthis is not a PDF at all.\n'.repeat(20));

/** No upload id, no MIME type: the tools' words. */
const API_WORDS = /upl_|application\/|image\/|\bbytes are\b/;
/** A page's text as read (no tags, so no attributes: the file input's accept names MIME types). */
const visible = (html: string) => html.replace(/<style>[\s\S]*?<\/style>/, '').replace(/<[^>]*>/g, '');

describe('respondent page: files in the page’s words', () => {
  let app: NestFastifyApplication;
  let dataDir: string;
  let base: string;
  let token: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'formwork-file-words-'));
    app = await createTestApp({ DATA_DIR: dataDir });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(async () => {
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A job application: role and CV on page 1 (the role after the CV), a note on page 2. */
  async function publish(partialResponses = false) {
    const created = await callTool(app, token, 'create_form', {
      title: 'Job application',
      partialResponses,
      blocks: [
        { ref: 'cv', type: 'file_upload', title: 'CV', required: true, accept: ['application/pdf'], maxSizeMb: 1 },
        { ref: 'role', type: 'multiple_choice', title: 'Role', required: true, choices: ['Engineer', 'Designer'] },
        { ref: 'p2', type: 'page_break', title: 'More' },
        { ref: 'note', type: 'short_text', title: 'Note' },
      ],
    });
    expect(created.status).toBe(200);
    const { publicId } = created.body;
    await callTool(app, token, 'publish_form', { publicId });
    const ids = Object.fromEntries(created.body.blocks.map((b: { ref: string; id: string }) => [b.ref, b.id]));
    const engineer = created.body.blocks[1].choices[0].id as string;
    return { publicId, ids, engineer };
  }
  const uploadRow = async (id: string) =>
    (await app.get(DataSource).query('SELECT id FROM uploads WHERE id = $1', [id])).length;
  const stateOf = (html: string) => /name="_state" value="([^"]+)"/.exec(html)![1];
  /** The script's way: an upload target from the page's endpoint, then the bytes PUT there. */
  async function sent(publicId: string, block: string, filename: string, bytes: Buffer): Promise<string> {
    const target = await request(app.getHttpServer())
      .post(`/f/${publicId}/uploads`)
      .send({ block, filename, contentType: 'application/pdf', size: bytes.length });
    expect(target.status).toBe(201);
    const url = new URL(target.body.url);
    const put = await fetch(`${base}${url.pathname}${url.search}`, {
      method: 'PUT',
      headers: target.body.headers,
      body: new Uint8Array(bytes),
    });
    // (The disk's endpoint may refuse wrong bytes on arrival, in the tools' words: the page asks the check.)
    expect([200, 201, 204, 422]).toContain(put.status);
    return target.body.uploadId;
  }

  it('the upload endpoint refuses a file in the page’s words, naming it: "at most 1 MB", "this question takes PDF files"', async () => {
    const { publicId, ids } = await publish();
    const over = await request(app.getHttpServer())
      .post(`/f/${publicId}/uploads`)
      .send({ block: ids.cv, filename: 'big_cv.pdf', contentType: 'application/pdf', size: 3 * 1024 * 1024 });
    expect(over.status).toBe(400);
    expect(over.body.error.code).toBe('invalid_arguments');
    expect(over.body.error.message).toBe(
      'The file “big_cv.pdf” is too large: this question takes files of at most 1 MB. Choose a smaller file.',
    );
    const exe = await request(app.getHttpServer())
      .post(`/f/${publicId}/uploads`)
      .send({ block: ids.cv, filename: 'setup.exe', contentType: 'application/x-msdownload', size: 100 });
    expect(exe.status).toBe(400);
    expect(exe.body.error.message).toBe(
      'The file “setup.exe” cannot be used here: this question takes PDF files. Choose another file.',
    );
    for (const res of [over, exe]) {
      expect(res.body.error.message).not.toMatch(API_WORDS);
      expect(res.body.error.details).toEqual([{ path: `/answers/${ids.cv}`, message: res.body.error.message }]);
    }
  });

  it('the check after the PUT: bytes that are not the declared type are refused at once, naming the file, and the upload is deleted', async () => {
    const { publicId, ids } = await publish();
    const fake = await sent(publicId, ids.cv, 'fake_cv.pdf', FAKE_PDF);
    const check = await request(app.getHttpServer())
      .post(`/f/${publicId}/uploads/${fake}/check`)
      .send({ block: ids.cv });
    expect(check.status).toBe(400);
    expect(check.body.error.code).toBe('invalid_arguments');
    expect(check.body.error.message).toContain('The file “fake_cv.pdf” is not what its name says');
    expect(check.body.error.message).toContain('This question takes PDF files.');
    expect(check.body.error.message).not.toMatch(API_WORDS);
    expect(await uploadRow(fake)).toBe(0);

    const good = await sent(publicId, ids.cv, 'cv.pdf', PDF);
    const ok = await request(app.getHttpServer()).post(`/f/${publicId}/uploads/${good}/check`).send({ block: ids.cv });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ ok: true });
    expect(await uploadRow(good)).toBe(1);

    // Another form's upload is not found there (and not deleted by asking).
    const other = await publish();
    const theirs = await sent(other.publicId, other.ids.cv, 'fake.pdf', FAKE_PDF);
    const asked = await request(app.getHttpServer())
      .post(`/f/${publicId}/uploads/${theirs}/check`)
      .send({ block: ids.cv });
    expect(asked.status).toBe(400);
    expect(asked.body.error.message).not.toContain('fake.pdf');
    expect(await uploadRow(theirs)).toBe(1);
  });

  it.each([
    ['a save (Next, partial responses on)', true, 'next'],
    ['the submission', false, 'submit'],
  ] as const)(
    'a bad file refused by %s: the same page, the answers kept, the file named in page words and not kept',
    async (_what, partials, action) => {
      const { publicId, ids, engineer } = await publish(partials);
      const fake = await sent(publicId, ids.cv, 'fake_cv.pdf', FAKE_PDF);
      let page = (await request(app.getHttpServer()).get(`/f/${publicId}`)).text;
      if (action === 'submit') {
        // Page 1 with a good file, then Submit on page 2 naming the bad one as well (as a post could).
        const good = await sent(publicId, ids.cv, 'cv.pdf', PDF);
        page = (
          await request(app.getHttpServer())
            .post(`/f/${publicId}`)
            .type('form')
            .send({ _state: stateOf(page), _action: 'next', [ids.cv]: good, [ids.role]: engineer })
        ).text;
        expect(page).toContain('Page 2 of 2');
        page = (
          await request(app.getHttpServer())
            .post(`/f/${publicId}`)
            .type('form')
            .send({ _state: stateOf(page), _action: 'back' })
        ).text;
      }
      const res = await request(app.getHttpServer())
        .post(`/f/${publicId}`)
        .type('form')
        .send(`_state=${encodeURIComponent(stateOf(page))}&_action=next&${ids.cv}=${fake}&${ids.role}=${engineer}`);
      const shown = action === 'submit' ? await submitFrom(res.text, publicId) : res;
      expect(shown.status).toBe(400);
      expect(shown.text).toContain('Page 1 of 2');
      expect(shown.text).toContain('The file “fake_cv.pdf” is not what its name says');
      expect(visible(shown.text)).not.toMatch(API_WORDS);
      expect(shown.text).not.toContain('Keep fake_cv.pdf');
      expect(shown.text).toMatch(new RegExp(`value="${engineer}" checked=""|checked="" value="${engineer}"`));
      expect(await uploadRow(fake)).toBe(0);
      if (partials) expect(shown.text).toContain('Your answers could not be saved: fix the problem below, then go on.');
    },
  );

  /** From page 2 after Next, Submit. */
  async function submitFrom(html: string, publicId: string) {
    expect(html).toContain('Page 2 of 2');
    return request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .type('form')
      .send({ _state: stateOf(html), _action: 'submit' });
  }

  it('without JavaScript, a file over its limit: the same page (413) with the role chosen after it kept and the error at the file question', async () => {
    const { publicId, ids, engineer } = await publish();
    const first = await request(app.getHttpServer()).get(`/f/${publicId}`);
    const res = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .field('_state', stateOf(first.text))
      .attach(ids.cv, Buffer.alloc(1024 * 1024 + 5000, 0x25), {
        filename: 'big_cv.pdf',
        contentType: 'application/pdf',
      })
      .field(ids.role, engineer)
      .field('_action', 'next');
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('Page 1 of 2');
    expect(res.text).toMatch(
      new RegExp(
        `id="e-${ids.cv}"><span aria-hidden="true">⚠ </span>The file “big_cv.pdf” is too large: this question takes files of at most 1 MB.`,
      ),
    );
    expect(res.text).toMatch(new RegExp(`value="${engineer}" checked=""|checked="" value="${engineer}"`));
    expect(
      await app
        .get(DataSource)
        .query('SELECT u.id FROM uploads u JOIN forms f ON f.id = u.form_id WHERE f.public_id = $1', [publicId]),
    ).toEqual([]);
  });
});

/**
 * Issue 45, item 4: owners see who is in progress. The Responses tab takes list_responses'
 * `status` (completed, partial, all), shows each response's status and keeps the choice in its
 * links and its download; the CSV of partial responses has status and startedAt columns; a file
 * question's CSV column is followed by its files' download links (signed as NDJSON's are).
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { parse } from 'csv-parse/sync';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { SessionsService } from '../../src/settings/sessions.service';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(2000, 0x41)]);

describe('responses in progress on the results pages and in the CSV (issue 45, item 4)', () => {
  let app: NestFastifyApplication;
  let dataDir: string;
  let ws: TestWorkspace;
  let token: string;
  let publicId: string;
  let cvId: string;

  const pathOf = (url: string) => {
    const u = new URL(url, 'http://x');
    return `${u.pathname}${u.search}`;
  };
  const ok = async (name: string, body: object) => {
    const res = await callTool(app, token, name, body);
    if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const getText = async (url: string) => {
    const res = await request(app.getHttpServer()).get(pathOf(url));
    expect(res.status).toBe(200);
    return res.text;
  };
  async function upload(block: string, bytes: Buffer, filename: string) {
    const made = await ok('create_upload', {
      publicId,
      block,
      filename,
      contentType: 'application/pdf',
      size: bytes.length,
    });
    const port = (app.getHttpServer().address() as { port: number }).port;
    const put = await fetch(`http://127.0.0.1:${port}${pathOf(made.url)}`, {
      method: 'PUT',
      headers: made.headers,
      body: new Uint8Array(bytes),
    });
    expect(put.status).toBe(200);
    return made.uploadId as string;
  }
  async function signedIn() {
    const email = `viewer-${randomBytes(4).toString('hex')}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(ws.slug, email, 'viewer');
    const cookie = await app.get(SessionsService).start(user.id);
    const { csrf } = (await app.get(SessionsService).find(cookie))!;
    return { cookie: `fw_session=${cookie}`, csrf };
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'formwork-results-status-'));
    app = await createTestApp({ DATA_DIR: dataDir, WEBHOOKS_DELIVERY: 'false' });
    await app.listen(0, '127.0.0.1');
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws)).token;
    const form = await ok('create_form', {
      title: 'Jobs',
      partialResponses: true,
      blocks: [
        { ref: 'name', type: 'short_text', title: 'Name', required: true },
        { ref: 'cv', type: 'file_upload', title: 'CV', accept: ['application/pdf'] },
        { ref: 'p2', type: 'page_break', title: 'Role' },
        { ref: 'role', type: 'short_text', title: 'Role' },
      ],
    });
    publicId = form.publicId;
    await ok('publish_form', { publicId });
    cvId = await upload('cv', PDF, 'ada-cv.pdf');
    await ok('create_response', { publicId, answers: { name: 'Ada Done', cv: cvId, role: 'Engineer' } });
    await ok('create_response', { publicId, answers: { name: 'Bob Done' } });
    await ok('create_response', { publicId, answers: { name: 'Cleo Started' }, partial: true });
    const second = await upload('cv', PDF, 'dan-cv.pdf');
    await ok('create_response', { publicId, answers: { name: 'Dan Started', cv: second }, partial: true });
  });
  afterAll(async () => {
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('the Responses tab lists completed (default), in progress or all, with each status, kept in its links; another status is a 400 page', async () => {
    const viewer = await signedIn();
    const base = `/settings/w/${ws.slug}/forms/${publicId}`;
    const page = (query: string) =>
      request(app.getHttpServer()).get(`${base}/responses${query}`).set('Cookie', viewer.cookie);

    const completed = await page('');
    expect(completed.status).toBe(200);
    expect(completed.text).toContain('2 responses;');
    expect(completed.text).toContain('Ada Done');
    expect(completed.text).not.toContain('Cleo Started');
    expect(completed.text).toMatch(/<select id="status" name="status"[^>]*>/);
    expect(completed.text).toContain('<option value="completed" selected="">Completed</option>');

    const partial = await page('?status=partial');
    expect(partial.status).toBe(200);
    expect(partial.text).toContain('2 responses in progress;');
    expect(partial.text).toContain('Cleo Started');
    expect(partial.text).toContain('Dan Started');
    expect(partial.text).not.toContain('Ada Done');
    expect(partial.text.match(/>In progress<br\/>/g)).toHaveLength(2);
    expect(partial.text).toContain('<option value="partial" selected="">In progress</option>');

    const all = await page('?status=all');
    expect(all.status).toBe(200);
    expect(all.text).toContain('4 responses, completed and in progress;');
    for (const name of ['Ada Done', 'Bob Done', 'Cleo Started', 'Dan Started']) expect(all.text).toContain(name);
    expect(all.text.match(/<td>Completed<\/td>/g)).toHaveLength(2);
    // Kept in the Summary tab's link, the download's post and the pager's links.
    expect(all.text).toContain(`href="${base}?status=all"`);
    expect(all.text).toContain('<input type="hidden" name="status" value="all"/>');
    const second = await page('?status=all&page=2');
    expect(second.text).toContain('href="?status=all&amp;page=1"');

    // A response in progress opens in full.
    const listed = await callTool(app, token, 'list_responses', { publicId, status: 'partial' });
    const one = await request(app.getHttpServer())
      .get(`${base}/responses/${listed.body.responses[0].id}`)
      .set('Cookie', viewer.cookie);
    expect(one.status).toBe(200);
    expect(one.text).toContain('Response in progress, started');
    expect(one.text).toContain('Cleo Started');

    const refused = await page('?status=drafts');
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('id="status-error"');
    expect(refused.text).toContain('Choose which responses to show');
    expect(refused.text).not.toContain('Ada Done');

    // Download: the CSV of what the page shows, with the status column.
    const dl = await request(app.getHttpServer())
      .post(`${base}/download`)
      .set('Cookie', viewer.cookie)
      .type('form')
      .send({ csrf: viewer.csrf, status: 'all', format: 'csv' });
    expect(dl.status).toBe(303);
    const [head, ...rows] = parse(await getText(dl.headers.location), { bom: true }) as string[][];
    expect(head.slice(0, 4)).toEqual(['id', 'submittedAt', 'status', 'startedAt']);
    expect(rows.map((r) => [r[2], r[4]])).toEqual([
      ['completed', 'Ada Done'],
      ['completed', 'Bob Done'],
      ['partial', 'Cleo Started'],
      ['partial', 'Dan Started'],
    ]);
  });

  it('export_responses CSV: status and startedAt with status all; each file question its links column, whose links serve the files', async () => {
    const link = await ok('export_responses', { publicId, format: 'csv', status: 'all' });
    const [head, ...rows] = parse(await getText(link.url), { bom: true }) as string[][];
    expect(head).toEqual(['id', 'submittedAt', 'status', 'startedAt', 'Name', 'CV', 'CV (links)', 'Role']);
    const all = await ok('list_responses', { publicId, status: 'all', limit: 10 });
    expect(rows.map((r) => r[0])).toEqual(all.responses.map((r: { id: string }) => r.id));
    const [ada, bob, cleo, dan] = rows;
    expect(ada.slice(2)).toEqual(['completed', ada[1], 'Ada Done', 'ada-cv.pdf', expect.any(String), 'Engineer']);
    expect(bob.slice(2, 7)).toEqual(['completed', bob[1], 'Bob Done', '', '']);
    expect(cleo[1]).toBe('');
    expect(cleo.slice(2, 7)).toEqual(['partial', expect.stringMatching(/^\d{4}-\d\d-\d\dT/), 'Cleo Started', '', '']);
    expect(dan.slice(4, 6)).toEqual(['Dan Started', 'dan-cv.pdf']);
    // The links are the files' download links, as NDJSON gives them: each serves its file.
    for (const url of [ada[6], dan[6]]) {
      expect(url).toMatch(/^http:\/\/[^/]+\/api\/v1\/files\/upl_\w+\?g=[\w-]+&sig=[\w-]+$/);
      const got = await request(app.getHttpServer()).get(pathOf(url)).buffer(true);
      expect(got.status).toBe(200);
      expect(Buffer.from(got.body as Buffer).equals(PDF)).toBe(true);
    }
    const ndjson = await ok('export_responses', { publicId, format: 'ndjson', answersBy: 'ref' });
    const first = JSON.parse((await getText(ndjson.url)).split('\n')[0]);
    expect(new URL(first.answers.cv[0].url).pathname).toBe(new URL(ada[6]).pathname);

    // Completed only (the default): no status columns; a ref-headed CSV reads the answers all the same.
    const plain = await ok('export_responses', { publicId, format: 'csv', answersBy: 'ref' });
    const [plainHead, ...plainRows] = parse(await getText(plain.url), { bom: true }) as string[][];
    expect(plainHead).toEqual(['id', 'submittedAt', 'name', 'cv', 'cv (links)', 'role']);
    expect(plainRows.map((r) => r.slice(2, 4))).toEqual([
      ['Ada Done', 'ada-cv.pdf'],
      ['Bob Done', ''],
    ]);
    // In progress only, headed by ref: the answers of partials are in their columns too.
    const partial = await ok('export_responses', { publicId, format: 'csv', status: 'partial', answersBy: 'ref' });
    const [, ...partialRows] = parse(await getText(partial.url), { bom: true }) as string[][];
    expect(partialRows.map((r) => [r[2], r[4], r[5]])).toEqual([
      ['partial', 'Cleo Started', ''],
      ['partial', 'Dan Started', 'dan-cv.pdf'],
    ]);
  });

  it('a response that began as a partial keeps when it started in the CSV (status all, written by PostgreSQL)', async () => {
    const form = await ok('create_form', {
      title: 'No files',
      partialResponses: true,
      blocks: [{ ref: 'name', type: 'short_text', title: 'Name' }],
    });
    await ok('publish_form', { publicId: form.publicId });
    const started = await ok('create_response', { publicId: form.publicId, answers: { name: 'Eve' }, partial: true });
    await new Promise((r) => setTimeout(r, 20));
    await ok('update_response', {
      publicId: form.publicId,
      responseId: started.id,
      answers: { name: 'Eve' },
      complete: true,
    });
    await ok('create_response', { publicId: form.publicId, answers: { name: 'Finn' } });
    const link = await ok('export_responses', { publicId: form.publicId, format: 'csv', status: 'all' });
    const [head, eve, finn] = parse(await getText(link.url), { bom: true }) as string[][];
    expect(head).toEqual(['id', 'submittedAt', 'status', 'startedAt', 'Name']);
    expect(eve[2]).toBe('completed');
    expect(eve[3]).toBe(started.startedAt);
    expect(Date.parse(eve[3])).toBeLessThan(Date.parse(eve[1]));
    expect(finn.slice(2)).toEqual(['completed', finn[1], 'Finn']);
    // NDJSON's lines are get_response's objects: when it started too.
    const nd = await ok('export_responses', { publicId: form.publicId, format: 'ndjson' });
    const [line] = (await getText(nd.url))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const got = await ok('get_response', { publicId: form.publicId, responseId: started.id });
    expect(line).toEqual(got);
    expect(line.startedAt).toBe(started.startedAt);
  });
});

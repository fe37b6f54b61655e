/**
 * Reading files (issue 35, part R): file answers in get_response, list_responses, NDJSON and CSV
 * exports and webhook payloads; their download links (bound to the credential that read them,
 * re-checked on use) serve the bytes as they were uploaded, always as an attachment, on disk and
 * on an S3-protocol server (s3rver, on the PostgreSQL server run).
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { parse } from 'csv-parse/sync';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { FILE_LINK_TTL_MS, FileLinks } from '../../src/files/file-links';
import { Role } from '../../src/common/access/roles';
import { FormRecord } from '../../src/forms/forms.service';
import { SessionsService } from '../../src/settings/sessions.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { TokensService } from '../../src/tokens/tokens.service';
import { createForm, createOAuthAccessToken, createToken, createWorkspace, TestWorkspace } from '../factories';
import { randomBytes } from 'node:crypto';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';
import { startS3, TestS3 } from '../utils/s3';

const onServer = process.env.FORMWORK_TEST_DATABASE_KIND === 'server';
const kinds = onServer ? (['disk', 's3'] as const) : (['disk'] as const);

const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(3000, 0x41)]);
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
const HTML = Buffer.from('<!DOCTYPE html><html><body><script>alert(document.cookie)</script></body></html>');
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');

describe.each(kinds)('reading files on %s', (kind) => {
  let app: NestFastifyApplication;
  let dataDir: string;
  let s3: TestS3 | undefined;
  let db: DataSource;
  let ws: TestWorkspace;
  let token: string;
  let form: FormRecord;
  let responseId: string;
  let cvId: string;
  let photoId: string;

  /** The path and query of a link (links are on PUBLIC_URL's origin; the test app listens elsewhere). */
  const pathOf = (url: string) => {
    const u = new URL(url);
    return `${u.pathname}${u.search}`;
  };
  const download = (url: string) =>
    request(app.getHttpServer())
      .get(pathOf(url))
      .buffer(true)
      .parse((res, done) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done(null, Buffer.concat(chunks)));
      });
  /** A link's answer with its JSON body parsed (refusals). */
  const refusal = (url: string) => request(app.getHttpServer()).get(pathOf(url));
  /** The bytes a link gives, following S3's redirect to the presigned GET. */
  async function bytesOf(url: string): Promise<Buffer> {
    const res = await download(url);
    if (kind === 'disk') {
      expect(res.status).toBe(200);
      return res.body as Buffer;
    }
    expect(res.status).toBe(302);
    const got = await fetch(res.headers.location);
    expect(got.status).toBe(200);
    return Buffer.from(await got.arrayBuffer());
  }

  /** create_upload, then PUT the bytes where it says. */
  async function upload(
    publicId: string,
    block: string,
    bytes: Buffer,
    filename: string,
    contentType: string,
    bearer = token,
  ) {
    const res = await callTool(app, bearer, 'create_upload', {
      publicId,
      block,
      filename,
      contentType,
      size: bytes.length,
    });
    expect(res.status).toBe(200);
    const target: string =
      kind === 'disk'
        ? `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}${pathOf(res.body.url)}`
        : res.body.url;
    const put = await fetch(target, { method: 'PUT', headers: res.body.headers, body: new Uint8Array(bytes) });
    expect(put.status).toBe(200);
    return res.body.uploadId as string;
  }

  const fileForm = (w: TestWorkspace) =>
    createForm(app, w, {
      status: 'published',
      blocks: [
        { type: 'short_text', title: 'Name', ref: 'name' } as never,
        { type: 'file_upload', title: 'CV', ref: 'cv' } as never,
        { type: 'file_upload', title: 'Photos', ref: 'photos', maxFiles: 3 } as never,
      ],
    });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'formwork-files-'));
    s3 = kind === 's3' ? await startS3() : undefined;
    app = await createTestApp({
      DATA_DIR: dataDir,
      WEBHOOKS_DELIVERY: 'false',
      WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
      ...(s3?.env ?? {}),
    });
    await app.listen(0, '127.0.0.1');
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws)).token;
    const hook = await callTool(app, token, 'create_webhook', {
      url: 'http://127.0.0.1:9/hook',
      events: ['response.created'],
    });
    expect(hook.status).toBe(200);
    form = await fileForm(ws);
    cvId = await upload(form.publicId, 'cv', PDF, 'CV, "final" é.pdf', 'application/pdf');
    photoId = await upload(form.publicId, 'photos', PNG, 'a.png', 'image/png');
    const created = await callTool(app, token, 'create_response', {
      publicId: form.publicId,
      answers: { name: 'Ada', cv: cvId, photos: [photoId] },
    });
    expect(created.status).toBe(200);
    responseId = created.body.id;
  });
  afterAll(async () => {
    await app?.close();
    await s3?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const cvFile = () => ({
    uploadId: cvId,
    name: 'CV, "final" é.pdf',
    size: PDF.length,
    contentType: 'application/pdf',
  });
  const photoFile = () => ({ uploadId: photoId, name: 'a.png', size: PNG.length, contentType: 'image/png' });
  const withUrl = (file: object) => ({ ...file, url: expect.stringMatching(/^http.*\/api\/v1\/files\/upl_/) });

  it('shows file answers as [{ uploadId, name, size, contentType, url }] in get_response and list_responses, by id and by ref', async () => {
    const [, cv, photos] = form.blocks.map((b) => b.id);
    const got = await callTool(app, token, 'get_response', { publicId: form.publicId, responseId });
    expect(got.status).toBe(200);
    expect(got.body.answers).toEqual({
      [form.blocks[0].id]: 'Ada',
      [cv]: [withUrl(cvFile())],
      [photos]: [withUrl(photoFile())],
    });
    const byRef = await callTool(app, token, 'list_responses', { publicId: form.publicId, answersBy: 'ref' });
    expect(byRef.status).toBe(200);
    expect(byRef.body.responses[0].answers).toEqual({
      name: 'Ada',
      cv: [withUrl(cvFile())],
      photos: [withUrl(photoFile())],
    });
    // Each link downloads the file byte-identical.
    expect((await bytesOf(byRef.body.responses[0].answers.cv[0].url)).equals(PDF)).toBe(true);
    expect((await bytesOf(got.body.answers[photos][0].url)).equals(PNG)).toBe(true);
  });

  it('shows them in NDJSON exports (with links), CSV exports (the names, then the links) and webhook payloads (no links)', async () => {
    const ndjson = await callTool(app, token, 'export_responses', {
      publicId: form.publicId,
      format: 'ndjson',
      answersBy: 'ref',
    });
    expect(ndjson.status).toBe(200);
    const lines = (await request(app.getHttpServer()).get(pathOf(ndjson.body.url))).text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0].answers).toEqual({ name: 'Ada', cv: [withUrl(cvFile())], photos: [withUrl(photoFile())] });
    expect((await bytesOf(lines[0].answers.cv[0].url)).equals(PDF)).toBe(true);

    const csv = await callTool(app, token, 'export_responses', { publicId: form.publicId, format: 'csv' });
    const records = parse((await request(app.getHttpServer()).get(pathOf(csv.body.url))).text, { bom: true });
    // Each file question's column of names is followed by its links' (issue 45, item 4).
    expect(records[0].slice(2)).toEqual(['Name', 'CV', 'CV (links)', 'Photos', 'Photos (links)']);
    const link = expect.stringMatching(/^http.*\/api\/v1\/files\/upl_\w+\?g=[\w-]+&sig=[\w-]+$/);
    expect(records[1].slice(2)).toEqual(['Ada', 'CV, "final" é.pdf', link, 'a.png', link]);
    expect((await bytesOf(records[1][4])).equals(PDF)).toBe(true);
    expect((await bytesOf(records[1][6])).equals(PNG)).toBe(true);

    const [row] = await db.query(
      `SELECT payload FROM webhook_deliveries WHERE event_type = 'response.created' AND payload LIKE '%' || $1 || '%'`,
      [responseId],
    );
    const [, cv, photos] = form.blocks.map((b) => b.id);
    expect(JSON.parse(row.payload).data.response.answers).toEqual({
      [form.blocks[0].id]: 'Ada',
      [cv]: [cvFile()],
      [photos]: [photoFile()],
    });
  });

  it('serves a download as an attachment of the stored type: nosniff and a sandbox on what the service serves, never inline', async () => {
    const got = await callTool(app, token, 'get_response', { publicId: form.publicId, responseId, answersBy: 'ref' });
    const res = await download(got.body.answers.cv[0].url);
    // A request of the reading credential's budget, shown beside the IP's.
    expect(res.headers['ratelimit-policy']).toMatch(/^"[^"]+";q=\d+;w=\d+, "[^"]+";q=\d+;w=\d+$/);
    if (kind === 'disk') {
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/pdf');
      expect(res.headers['content-disposition']).toBe(
        `attachment; filename="CV, _final_ _.pdf"; filename*=UTF-8''CV%2C%20%22final%22%20%C3%A9.pdf`,
      );
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['content-security-policy']).toBe('sandbox');
      expect(res.headers['cache-control']).toBe('private, no-store');
      expect(res.headers['content-length']).toBe(String(PDF.length));
    } else {
      expect(res.status).toBe(302);
      const presigned = new URL(res.headers.location);
      expect(presigned.searchParams.get('response-content-disposition')).toMatch(/^attachment; /);
      expect(presigned.searchParams.get('response-content-type')).toBe('application/pdf');
    }
  });

  it('serves an uploaded HTML or SVG page as an attachment with nosniff, never as a page of the service', async () => {
    // Markup is taken only where a block lists it (issue 45, item 6.3).
    const page = await createForm(app, ws, {
      status: 'published',
      blocks: [
        { type: 'file_upload', title: 'Page', ref: 'cv', accept: ['text/html'] } as never,
        { type: 'file_upload', title: 'Logo', ref: 'photos', maxFiles: 3, accept: ['.svg'] } as never,
      ],
    });
    const html = await upload(page.publicId, 'cv', HTML, 'page.html', 'text/html');
    const svg = await upload(page.publicId, 'photos', SVG, 'logo.svg', 'image/svg+xml');
    const created = await callTool(app, token, 'create_response', {
      publicId: page.publicId,
      answers: { cv: html, photos: [svg] },
    });
    expect(created.status).toBe(200);
    const got = await callTool(app, token, 'get_response', {
      publicId: page.publicId,
      responseId: created.body.id,
      answersBy: 'ref',
    });
    for (const [file, type, bytes] of [
      [got.body.answers.cv[0], 'text/html', HTML],
      [got.body.answers.photos[0], 'image/svg+xml', SVG],
    ] as const) {
      const res = await download(file.url);
      if (kind === 'disk') {
        expect(res.status).toBe(200);
        expect(res.headers['content-type']).toBe(type);
        expect(res.headers['content-disposition']).toMatch(/^attachment; /);
        expect(res.headers['x-content-type-options']).toBe('nosniff');
        expect(res.headers['content-security-policy']).toBe('sandbox');
      } else {
        expect(res.status).toBe(302);
        expect(new URL(res.headers.location).searchParams.get('response-content-disposition')).toMatch(/^attachment; /);
      }
      expect((await bytesOf(file.url)).equals(bytes)).toBe(true);
    }
  });

  it('lets no other workspace read a file: not through the tools, nor with a link of its own altered', async () => {
    const other = await createWorkspace(app, 'pro');
    const { token: otherToken, id: otherTokenId } = await createToken(app, other);
    expectError(
      await callTool(app, otherToken, 'get_response', { publicId: form.publicId, responseId }),
      404,
      'not_found',
    );
    expectError(await callTool(app, otherToken, 'list_responses', { publicId: form.publicId }), 404, 'not_found');
    expectError(await callTool(app, otherToken, 'export_responses', { publicId: form.publicId }), 404, 'not_found');

    // A link signed for the other workspace's token (as its reads would make), naming this workspace's upload.
    const links = app.get(FileLinks);
    const sign = await links.signer({
      w: other.id,
      c: { k: 'api_token', i: otherTokenId, b: `token:${otherTokenId}` },
    });
    const theirs = new URL(sign(cvId));
    const res = await request(app.getHttpServer()).get(`${theirs.pathname}${theirs.search}`);
    expectError(res, 404, 'not_found');
    expect(res.headers['content-disposition']).toBeUndefined();
  });

  it('refuses an altered or expired link, and a link whose token was revoked (404, envelope)', async () => {
    const reader = await createToken(app, ws, { role: 'viewer' });
    const got = await callTool(app, reader.token, 'get_response', {
      publicId: form.publicId,
      responseId,
      answersBy: 'ref',
    });
    const url = new URL(got.body.answers.cv[0].url);
    expect([200, 302]).toContain((await download(url.href)).status);

    // Another upload's id, a changed grant, a changed signature.
    const swapped = new URL(url.href.replace(cvId, photoId));
    const grant = JSON.parse(Buffer.from(url.searchParams.get('g')!, 'base64url').toString());
    const longer = new URL(url.href);
    longer.searchParams.set(
      'g',
      Buffer.from(JSON.stringify({ ...grant, exp: grant.exp + 86_400_000 })).toString('base64url'),
    );
    const resigned = new URL(url.href);
    // The first character changed (never the last, whose low bits base64url ignores): always another signature.
    const sig = url.searchParams.get('sig')!;
    resigned.searchParams.set('sig', `${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`);
    for (const bad of [swapped, longer, resigned, new URL(`${url.origin}${url.pathname}`)])
      expectError(await refusal(bad.href), 404, 'not_found');

    // Expired: 15 minutes later.
    const links = app.get(FileLinks);
    const now = links.now;
    links.now = () => now() + FILE_LINK_TTL_MS + 1;
    try {
      expectError(await refusal(url.href), 404, 'not_found');
    } finally {
      links.now = now;
    }

    await app.get(TokensService).revoke(reader.id);
    expectError(await refusal(url.href), 404, 'not_found');
  });

  it("stops serving an OAuth connection's link when its grant or its access token is revoked", async () => {
    const oauth = () =>
      createOAuthAccessToken(app, { workspaceId: ws.id, userId: ws.ownerId, scope: 'responses:read' });
    const linkOf = async (bearer: string) =>
      (await callTool(app, bearer, 'get_response', { publicId: form.publicId, responseId, answersBy: 'ref' })).body
        .answers.cv[0].url as string;

    const a = await oauth();
    const byGrant = await linkOf(a.token);
    expect((await bytesOf(byGrant)).equals(PDF)).toBe(true);
    await db.query('UPDATE oauth_grants SET revoked_at = now() WHERE grant_id = $1', [a.grantId]);
    expectError(await refusal(byGrant), 404, 'not_found');

    const b = await oauth();
    const byToken = await linkOf(b.token);
    expect((await bytesOf(byToken)).equals(PDF)).toBe(true);
    await db.query(`DELETE FROM oauth_models WHERE model = 'AccessToken' AND id = $1`, [b.token]); // RFC 7009 revocation
    expectError(await refusal(byToken), 404, 'not_found');
  });

  it('stops serving a file once its response is deleted', async () => {
    const gone = await fileForm(ws);
    const id = await upload(gone.publicId, 'cv', PDF, 'cv.pdf', 'application/pdf');
    const created = await callTool(app, token, 'create_response', { publicId: gone.publicId, answers: { cv: id } });
    const got = await callTool(app, token, 'get_response', {
      publicId: gone.publicId,
      responseId: created.body.id,
      answersBy: 'ref',
    });
    const deleted = await callTool(app, token, 'delete_response', {
      publicId: gone.publicId,
      responseId: created.body.id,
    });
    expect(deleted.status).toBe(200);
    expectError(await refusal(got.body.answers.cv[0].url), 404, 'not_found');
  });

  /** A member with a role and a signed-in session cookie. */
  async function signedIn(role: Role, workspace: TestWorkspace) {
    const email = `${role}-${randomBytes(4).toString('hex')}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(workspace.slug, email, role);
    return { email, cookie: `fw_session=${await app.get(SessionsService).start(user.id)}` };
  }
  const page = (path: string, cookie: string) => request(app.getHttpServer()).get(path).set('Cookie', cookie);

  it("the results pages show a response's files as download links bound to the session, the table their names", async () => {
    const viewer = await signedIn('viewer', ws);
    const here = `/settings/w/${ws.slug}/forms/${form.publicId}/responses`;
    const table = await page(here, viewer.cookie);
    expect(table.status).toBe(200);
    expect(table.text).toContain('CV, &quot;final&quot; é.pdf');
    expect(table.text).toContain('a.png');
    const one = await page(`${here}/${responseId}`, viewer.cookie);
    expect(one.status).toBe(200);
    const links = [...one.text.matchAll(/<a href="([^"]*\/api\/v1\/files\/[^"]+)" download="([^"]+)">/g)];
    expect(links.map((l) => l[2])).toEqual(['CV, &quot;final&quot; é.pdf', 'a.png']);
    expect(one.text).toContain('(3 KB)');
    expect(one.text).toContain('(29 bytes)');
    const url = links[0][1].replaceAll('&amp;', '&');
    expect((await bytesOf(url)).equals(PDF)).toBe(true);
    // The person leaves the workspace: the link their session got stops working.
    await app.get(WorkspacesService).removeMember(ws.slug, viewer.email);
    expectError(await refusal(url), 404, 'not_found');
  });

  it("the Plan page shows the workspace's total storage: the files its responses hold, not pending ones", async () => {
    const own = await createWorkspace(app, 'pro');
    const ownToken = (await createToken(app, own)).token;
    const owner = await signedIn('owner', own);
    const plan = () => page(`/settings/w/${own.slug}/plan`, owner.cookie);
    expect((await plan()).text).toContain('<strong>0 bytes</strong>');
    const f = await fileForm(own);
    const cv = await upload(f.publicId, 'cv', PDF, 'cv.pdf', 'application/pdf', ownToken);
    const photo = await upload(f.publicId, 'photos', PNG, 'a.png', 'image/png', ownToken);
    await upload(f.publicId, 'photos', Buffer.alloc(9000, 0x41), 'pending.txt', 'text/plain', ownToken);
    const created = await callTool(app, ownToken, 'create_response', {
      publicId: f.publicId,
      answers: { cv, photos: [photo] },
    });
    expect(created.status).toBe(200);
    const res = await plan();
    expect(res.status).toBe(200);
    expect(res.text).toContain(`<strong>3 KB</strong>`); // 3,009 + 29 bytes; the 9,000 pending ones are not counted
    expect(res.text).toContain('Files take up to 100 MB each on this plan');
  });
});

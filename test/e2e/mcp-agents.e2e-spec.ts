/**
 * An agent with only MCP (issue 49): a file sent inline (create_upload's contentBase64) with every
 * check of the PUT path, answered and downloaded byte-identical; on both protocol revisions, and on
 * REST.
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { FormRecord } from '../../src/forms/forms.service';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

const REVISIONS = ['2025-11-25', '2026-07-28'] as const;
type Revision = (typeof REVISIONS)[number];

/** One tools/call as a client of that revision posts it (2025-11-25 needs no session on a stateless server). */
function mcpCall(app: NestFastifyApplication, token: string, revision: Revision, name: string, args: unknown) {
  const modern = revision === '2026-07-28';
  const params = {
    name,
    arguments: args,
    ...(modern
      ? {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': revision,
            'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        }
      : {}),
  };
  return request(app.getHttpServer())
    .post('/mcp')
    .set('Accept', 'application/json, text/event-stream')
    .set('Content-Type', 'application/json')
    .set('Authorization', `Bearer ${token}`)
    .set('MCP-Protocol-Version', revision)
    .set(modern ? { 'Mcp-Method': 'tools/call', 'Mcp-Name': name } : {})
    .send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }));
}

/** A tool's answer over MCP: its structuredContent, or the refusal's envelope (isError). */
async function mcp(
  app: NestFastifyApplication,
  token: string,
  revision: Revision,
  name: string,
  args: unknown,
): Promise<
  { ok: true; value: unknown } | { ok: false; error: { code: string; hint: string; details?: Array<{ path: string }> } }
> {
  const res = await mcpCall(app, token, revision, name, args);
  expect(res.status).toBe(200);
  const result = res.body.result;
  if (result.isError) return { ok: false, error: JSON.parse(result.content[0].text).error };
  return { ok: true, value: result.structuredContent };
}

const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 251))]);
const EXE = Buffer.concat([Buffer.from('MZ\x90\x00\x03\x00\x00\x00'), Buffer.alloc(500, 1)]);
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');

describe('files over MCP: create_upload with contentBase64', () => {
  let app: NestFastifyApplication;
  let dataDir: string;
  let db: DataSource;
  let ws: TestWorkspace;
  let token: string;
  let form: FormRecord;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'formwork-agents-'));
    app = await createTestApp({ DATA_DIR: dataDir, RATE_LIMIT_CREDENTIAL_PER_MIN: '1000' });
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws)).token;
    form = await createForm(app, ws, {
      status: 'published',
      blocks: [
        { type: 'short_text', title: 'Name', ref: 'name' } as never,
        { type: 'file_upload', title: 'CV', ref: 'cv', maxSizeMb: 1 } as never,
        { type: 'file_upload', title: 'Photos', ref: 'photos', accept: ['image/*'] } as never,
      ],
    });
  });
  afterAll(async () => {
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const uploadRows = async () => Number((await db.query('SELECT count(*) AS n FROM uploads'))[0].n);

  it.each(REVISIONS)(
    'on %s: an upload by contentBase64 is stored now, answered, and downloads byte-identical',
    async (revision) => {
      const made = await mcp(app, token, revision, 'create_upload', {
        publicId: form.publicId,
        block: 'cv',
        filename: 'cv.pdf',
        contentType: 'application/pdf',
        contentBase64: PDF.toString('base64'),
      });
      expect(made.ok).toBe(true);
      const { uploadId } = (made as { value: { uploadId: string } }).value;
      expect(uploadId).toMatch(/^upl_/);
      // Nothing left to PUT: the answer has no URL.
      expect((made as { value: object }).value).toEqual({ uploadId });
      const checked = await mcp(app, token, revision, 'check_response', {
        publicId: form.publicId,
        answers: { name: 'Ada', cv: uploadId },
      });
      expect(checked).toMatchObject({ ok: true, value: { ok: true, errors: [] } });
      const answered = await mcp(app, token, revision, 'create_response', {
        publicId: form.publicId,
        answers: { name: 'Ada', cv: uploadId },
      });
      expect(answered.ok).toBe(true);
      const responseId = (answered as { value: { id: string } }).value.id;
      const got = await mcp(app, token, revision, 'get_response', {
        publicId: form.publicId,
        responseId,
        answersBy: 'ref',
      });
      const [file] = (got as { value: { answers: { cv: Array<{ url: string; name: string; size: number }> } } }).value
        .answers.cv;
      expect(file).toMatchObject({ name: 'cv.pdf', size: PDF.length });
      const link = new URL(file.url);
      const download = await request(app.getHttpServer())
        .get(`${link.pathname}${link.search}`)
        .buffer(true)
        .parse((res, done) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => done(null, Buffer.concat(chunks)));
        });
      expect(download.status).toBe(200);
      expect(Buffer.compare(download.body as Buffer, PDF)).toBe(0);
    },
  );

  it.each(REVISIONS)(
    'on %s: every check of the PUT path refuses at its path, and nothing is kept',
    async (revision) => {
      const before = await uploadRows();
      const base = { publicId: form.publicId, block: 'cv', filename: 'cv.pdf', contentType: 'application/pdf' };
      const cases: Array<[object, string, string]> = [
        // The bytes are not what the type says (magic bytes).
        [{ ...base, contentBase64: EXE.toString('base64') }, 'invalid_arguments', '/contentBase64'],
        // Markup where the block does not list it.
        [
          {
            ...base,
            block: 'photos',
            filename: 'a.svg',
            contentType: 'image/svg+xml',
            contentBase64: SVG.toString('base64'),
          },
          'invalid_arguments',
          '/filename',
        ],
        // Over the block's 1 MB.
        [
          { ...base, contentBase64: Buffer.alloc(MB + 1, 0x25).toString('base64') },
          'invalid_arguments',
          '/contentBase64',
        ],
        // Not base64; a size that contradicts the bytes; neither bytes nor size.
        [{ ...base, contentBase64: 'not base64!' }, 'invalid_arguments', '/contentBase64'],
        [{ ...base, size: 10, contentBase64: PDF.toString('base64') }, 'invalid_arguments', '/size'],
        [base, 'invalid_arguments', '/size'],
      ];
      for (const [args, code, path] of cases) {
        const refused = await mcp(app, token, revision, 'create_upload', args);
        expect(refused.ok).toBe(false);
        const error = (refused as { error: { code: string; hint: string; details?: Array<{ path: string }> } }).error;
        expect({ code: error.code, path: error.details?.[0]?.path }).toEqual({ code, path });
        expect(error.hint.length).toBeGreaterThan(0);
      }
      expect(await uploadRows()).toBe(before);
    },
  );

  it('check_response reports an upload whose bytes are not stored yet (ok: false)', async () => {
    const made = await callTool(app, token, 'create_upload', {
      publicId: form.publicId,
      block: 'cv',
      filename: 'cv.pdf',
      contentType: 'application/pdf',
      size: PDF.length,
    });
    expect(made.status).toBe(200);
    expect(made.body.url).toEqual(expect.any(String));
    const checked = await callTool(app, token, 'check_response', {
      publicId: form.publicId,
      answers: { cv: made.body.uploadId },
    });
    expect(checked.status).toBe(200);
    expect(checked.body.ok).toBe(false);
    expect(checked.body.errors[0]).toMatchObject({ code: 'invalid_arguments', path: '/answers/cv' });
    expect(checked.body.errors[0].message).toMatch(/no bytes stored yet/);
  });

  it('REST takes a 5 MB file inline; past 5 MB the schema refuses it, and past the route a 413 names 7 MB', async () => {
    const big = await createForm(app, ws, {
      status: 'published',
      blocks: [{ type: 'file_upload', title: 'Big', ref: 'big', maxSizeMb: 100 } as never],
    });
    const five = Buffer.concat([PDF, Buffer.alloc(5 * MB - PDF.length, 0x20)]);
    const args = { publicId: big.publicId, block: 'big', filename: 'big.pdf', contentType: 'application/pdf' };
    const made = await callTool(app, token, 'create_upload', { ...args, contentBase64: five.toString('base64') });
    expect(made.status).toBe(200);
    const answered = await callTool(app, token, 'create_response', {
      publicId: big.publicId,
      answers: { big: made.body.uploadId },
    });
    expect(answered.status).toBe(200);
    const over = Buffer.concat([five, Buffer.alloc(3)]);
    const refused = await callTool(app, token, 'create_upload', { ...args, contentBase64: over.toString('base64') });
    expect(expectError(refused, 400, 'invalid_arguments').details![0].path).toBe('/contentBase64');
    const tooLarge = await callTool(app, token, 'create_upload', { ...args, contentBase64: 'A'.repeat(7.5 * MB) });
    expect(expectError(tooLarge, 413, 'payload_too_large').hint).toContain('7 MB');
    // Any other tool still takes 1 MB bodies.
    const otherTool = await callTool(app, token, 'create_form', { title: 'x'.repeat(1_100_000) });
    expect(expectError(otherTool, 413, 'payload_too_large').hint).toContain('at most 1 MB');
  });
});

const MB = 1024 * 1024;

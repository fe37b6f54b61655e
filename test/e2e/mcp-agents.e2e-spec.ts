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

  it.each(REVISIONS)('on %s: an answer error points to get_form, and no hint names a REST path', async (revision) => {
    const refused = await mcp(app, token, revision, 'create_response', {
      publicId: form.publicId,
      answers: { name: 42 },
    });
    expect(refused.ok).toBe(false);
    const error = (refused as { error: { code: string; hint: string } }).error;
    expect(error.code).toBe('invalid_arguments');
    expect(error.hint).toContain('get_form');
    const others = await Promise.all([
      mcp(app, token, revision, 'create_response', { publicId: form.publicId, answers: {}, bogus: 1 }),
      mcp(app, token, revision, 'get_form', { publicId: 'nope' }),
      mcp(app, token, revision, 'update_form', { publicId: form.publicId, ifVersion: 999 }),
    ]);
    for (const other of others) {
      expect(other.ok).toBe(false);
      expect((other as { error: { hint: string } }).error.hint).not.toMatch(/\/api\/|openapi/);
    }
  });

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

describe('validate before write, and concurrent editors: dryRun and ifVersion', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '1000' });
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws)).token;
  });
  afterAll(() => app?.close());

  const formCount = async () =>
    Number((await db.query('SELECT count(*) AS n FROM forms WHERE workspace_id = $1', [ws.id]))[0].n);
  /** A form whose logic a dry run warns about: each warning of the issue, once. */
  const risky = {
    title: 'Risky',
    hiddenFields: ['src'],
    blocks: [
      { ref: 'q', type: 'yes_no', title: 'Go on?' },
      // Both alternatives together always hold: the form always ends here.
      {
        type: 'page_break',
        jumps: [
          {
            if: {
              any: [
                { block: 'q', op: 'answered' },
                { block: 'q', op: 'not_answered' },
              ],
            },
            to: 'end',
          },
          { if: { block: 'q', op: 'equals', value: true }, to: 'end' },
        ],
      },
      { ref: 'late', type: 'short_text', title: 'Never asked', required: true },
      {
        ref: 'why',
        type: 'long_text',
        title: 'Why, {{hidden:src}}?',
        showIf: { block: 'q', op: 'equals', value: false },
        required: true,
      },
    ],
  };

  it.each(REVISIONS)(
    'on %s: create_form dryRun answers the form with its warnings, and stores nothing',
    async (revision) => {
      const before = await formCount();
      const checked = await mcp(app, token, revision, 'create_form', { ...risky, dryRun: true });
      expect(checked.ok).toBe(true);
      const form = (
        checked as {
          value: {
            status: string;
            version: number;
            blocks: unknown[];
            dryRun: { warnings: Array<{ path: string; message: string }>; answerLoss: unknown[] };
          };
        }
      ).value;
      expect(form).toMatchObject({ status: 'draft', version: 1, title: 'Risky' });
      expect(form.blocks).toHaveLength(4);
      const warned = Object.fromEntries(form.dryRun.warnings.map((w) => [w.path, w.message]));
      expect(Object.keys(warned).sort()).toEqual(
        ['/blocks/1', '/blocks/1/jumps/1', '/blocks/2/required', '/blocks/3/required', '/blocks/3/title'].sort(),
      );
      expect(warned['/blocks/1']).toMatch(/no path reaches/);
      expect(warned['/blocks/1/jumps/1']).toMatch(/can never be taken/);
      expect(warned['/blocks/3/required']).toMatch(/showIf can hide it/);
      expect(warned['/blocks/3/title']).toMatch(/\{\{hidden:src\}\} can be empty/);
      expect(form.dryRun.answerLoss).toEqual([]);
      expect(await formCount()).toBe(before);
    },
  );

  it('a dry run refuses what the write refuses, every error at its path, and stores nothing', async () => {
    const before = await formCount();
    const res = await callTool(app, token, 'create_form', {
      title: 'Bad',
      dryRun: true,
      blocks: [
        { ref: 'a', type: 'short_text', title: 'A', showIf: { block: 'nope', op: 'answered' } },
        { type: 'multiple_choice', title: 'B' },
      ],
    });
    const error = expectError(res, 400, 'invalid_arguments');
    expect(error.details!.map((d) => d.path)).toEqual(
      expect.arrayContaining(['/blocks/0/showIf/block', '/blocks/1/choices']),
    );
    expect(await formCount()).toBe(before);
    // A clean form: no warnings.
    const clean = await callTool(app, token, 'create_form', {
      title: 'Clean',
      dryRun: true,
      blocks: [{ type: 'short_text', title: 'Name', required: true }],
    });
    expect(clean.status).toBe(200);
    expect(clean.body.dryRun).toEqual({ warnings: [], answerLoss: [] });
    expect(await formCount()).toBe(before);
  });

  it.each(REVISIONS)(
    'on %s: update_form dryRun reports the answers it would discard, bumps nothing and stores nothing',
    async (revision) => {
      const made = await callTool(app, token, 'create_form', {
        title: 'Survey',
        blocks: [
          { ref: 'name', type: 'short_text', title: 'Name' },
          { ref: 'color', type: 'multiple_choice', title: 'Color', choices: ['Red', 'Blue'] },
        ],
      });
      const form = made.body;
      await callTool(app, token, 'publish_form', { publicId: form.publicId });
      expect(
        (
          await callTool(app, token, 'create_response', {
            publicId: form.publicId,
            answers: { name: 'Ada', color: 'Red' },
          })
        ).status,
      ).toBe(200);
      const read = (await callTool(app, token, 'get_form', { publicId: form.publicId })).body;
      const checked = await mcp(app, token, revision, 'update_form', {
        publicId: form.publicId,
        ifVersion: read.version,
        dryRun: true,
        title: 'Survey 2',
        blocks: [read.blocks[0]],
      });
      expect(checked.ok).toBe(true);
      const preview = (
        checked as {
          value: {
            title: string;
            version: number;
            blocks: unknown[];
            dryRun: { answerLoss: Array<{ path: string; message: string }> };
          };
        }
      ).value;
      expect(preview).toMatchObject({ title: 'Survey 2', version: read.version + 1 });
      expect(preview.blocks).toHaveLength(1);
      expect(preview.dryRun.answerLoss).toEqual([
        { path: expect.stringMatching(/^\/blocks/), message: expect.stringMatching(/1 answer/) },
      ]);
      // Nothing stored: the form reads as before, at its version; the real update is refused without acceptAnswerLoss.
      expect((await callTool(app, token, 'get_form', { publicId: form.publicId })).body).toEqual(read);
      const real = await callTool(app, token, 'update_form', {
        publicId: form.publicId,
        title: 'Survey 2',
        blocks: [read.blocks[0]],
      });
      expectError(real, 400, 'tool_error');
    },
  );

  it.each(REVISIONS)(
    'on %s: a stale ifVersion is refused with 409 version_conflict naming the current version',
    async (revision) => {
      const made = (
        await callTool(app, token, 'create_form', {
          title: 'Edited twice',
          blocks: [{ type: 'short_text', title: 'A' }],
        })
      ).body;
      const first = await mcp(app, token, revision, 'update_form', {
        publicId: made.publicId,
        ifVersion: made.version,
        title: 'First',
      });
      expect(first).toMatchObject({ ok: true, value: { title: 'First', version: made.version + 1 } });
      const second = await mcp(app, token, revision, 'update_form', {
        publicId: made.publicId,
        ifVersion: made.version,
        title: 'Second',
      });
      expect(second.ok).toBe(false);
      const error = (second as { error: { code: string; details?: Array<{ path: string; message: string }> } }).error;
      expect(error.code).toBe('version_conflict');
      expect(error.details).toEqual([{ path: '/ifVersion', message: `the form is at version ${made.version + 1}` }]);
      const now = (await callTool(app, token, 'get_form', { publicId: made.publicId })).body;
      expect(now).toMatchObject({ title: 'First', version: made.version + 1 });
    },
  );

  it('REST: 409 version_conflict for a stale ifVersion (and its older name, version); an update that changes nothing keeps the version', async () => {
    const made = (
      await callTool(app, token, 'create_form', { title: 'Same', blocks: [{ type: 'short_text', title: 'A' }] })
    ).body;
    for (const stale of [{ ifVersion: made.version + 5 }, { version: made.version + 5 }]) {
      const res = await callTool(app, token, 'update_form', { publicId: made.publicId, ...stale, title: 'x' });
      expect(expectError(res, 409, 'version_conflict').details![0].message).toBe(
        `the form is at version ${made.version}`,
      );
    }
    const same = await callTool(app, token, 'update_form', {
      publicId: made.publicId,
      ifVersion: made.version,
      title: 'Same',
      blocks: made.blocks,
    });
    expect(same.status).toBe(200);
    expect(same.body.version).toBe(made.version);
    const audited = await db.query(
      `SELECT count(*) AS n FROM audit_events WHERE action = 'form.update' AND subject_id = $1`,
      [made.publicId],
    );
    expect(Number(audited[0].n)).toBe(0);
    const changed = await callTool(app, token, 'update_form', {
      publicId: made.publicId,
      ifVersion: made.version,
      description: 'Now with one',
    });
    expect(changed.body.version).toBe(made.version + 1);
  });
});

/** A block as get_form answers it, as far as ids go. */
type FormBlock = { id: string; choices?: Array<{ id: string }> };

describe('duplicate_form', () => {
  let app: NestFastifyApplication;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '1000' });
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws)).token;
  });
  afterAll(() => app?.close());

  it.each(REVISIONS)(
    'on %s: a draft copy with blocks, logic and settings under new ids, its rules pointing to the copies',
    async (revision) => {
      const source = (
        await callTool(app, token, 'create_form', {
          title: 'Quiz',
          hiddenFields: ['src'],
          partialResponses: true,
          variables: [{ name: 'bonus', type: 'number' }],
          endings: [{ ref: 'bye', title: 'Bye' }],
          blocks: [
            { type: 'multiple_choice', title: 'Pick', choices: ['A', 'B'], points: {}, required: true },
            { type: 'page_break', jumps: [{ if: { block: 'pick', op: 'equals', value: 'B' }, to: 'ending:bye' }] },
            { ref: 'why', type: 'long_text', title: 'Why?', showIf: { hidden: 'src', op: 'equals', value: 'ad' } },
          ].map((b, i) => (i === 0 ? { ...b, ref: 'pick' } : b)),
        })
      ).body;
      expect(source.publicId).toEqual(expect.any(String));
      await callTool(app, token, 'publish_form', { publicId: source.publicId });
      const copied = await mcp(app, token, revision, 'duplicate_form', { publicId: source.publicId });
      expect(copied.ok).toBe(true);
      const copy = (copied as { value: { publicId: string; blocks: FormBlock[] } & Record<string, unknown> }).value;
      expect(copy).toMatchObject({
        title: 'Quiz (copy)',
        status: 'draft',
        version: 1,
        hiddenFields: ['src'],
        partialResponses: true,
      });
      expect(copy.publicId).not.toBe(source.publicId);
      expect(copy.variables).toEqual(source.variables);
      expect(copy.endings).toEqual(source.endings);
      // New ids for every block and choice.
      const idsOf = (blocks: FormBlock[]) => blocks.flatMap((b) => [b.id, ...(b.choices ?? []).map((c) => c.id)]);
      const sourceIds = new Set(idsOf(source.blocks));
      expect(idsOf(copy.blocks)).toHaveLength(sourceIds.size);
      expect(idsOf(copy.blocks).filter((id) => sourceIds.has(id))).toEqual([]);
      // Else the same form: the source with each id replaced by its copy's (in order) reads as the copy.
      const renamed = new Map(idsOf(source.blocks).map((id, i) => [id, idsOf(copy.blocks)[i]]));
      expect(
        JSON.parse(JSON.stringify(source.blocks).replace(/"([bc]_\w+)"/g, (q, id) => `"${renamed.get(id) ?? id}"`)),
      ).toEqual(copy.blocks);
      // The copy works on its own: its rule sends B to its ending.
      await callTool(app, token, 'publish_form', { publicId: copy.publicId });
      const answered = await callTool(app, token, 'check_response', {
        publicId: copy.publicId,
        answers: { pick: 'B' },
      });
      expect(answered.body).toMatchObject({ ok: true, ending: 'bye' });
    },
  );

  it("takes a title; another workspace's form is not found; a viewer may not copy", async () => {
    const source = (
      await callTool(app, token, 'create_form', { title: 'Base', blocks: [{ type: 'short_text', title: 'A' }] })
    ).body;
    const named = await callTool(app, token, 'duplicate_form', { publicId: source.publicId, title: 'Base v2' });
    expect(named.body).toMatchObject({ title: 'Base v2', status: 'draft' });
    const other = await createWorkspace(app, 'pro');
    const stranger = (await createToken(app, other)).token;
    expectError(await callTool(app, stranger, 'duplicate_form', { publicId: source.publicId }), 404, 'not_found');
    const ws = await createWorkspace(app, 'pro');
    const viewer = (await createToken(app, ws, { role: 'viewer' })).token;
    expectError(await callTool(app, viewer, 'duplicate_form', { publicId: source.publicId }), 403, 'forbidden');
  });
});

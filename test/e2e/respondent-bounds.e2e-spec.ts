/**
 * What the respondent page keeps without a credential is bounded (issue 45, 6.6): pending uploads
 * (count and bytes) and open partial responses, per client IP and per form, counted in the
 * database. Past a bound: 429 pending_limit_reached (the script's endpoint) or a page saying so,
 * and nothing stored. The client IP is the one TRUST_PROXY gives, stored only as a keyed hash.
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

describe('respondent page: bounds on what is kept without a credential (issue 45, 6.6)', () => {
  let app: NestFastifyApplication;
  let dataDir: string;
  let token: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'formwork-bounds-'));
    app = await createTestApp({
      DATA_DIR: dataDir,
      TRUST_PROXY: '1',
      PENDING_UPLOADS_PER_IP: '2',
      PENDING_UPLOAD_MB_PER_IP: '1',
      PENDING_UPLOADS_PER_FORM: '3',
      OPEN_PARTIALS_PER_IP: '2',
      OPEN_PARTIALS_PER_FORM: '3',
    });
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(async () => {
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const server = () => app.getHttpServer();
  const db = () => app.get(DataSource);
  async function publish(blocks: unknown[], extra: Record<string, unknown> = {}) {
    const created = await callTool(app, token, 'create_form', { title: 'Bounded', blocks, ...extra });
    expect(created.status).toBe(200);
    const { publicId } = created.body;
    expect((await callTool(app, token, 'publish_form', { publicId })).status).toBe(200);
    const ids = Object.fromEntries(created.body.blocks.map((b: { ref: string; id: string }) => [b.ref, b.id]));
    return { publicId: publicId as string, ids };
  }
  const uploadsOf = (publicId: string) =>
    db().query(
      `SELECT u.* FROM uploads u JOIN forms f ON f.id = u.form_id WHERE f.public_id = $1 ORDER BY u.created_at`,
      [publicId],
    ) as Promise<Array<Record<string, unknown> & { client_hash: Buffer | null }>>;
  const partialsOf = (publicId: string) =>
    db().query(`SELECT p.* FROM partial_responses p JOIN forms f ON f.id = p.form_id WHERE f.public_id = $1`, [
      publicId,
    ]) as Promise<Array<Record<string, unknown> & { client_hash: Buffer | null }>>;
  const upload = (publicId: string, block: string, ip: string, size = PDF.length) =>
    request(server())
      .post(`/f/${publicId}/uploads`)
      .set('X-Forwarded-For', ip)
      .send({ block, filename: 'cv.pdf', contentType: 'application/pdf', size });
  const stateOf = (html: string) => /name="_state" value="([^"]+)"/.exec(html)![1];
  const cookieOf = (res: request.Response) =>
    ([res.headers['set-cookie']].flat().filter(Boolean) as string[]).find((c) => c.startsWith('fw_resume='));

  it('the script’s endpoint: past the pending uploads of one IP (count, bytes) or of one form, 429 with a hint, and no row', async () => {
    const { publicId, ids } = await publish([{ ref: 'cv', type: 'file_upload', title: 'CV', maxFiles: 5 }]);
    expect((await upload(publicId, ids.cv, '203.0.113.1')).status).toBe(201);
    expect((await upload(publicId, ids.cv, '203.0.113.1')).status).toBe(201);
    const third = await upload(publicId, ids.cv, '203.0.113.1');
    expect(third.status).toBe(429);
    expect(third.body.error).toMatchObject({
      code: 'pending_limit_reached',
      message: expect.stringContaining('from your network'),
      hint: expect.stringContaining('remove files'),
    });
    expect(await uploadsOf(publicId)).toHaveLength(2);

    // The form's bound (3), across addresses.
    expect((await upload(publicId, ids.cv, '203.0.113.2')).status).toBe(201);
    const fourth = await upload(publicId, ids.cv, '203.0.113.3');
    expect(fourth.status).toBe(429);
    expect(fourth.body.error.message).toContain('for this form');
    expect(await uploadsOf(publicId)).toHaveLength(3);

    // Bytes (1 MB per IP), on another form.
    const other = await publish([{ ref: 'cv', type: 'file_upload', title: 'CV', maxFiles: 5 }]);
    expect((await upload(other.publicId, other.ids.cv, '203.0.113.4', 900 * 1024)).status).toBe(201);
    const big = await upload(other.publicId, other.ids.cv, '203.0.113.4', 200 * 1024);
    expect(big.status).toBe(429);
    expect(await uploadsOf(other.publicId)).toHaveLength(1);

    // The rows hold a keyed hash of the IP (32 bytes), never the IP; the tools' uploads are not counted.
    const rows = await uploadsOf(publicId);
    expect(rows.every((r) => r.client_hash?.length === 32)).toBe(true);
    expect(JSON.stringify(rows)).not.toContain('203.0.113');
    expect(new Set(rows.map((r) => r.client_hash!.toString('hex'))).size).toBe(2);
    const tool = await callTool(app, token, 'create_upload', {
      publicId,
      block: ids.cv,
      filename: 'cv.pdf',
      contentType: 'application/pdf',
      size: PDF.length,
    });
    expect(tool.status).toBe(200);
  });

  it('the page without JavaScript: a file past the bound gets a 429 page and nothing is stored', async () => {
    const { publicId, ids } = await publish([
      { ref: 'name', type: 'short_text', title: 'Name' },
      { ref: 'cv', type: 'file_upload', title: 'CV', maxFiles: 5 },
    ]);
    expect((await upload(publicId, ids.cv, '198.51.100.7')).status).toBe(201);
    expect((await upload(publicId, ids.cv, '198.51.100.7')).status).toBe(201);
    const res = await request(server())
      .post(`/f/${publicId}`)
      .set('X-Forwarded-For', '198.51.100.7')
      .field(ids.name, 'Ada')
      .attach(ids.cv, PDF, { filename: 'cv.pdf', contentType: 'application/pdf' });
    expect(res.status).toBe(429);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('Too many uploads in progress');
    expect(await uploadsOf(publicId)).toHaveLength(2);
    const list = await callTool(app, token, 'list_responses', { publicId });
    expect(list.body.total).toBe(0);
  });

  it('partial saves: past the open partials of one IP or of one form the walk goes on saying nothing was saved, and "Save and finish later" answers 429', async () => {
    const { publicId, ids } = await publish(
      [
        { ref: 'name', type: 'short_text', title: 'Name' },
        { ref: 'two', type: 'page_break', title: 'Two' },
        { ref: 'city', type: 'short_text', title: 'City' },
      ],
      { partialResponses: true },
    );
    const next = async (ip: string, name: string) => {
      const agent = request.agent(server());
      const p1 = await agent.get(`/f/${publicId}`).set('X-Forwarded-For', ip);
      const res = await agent
        .post(`/f/${publicId}`)
        .set('X-Forwarded-For', ip)
        .type('form')
        .send(
          new URLSearchParams([
            ['_state', stateOf(p1.text)],
            [ids.name, name],
            ['_action', 'next'],
          ]).toString(),
        );
      return { agent, res };
    };
    for (const name of ['One', 'Two']) {
      const { res } = await next('192.0.2.10', name);
      expect(res.text).toContain('Page 2 of 2');
      expect(cookieOf(res)).toBeDefined();
    }
    const { agent, res } = await next('192.0.2.10', 'Three');
    expect(res.status).toBe(200);
    expect(res.text).toContain('Page 2 of 2'); // the walk goes on
    expect(res.text).toContain('Too many answers are in progress from your network');
    expect(cookieOf(res)).toBeUndefined();
    expect(await partialsOf(publicId)).toHaveLength(2);

    const save = await agent
      .post(`/f/${publicId}`)
      .set('X-Forwarded-For', '192.0.2.10')
      .type('form')
      .send(
        new URLSearchParams([
          ['_state', stateOf(res.text)],
          [ids.city, 'Oslo'],
          ['_action', 'save'],
        ]).toString(),
      );
    expect(save.status).toBe(429);
    expect(save.text).toContain('Too many answers are in progress');
    expect(save.text).not.toContain('resume-link');
    expect(await partialsOf(publicId)).toHaveLength(2);

    // The form's bound (3), across addresses; each row holds a keyed hash, never the IP.
    expect(cookieOf((await next('192.0.2.11', 'Four')).res)).toBeDefined();
    const fifth = (await next('192.0.2.12', 'Five')).res;
    expect(fifth.text).toContain('Too many answers are in progress for this form');
    const rows = await partialsOf(publicId);
    expect(rows).toHaveLength(3);
    expect(rows.every((r) => r.client_hash?.length === 32)).toBe(true);
    expect(JSON.stringify(rows)).not.toContain('192.0.2');
  });
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { ExportsRepository } from '../../src/exports/exports.repository';
import { ExportsService } from '../../src/exports/exports.service';
import { LongReads } from '../../src/responses/long-reads';
import { FileStorage } from '../../src/storage/file-storage';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';
import { formWithPartials, post2026 } from './jobs.fixture';

/**
 * Issue 49, item 7: export_responses as a job (REST `Prefer: respond-async`, MCP task on
 * 2026-07-28): the export is read into a stored file, and the job's link serves it; a cancel stops
 * the reading between batches and (PostgreSQL) the statement running, and frees the long-read slot.
 */
describe('export_responses as a job (issue 49)', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let token: string;
  let publicId: string;
  let longReads: LongReads;

  beforeAll(async () => {
    app = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '1000', DATABASE_POOL_SIZE: '10' });
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    publicId = await formWithPartials(app, token);
    longReads = app.get(LongReads);
  });
  afterAll(async () => {
    await app?.close();
  });

  const download = (url: string) => {
    const u = new URL(url);
    return request(app.getHttpServer()).get(u.pathname + u.search);
  };
  const until = async (done: () => Promise<boolean>) => {
    for (let i = 0; i < 400 && !(await done()); i++) await new Promise((r) => setTimeout(r, 25));
  };
  const finished = async (jobId: string) => {
    let job: { status: string; result?: { url: string; format: string } } | undefined;
    await until(async () => {
      job = (await callTool(app, token, 'get_job', { jobId })).body;
      return job!.status !== 'working';
    });
    return job!;
  };

  it('over REST: 202, then a link that downloads what the plain export downloads', async () => {
    const args = { publicId, format: 'ndjson', status: 'all' };
    const started = await callTool(app, token, 'export_responses', args, { Prefer: 'respond-async' });
    expect(started.status).toBe(202);
    expect(started.headers['preference-applied']).toBe('respond-async');
    expect(started.body).toMatchObject({ tool: 'export_responses', status: 'working' });
    const job = await finished(started.body.jobId);
    expect(job).toMatchObject({ status: 'completed', result: { format: 'ndjson' } });
    expect(longReads.runningFor(ws.id)).toBe(0);
    const plain = await callTool(app, token, 'export_responses', args);
    expect(plain.status).toBe(200);
    const [stored, direct] = [await download(job.result!.url), await download(plain.body.url)];
    expect(stored.status).toBe(200);
    expect(stored.headers['content-type']).toMatch(/^application\/x-ndjson/);
    expect(stored.text).toBe(direct.text);
    expect(stored.text.trim().split('\n')).toHaveLength(4);
  });

  it('over MCP 2026-07-28 with the tasks extension: a task whose result is the stored export’s link', async () => {
    const created = await post2026(app, token, 'tools/call', {
      name: 'export_responses',
      arguments: { publicId, format: 'csv' },
    });
    expect(created.body.result).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created.body.result.taskId;
    let got: { status: string; result?: { structuredContent: { url: string } } } | undefined;
    await until(async () => {
      got = (await post2026(app, token, 'tasks/get', { taskId })).body.result;
      return got!.status !== 'working';
    });
    expect(got!.status).toBe('completed');
    const csv = await download(got!.result!.structuredContent.url);
    expect(csv.status).toBe(200);
    expect(csv.text).toContain('Ada');
    // Without the extension, the call answers the link at once, as before.
    const plain = await post2026(
      app,
      token,
      'tools/call',
      { name: 'export_responses', arguments: { publicId } },
      false,
    );
    expect(plain.body.result.structuredContent.url).toMatch(/\/api\/v1\/exports\/download\?token=/);
  });

  it('a cancel stops the reading between batches: no batch is read after it, nothing is stored, the slot is free', async () => {
    const exports = app.get(ExportsService);
    // The service's own repository (the module's instance).
    const repo = (exports as unknown as { repo: ExportsRepository }).repo;
    const batches = exports.batchSeqRange.ndjson;
    const read = repo.readLineBatch.bind(repo);
    let reads = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // One response per batch; every batch after the first waits at the gate until the test opens it.
    exports.batchSeqRange.ndjson = 1;
    repo.readLineBatch = async (...args: Parameters<typeof read>) => {
      if (++reads > 1) await gate;
      return read(...args);
    };
    try {
      const started = await callTool(
        app,
        token,
        'export_responses',
        { publicId, format: 'ndjson' },
        { Prefer: 'respond-async' },
      );
      expect(started.status).toBe(202);
      await until(async () => reads >= 2);
      expect(reads).toBe(2);
      const cancelled = await callTool(app, token, 'get_job', { jobId: started.body.jobId, cancel: true });
      expect(cancelled.body.status).toBe('cancelled');
      expect(longReads.runningFor(ws.id)).toBe(0);
      release();
      await new Promise((r) => setTimeout(r, 300));
      expect(reads).toBe(2);
      expect((await callTool(app, token, 'get_job', { jobId: started.body.jobId })).body).not.toHaveProperty('result');
      const stored: string[] = [];
      for await (const key of app.get(FileStorage).list('exports/')) stored.push(key);
      expect(stored.filter((k) => k.endsWith(started.body.jobId))).toEqual([]);
    } finally {
      release();
      repo.readLineBatch = read;
      exports.batchSeqRange.ndjson = batches;
    }
  });
});

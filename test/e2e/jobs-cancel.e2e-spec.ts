import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource, QueryRunner } from 'typeorm';
import { LongReads } from '../../src/responses/long-reads';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';
import { formWithPartials, post2026 } from './jobs.fixture';

/**
 * Issue 49, item 7: cancelling a job gives its long-read slot back at once and the job stays
 * cancelled. The job is held working by a lock another connection of the pool takes on the rows
 * it reads (PostgreSQL: the embedded database has one connection, which the lock would stop).
 */
describe('cancelling a job frees its long-read slot (issue 49)', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let token: string;
  let publicId: string;
  let longReads: LongReads;

  beforeAll(async () => {
    // One long read at a time per workspace: a job's slot is the workspace's only one.
    app = await createTestApp({
      RATE_LIMIT_CREDENTIAL_PER_MIN: '1000',
      LONG_READS_PER_WORKSPACE: '1',
      // Room for the lock's connection and the blocked reads beside the calls of the test.
      DATABASE_POOL_SIZE: '10',
    });
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    publicId = await formWithPartials(app, token);
    longReads = app.get(LongReads);
  });
  afterAll(async () => {
    await app?.close();
  });

  /** Runs `during` while another connection holds the table of partials (a summary with status partial or all reads it). */
  async function whileLocked(during: () => Promise<void>) {
    const blocker: QueryRunner = app.get(DataSource).createQueryRunner();
    await blocker.connect();
    await blocker.startTransaction();
    await blocker.query('LOCK TABLE partial_responses IN ACCESS EXCLUSIVE MODE');
    try {
      await during();
    } finally {
      await blocker.rollbackTransaction();
      await blocker.release();
    }
  }

  it.each(['mcp', 'rest'])('over %s: a job held working is cancelled and its slot is free at once', async (via) => {
    await whileLocked(async () => {
      let jobId: string;
      if (via === 'mcp') {
        const created = await post2026(app, token, 'tools/call', {
          name: 'summarize_responses',
          arguments: { publicId, status: 'partial' },
        });
        expect(created.body.result).toMatchObject({ resultType: 'task', status: 'working' });
        jobId = created.body.result.taskId;
      } else {
        const created = await callTool(
          app,
          token,
          'summarize_responses',
          { publicId, status: 'partial' },
          { Prefer: 'respond-async' },
        );
        expect(created.status).toBe(202);
        jobId = created.body.jobId;
      }
      expect(longReads.runningFor(ws.id)).toBe(1);
      if (via === 'mcp') {
        const ack = await post2026(app, token, 'tasks/cancel', { taskId: jobId });
        expect(ack.body.result).toEqual({ resultType: 'complete' });
        expect((await post2026(app, token, 'tasks/get', { taskId: jobId })).body.result.status).toBe('cancelled');
      } else {
        const cancelled = await callTool(app, token, 'get_job', { jobId, cancel: true });
        expect(cancelled.body).toMatchObject({ status: 'cancelled' });
      }
      expect(longReads.runningFor(ws.id)).toBe(0);
    });
  });

  it('the slot a job holds counts against the workspace: another long read is 429 until the job is cancelled', async () => {
    await whileLocked(async () => {
      const start = () =>
        callTool(app, token, 'summarize_responses', { publicId, status: 'all' }, { Prefer: 'respond-async' });
      const a = await start();
      expect(a.status).toBe(202);
      const b = await start();
      expect(b.status).toBe(429);
      expect(b.headers['retry-after']).toBe('2');
      await callTool(app, token, 'get_job', { jobId: a.body.jobId, cancel: true });
      expect(longReads.runningFor(ws.id)).toBe(0);
      const c = await start();
      expect(c.status).toBe(202);
      await callTool(app, token, 'get_job', { jobId: c.body.jobId, cancel: true });
    });
  });

  it('a cancel made through another instance reaches the instance running the job, which gives its slot back', async () => {
    // A second instance on the same database: it answers get_job for a job the first one runs.
    const other = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '1000' });
    try {
      await whileLocked(async () => {
        const started = await callTool(
          app,
          token,
          'summarize_responses',
          { publicId, status: 'partial' },
          { Prefer: 'respond-async' },
        );
        expect(started.status).toBe(202);
        const seen = await callTool(other, token, 'get_job', { jobId: started.body.jobId });
        expect(seen.body).toMatchObject({ jobId: started.body.jobId, status: 'working' });
        const cancelled = await callTool(other, token, 'get_job', { jobId: started.body.jobId, cancel: true });
        expect(cancelled.body.status).toBe('cancelled');
        // The running instance finds the cancel on its next look (every half second), the lock still held.
        while (longReads.runningFor(ws.id) > 0) await new Promise((r) => setTimeout(r, 50));
        expect((await callTool(app, token, 'get_job', { jobId: started.body.jobId })).body.status).toBe('cancelled');
      });
    } finally {
      await other.close();
    }
  });

  it('an export job’s statement, held by the lock, is stopped by the cancel (pg_cancel_backend), not left waiting', async () => {
    await whileLocked(async () => {
      const started = await callTool(
        app,
        token,
        'export_responses',
        { publicId, status: 'partial' },
        { Prefer: 'respond-async' },
      );
      expect(started.status).toBe(202);
      const jobId: string = started.body.jobId;
      const db = app.get(DataSource);
      const running = async () =>
        (
          await db.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND position($1 in query) > 0 AND pid <> pg_backend_pid()`,
            [`/* ${jobId} */`],
          )
        )[0].n as number;
      for (let i = 0; i < 200 && (await running()) === 0; i++) await new Promise((r) => setTimeout(r, 25));
      expect(await running()).toBe(1);
      expect(longReads.runningFor(ws.id)).toBe(1);
      const cancelled = await callTool(app, token, 'get_job', { jobId, cancel: true });
      expect(cancelled.body.status).toBe('cancelled');
      expect(longReads.runningFor(ws.id)).toBe(0);
      // Gone while the lock it waited for is still held.
      for (let i = 0; i < 200 && (await running()) > 0; i++) await new Promise((r) => setTimeout(r, 25));
      expect(await running()).toBe(0);
      expect((await callTool(app, token, 'get_job', { jobId })).body.status).toBe('cancelled');
    });
  });
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import net from 'node:net';
import request from 'supertest';
import { DataSource, QueryRunner } from 'typeorm';
import { loadConfig } from '../../src/config/config';
import { dataSourceOptions, SessionBounds } from '../../src/database/data-source';
import { allowLongStatements } from '../../src/database/long-statements';
import { inTransaction } from '../../src/database/transaction';
import { FormRecord } from '../../src/forms/forms.service';
import { ResponseStatsRepository } from '../../src/summaries/response-stats.repository';
import { SEQUENCER_WAIT_MS } from '../../src/responses/response-sequencer';
import { createForm, createResponses, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp, testDatabaseUrl } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/**
 * Issue 23, section 4: every wait on the database is bounded, and a database that is away or a
 * wait that ran out answers 503 service_unavailable with Retry-After, never a 500 or a hang.
 */

/** What a 503 for the database must carry: the envelope, its code, and a Retry-After in seconds. */
function expectUnavailable(res: request.Response): void {
  expectError(res, 503, 'service_unavailable');
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  // Neither the SQL nor the database's address reaches the client. The random requestId is left
  // out: a UUID can contain "5432".
  const { message, hint } = res.body.error;
  expect(`${message} ${hint}`).not.toMatch(/SELECT|advisory|127\.0\.0\.1|:5432|postgres:/i);
  expect(Object.keys(res.body.error).sort()).toEqual(['code', 'hint', 'message', 'requestId']);
}

const statuses = (answers: request.Response[]) =>
  answers.reduce<Record<number, number>>((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {});

/**
 * A session of another instance that took a form's sequencer lock (as list_responses,
 * summarize_responses and the deletes do) and then went silent: a paused VM or a partition
 * looks exactly like this to PostgreSQL, a session idle in its transaction, holding its locks.
 */
async function silentSessionHoldingSequencerLock(
  bounds: SessionBounds,
  form: FormRecord,
): Promise<{ ds: DataSource; runner: QueryRunner; pid: number }> {
  const ds = await new DataSource(dataSourceOptions(testDatabaseUrl(), 1, false, bounds)).initialize();
  const runner = ds.createQueryRunner();
  await runner.connect();
  const [{ pid }] = await runner.query('SELECT pg_backend_pid() AS pid');
  await runner.startTransaction();
  expect(await new ResponseStatsRepository().lockSequencer(runner.manager, form.id)).toBe(true);
  return { ds, runner, pid };
}

describe('database faults', () => {
  describe('a silent session elsewhere holds a form’s sequencer lock', () => {
    let app: NestFastifyApplication;
    let ws: TestWorkspace;
    let token: string;
    let form: FormRecord;
    let other: FormRecord;

    beforeAll(async () => {
      app = await createTestApp({
        DATABASE_POOL_SIZE: '4',
        // A read waits for the lock longer than a request waits for a pooled connection: were each
        // waiting read to hold a connection of its own, the instance's other requests would find
        // none within their connect timeout and fail.
        DATABASE_LOCK_TIMEOUT_MS: '3000',
        DATABASE_CONNECT_TIMEOUT_MS: '1500',
      });
      ws = await createWorkspace(app, 'pro');
      ({ token } = await createToken(app, ws));
      form = await createForm(app, ws, { status: 'published' });
      other = await createForm(app, ws, { status: 'published' });
      await createResponses(app, form, 5);
      await createResponses(app, other, 3);
    });
    afterAll(() => app.close());

    const submit = (f: FormRecord) =>
      callTool(app, token, 'create_response', { publicId: f.publicId, answers: { [f.blocks[0].id]: 'During' } });
    const list = (f: FormRecord) => callTool(app, token, 'list_responses', { publicId: f.publicId, limit: 200 });
    const summarize = (f: FormRecord) => callTool(app, token, 'summarize_responses', { publicId: f.publicId });

    it("answers that form's reads 503 with Retry-After, keeps everything else at 200, then counts exactly once the session is gone", async () => {
      const silent = await silentSessionHoldingSequencerLock({ kind: 'maintenance' }, form);
      try {
        // Submissions do not need the lock; this one waits for its seq, so reads must settle it.
        expect((await submit(form)).status).toBe(200);

        const reads = [
          ...Array.from({ length: 6 }, () => list(form)),
          ...Array.from({ length: 6 }, () => summarize(form)),
        ];
        const unrelated = [
          ...Array.from({ length: 4 }, () => callTool(app, token, 'list_forms', {})),
          ...Array.from({ length: 4 }, () => list(other)),
          callTool(app, token, 'get_form', { publicId: form.publicId }),
          submit(other),
          request(app.getHttpServer()).get('/readyz'),
        ];
        const [readAnswers, otherAnswers] = await Promise.all([Promise.all(reads), Promise.all(unrelated)]);

        expect(statuses(readAnswers)).toEqual({ 503: 12 });
        for (const res of readAnswers) expectUnavailable(res);
        expect(statuses(otherAnswers)).toEqual({ 200: otherAnswers.length });
        expect((await request(app.getHttpServer()).get('/readyz')).status).toBe(200);
      } finally {
        await silent.runner.rollbackTransaction().catch(() => undefined);
        await silent.runner.release();
        await silent.ds.destroy();
      }

      // The session ended: the same reads settle and count every response committed before them.
      const [page, summary] = await Promise.all([list(form), summarize(form)]);
      expect(page.status).toBe(200);
      expect(page.body.total).toBe(6);
      expect(
        page.body.responses.map((r: { answers: Record<string, unknown> }) => r.answers[form.blocks[0].id]),
      ).toEqual(['Person 0', 'Person 1', 'Person 2', 'Person 3', 'Person 4', 'During']);
      expect(summary.status).toBe(200);
      expect(summary.body.total).toBe(6);
      const otherPage = await list(other);
      expect(otherPage.body.total).toBe(4);
    });

    it('PostgreSQL ends the silent session (idle_in_transaction_session_timeout) and the reads answer 200 with exact counts', async () => {
      const timeouts = { ...loadConfig({}).databaseTimeouts, idleInTransactionMs: 2000 };
      const silent = await silentSessionHoldingSequencerLock({ kind: 'request', timeouts }, form);
      try {
        expect((await submit(form)).status).toBe(200);
        let page: request.Response | undefined;
        for (let i = 0; i < 40 && page?.status !== 200; i++) {
          page = await list(form);
          if (page.status !== 200) expectUnavailable(page);
        }
        expect(page?.status).toBe(200);
        expect(page?.body.total).toBe(7);
        expect((await summarize(form)).body.total).toBe(7);
        // It was PostgreSQL that ended it: the session is gone, and its transaction cannot commit.
        const [{ alive }] = await app
          .get(DataSource)
          .query('SELECT count(*)::int AS alive FROM pg_stat_activity WHERE pid = $1', [silent.pid]);
        expect(alive).toBe(0);
        await expect(silent.runner.commitTransaction()).rejects.toThrow();
      } finally {
        await silent.runner.release().catch(() => undefined);
        await silent.ds.destroy().catch(() => undefined);
      }
    });
  });

  describe('a silent session holds a form’s sequencer lock, and the lock timeout is long', () => {
    let app: NestFastifyApplication;
    let token: string;
    let form: FormRecord;

    beforeAll(async () => {
      // Far longer than the sequencer's own bound: a read that waited for either would not answer
      // within this test's time.
      app = await createTestApp({ DATABASE_LOCK_TIMEOUT_MS: '60000', DATABASE_STATEMENT_TIMEOUT_MS: '60000' });
      const ws = await createWorkspace(app, 'pro');
      ({ token } = await createToken(app, ws));
      form = await createForm(app, ws, { status: 'published' });
      await createResponses(app, form, 2);
    });
    afterAll(() => app.close());

    it(`reads wait at most ${SEQUENCER_WAIT_MS / 1000} s for it, then answer 503 busy with Retry-After; the edits' lock timeout is unchanged`, async () => {
      const silent = await silentSessionHoldingSequencerLock({ kind: 'maintenance' }, form);
      try {
        const submitted = await callTool(app, token, 'create_response', {
          publicId: form.publicId,
          answers: { [form.blocks[0].id]: 'During' },
        });
        expect(submitted.status).toBe(200);
        for (const [tool, args] of [
          ['list_responses', {}],
          ['list_responses', { where: { block: form.blocks[0].id, op: 'answered' } }],
          ['summarize_responses', {}],
          ['export_responses', {}],
        ] as const) {
          const started = Date.now();
          const res = await callTool(app, token, tool, { publicId: form.publicId, ...args });
          process.stdout.write(
            `[db-faults] ${tool} with the sequencer lock held elsewhere: ${res.status} after ${Date.now() - started} ms\n`,
          );
          if (tool === 'export_responses') {
            // The link is made without settling; its download settles.
            expect(res.status).toBe(200);
            const download = await request(app.getHttpServer()).get(
              new URL(res.body.url).pathname + new URL(res.body.url).search,
            );
            expectUnavailable(download);
            continue;
          }
          expectUnavailable(res);
          expect(res.body.error.message).toMatch(/held by another request/);
          expect(res.headers['retry-after']).toBe('2');
        }
        // The shorter wait was the read's own transaction's: the pool's sessions keep the configured one.
        const [{ lock_timeout }] = await app.get(DataSource).query('SHOW lock_timeout');
        expect(lock_timeout).toBe('1min');
      } finally {
        await silent.runner.rollbackTransaction().catch(() => undefined);
        await silent.runner.release();
        await silent.ds.destroy();
      }
      const page = await callTool(app, token, 'list_responses', { publicId: form.publicId });
      expect(page.status).toBe(200);
      expect(page.body.total).toBe(3);
    }, 30_000);
  });

  describe('the database is away, frozen or slow', () => {
    let relay: Relay;
    let app: NestFastifyApplication;
    let token: string;
    let form: FormRecord;

    beforeAll(async () => {
      const target = new URL(testDatabaseUrl());
      relay = await Relay.start({ host: target.hostname, port: Number(target.port || 5432) });
      const url = new URL(testDatabaseUrl());
      url.hostname = '127.0.0.1';
      url.port = String(relay.port);
      app = await createTestApp(
        {
          DATABASE_CONNECT_TIMEOUT_MS: '1000',
          DATABASE_STATEMENT_TIMEOUT_MS: '1000',
          DATABASE_LOCK_TIMEOUT_MS: '5000',
        },
        url.toString(),
      );
      const ws = await createWorkspace(app, 'pro');
      ({ token } = await createToken(app, ws));
      form = await createForm(app, ws, { status: 'published' });
    });
    afterAll(async () => {
      relay.thaw();
      await relay.up();
      await app.close();
      await relay.down();
    });

    it('a closed database: a tool call answers 503 with Retry-After, /readyz 503; back to 200 once it returns', async () => {
      expect((await callTool(app, token, 'list_forms', {})).status).toBe(200);
      await relay.down();
      for (const tool of ['list_forms', 'get_form']) {
        expectUnavailable(
          await callTool(app, token, tool, { ...(tool === 'get_form' ? { publicId: form.publicId } : {}) }),
        );
      }
      expect((await request(app.getHttpServer()).get('/readyz')).status).toBe(503);
      await relay.up();
      let res: request.Response | undefined;
      for (let i = 0; i < 50 && res?.status !== 200; i++) res = await callTool(app, token, 'list_forms', {});
      expect(res?.status).toBe(200);
    });

    it('a frozen database (connections open, nothing answers): a tool call answers 503 instead of hanging', async () => {
      expect((await callTool(app, token, 'list_forms', {})).status).toBe(200);
      relay.freeze();
      const started = Date.now();
      const answers = await Promise.all([
        callTool(app, token, 'list_forms', {}),
        callTool(app, token, 'get_form', { publicId: form.publicId }),
        callTool(app, token, 'list_responses', { publicId: form.publicId }),
      ]);
      const waited = Date.now() - started;
      for (const res of answers) expectUnavailable(res);
      process.stdout.write(`[db-faults] frozen database: 503 after ${waited} ms\n`);
      relay.thaw();
      let res: request.Response | undefined;
      for (let i = 0; i < 50 && res?.status !== 200; i++) res = await callTool(app, token, 'list_forms', {});
      expect(res?.status).toBe(200);
    });

    it('a path that legitimately runs long (deleting a big form) may, in its own transaction only', async () => {
      const db = app.get(DataSource);
      // 3.5 s: past the statement timeout (1 s) and past the client's own read timer (1 s + 2 s).
      const long = 'SELECT pg_sleep(3.5)';
      await inTransaction(db, async (tx) => {
        await allowLongStatements(tx);
        await tx.query(long);
      });
      await expect(app.get(DataSource).query(long)).rejects.toMatchObject({ code: '57014' });
    });

    it('a statement that runs past DATABASE_STATEMENT_TIMEOUT_MS answers 503 with Retry-After', async () => {
      // A lock wait longer than the statement timeout: PostgreSQL cancels the statement (57014).
      const { runner, ds } = await silentSessionHoldingSequencerLock({ kind: 'maintenance' }, form);
      try {
        expect(
          (
            await callTool(app, token, 'create_response', {
              publicId: form.publicId,
              answers: { [form.blocks[0].id]: 'Slow' },
            })
          ).status,
        ).toBe(200);
        expectUnavailable(await callTool(app, token, 'summarize_responses', { publicId: form.publicId }));
        // Over MCP: the tool's isError result holds the same envelope.
        const mcp = await request(app.getHttpServer())
          .post('/mcp')
          .set('Accept', 'application/json, text/event-stream')
          .set('Content-Type', 'application/json')
          .set('Authorization', `Bearer ${token}`)
          .send({
            jsonrpc: '2.0',
            id: 1,
            method: 'tools/call',
            params: { name: 'summarize_responses', arguments: { publicId: form.publicId } },
          });
        expect(mcp.status).toBe(200);
        expect(mcp.body.result.isError).toBe(true);
        expect(JSON.parse(mcp.body.result.content[0].text).error.code).toBe('service_unavailable');
      } finally {
        await runner.rollbackTransaction().catch(() => undefined);
        await runner.release();
        await ds.destroy();
      }
      expect((await callTool(app, token, 'summarize_responses', { publicId: form.publicId })).body.total).toBe(1);
    });
  });
});

/**
 * A TCP relay to PostgreSQL that a test can close (connections cut, new ones refused) or freeze
 * (connections stay open and new ones are accepted, but nothing is forwarded either way): a
 * database that is down, and one that is paused or cut off by a partition.
 */
class Relay {
  private server?: net.Server;
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  private frozen = false;

  private constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(target: { host: string; port: number }): Promise<Relay> {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(p));
      });
    });
    const relay = new Relay(port, target);
    await relay.up();
    return relay;
  }

  up(): Promise<void> {
    if (this.server) return Promise.resolve();
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      const pair: [net.Socket, net.Socket] = [client, upstream];
      this.pairs.add(pair);
      for (const s of pair) s.on('error', () => undefined);
      client.on('close', () => (upstream.destroy(), this.pairs.delete(pair)));
      upstream.on('close', () => client.destroy());
      client.pipe(upstream).pipe(client);
      if (this.frozen) this.pause(pair);
    });
    this.server = server;
    return new Promise((resolve) => server.listen(this.port, '127.0.0.1', () => resolve()));
  }

  down(): Promise<void> {
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
    const server = this.server;
    this.server = undefined;
    return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  freeze(): void {
    this.frozen = true;
    for (const pair of this.pairs) this.pause(pair);
  }

  thaw(): void {
    this.frozen = false;
    for (const [client, upstream] of this.pairs) {
      client.pipe(upstream).pipe(client);
      client.resume();
      upstream.resume();
    }
  }

  private pause([client, upstream]: [net.Socket, net.Socket]): void {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  }
}

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import { FormRecord, FormsService } from '../../src/forms/forms.service';
import { ResponseStatsRepository } from '../../src/summaries/response-stats.repository';

const stats = new ResponseStatsRepository();
import { ResponsesService } from '../../src/responses/responses.service';
import { summarize } from '../../src/summaries/summarize';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { callToolAt, ensureBuilt, Instance } from '../utils/cluster';
import { createTestApp, testDatabaseUrl } from '../utils/create-test-app';
import { callTool } from '../utils/http';

/**
 * Many submissions to one form at once: they do not wait for each other, each response is
 * sequenced (given its place in the order) and counted exactly once after its commit, whatever
 * dies in between, and reads count every response committed before them.
 */
describe('hot forms: submissions, sequencing and reads', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let token: string;
  let other: Client;

  beforeAll(async () => {
    app = await createTestApp();
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'editor' })).token;
    other = new Client({ connectionString: testDatabaseUrl() });
    await other.connect();
  });
  afterAll(async () => {
    await other.end();
    await app.close();
  });

  const answersFor = (form: FormRecord, i: number) => {
    const [name, , colour, pets, rating] = form.blocks.map((b) => b.id);
    return {
      [name]: `P${i}`,
      [colour]: ['Red', 'Green', 'Blue'][i % 3],
      [pets]: i % 2 ? ['Cat', 'Dog'] : ['Dog'],
      [rating]: 1 + (i % 5),
    };
  };
  const submit = (form: FormRecord, i: number) =>
    callTool(app, token, 'create_response', { publicId: form.publicId, answers: answersFor(form, i) });

  /** Walks list_responses from offset 0 to total; returns the ids seen. */
  async function walk(publicId: string, limit = 7): Promise<string[]> {
    const seen: string[] = [];
    for (let offset = 0, total = Infinity; offset < total;) {
      const res = await callTool(app, token, 'list_responses', { publicId, limit, offset });
      expect(res.status).toBe(200);
      total = res.body.total;
      seen.push(...res.body.responses.map((r: { id: string }) => r.id));
      if (res.body.count === 0) break;
      offset += res.body.count;
    }
    return seen;
  }

  /** Summary, total and walk against the stored rows: every response counted and listed exactly once. */
  async function expectExact(form: FormRecord) {
    const summary = await callTool(app, token, 'summarize_responses', { publicId: form.publicId });
    const rows = await db.query(
      'SELECT id, seq, submitted_at, answers FROM responses WHERE form_id = $1 ORDER BY seq',
      [form.id],
    );
    const fresh = await app.get(FormsService).get(ws.id, form.publicId);
    expect(summary.body).toEqual({
      publicId: form.publicId,
      ...summarize(
        fresh.blocks,
        rows.map((r: { submitted_at: Date; answers: Record<string, unknown> }) => ({
          submittedAt: r.submitted_at,
          answers: r.answers,
        })),
      ),
    });
    // Every response has its own seq (deletes leave gaps).
    const seqs = rows.map((r: { seq: string | null }) => Number(r.seq));
    expect(seqs.every((n: number, i: number) => n > 0 && (i === 0 || n > seqs[i - 1]))).toBe(true);
    expect(await walk(form.publicId)).toEqual(rows.map((r: { id: string }) => r.id));
    return rows.length;
  }

  it('takes a submission while another submission to the same form is still in its transaction', async () => {
    const form = await createForm(app, ws, { status: 'published' });
    // A submission in flight: stored in a transaction that has not committed yet.
    const runner = db.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      await app.get(ResponsesService).create(form, answersFor(form, 0), { source: 'api' }, runner.manager);
      const [{ pid }] = await runner.query('SELECT pg_backend_pid() AS pid');
      const second = submit(form, 1).then((res) => res);
      const waited = waitForBlockedBy(pid).then(() => 'waited');
      expect(await Promise.race([second.then(() => 'answered'), waited])).toBe('answered');
      expect((await second).status).toBe(200);
    } finally {
      await runner.commitTransaction();
      await runner.release();
    }
    expect(await expectExact(form)).toBe(2);
  });

  it('counts a submission in the summary and the total as soon as it is answered', async () => {
    const form = await createForm(app, ws, { status: 'published' });
    for (let i = 0; i < 3; i++) {
      expect((await submit(form, i)).status).toBe(200);
      const summary = await callTool(app, token, 'summarize_responses', { publicId: form.publicId });
      const listed = await callTool(app, token, 'list_responses', {
        publicId: form.publicId,
        order: 'newest',
        limit: 1,
      });
      expect([summary.body.total, listed.body.total]).toEqual([i + 1, i + 1]);
    }
  });

  it('equals a recount after concurrent submissions and deletes, with every response in the walk exactly once', async () => {
    const form = await createForm(app, ws, { status: 'published' });
    const first = await Promise.all(Array.from({ length: 20 }, (_, i) => submit(form, i)));
    const ids = first.map((r) => r.body.id as string);
    // More submissions while some of the first ones (sequenced or not yet) are deleted.
    const [more, deleted] = await Promise.all([
      Promise.all(Array.from({ length: 30 }, (_, i) => submit(form, 20 + i))),
      Promise.all(
        ids
          .filter((_, i) => i % 3 === 0)
          .map((responseId) => callTool(app, token, 'delete_response', { publicId: form.publicId, responseId })),
      ),
    ]);
    expect(more.every((r) => r.status === 200)).toBe(true);
    expect(deleted.every((r) => r.status === 200)).toBe(true);
    expect(await expectExact(form)).toBe(50 - deleted.length);
  });

  it('takes a deleted response out of the counts only if it was counted (sequenced)', async () => {
    const form = await createForm(app, ws, { status: 'published' });
    expect((await submit(form, 1)).status).toBe(200);
    expect(await expectExact(form)).toBe(1);
    // Deleted before anything could sequence it (in the transaction that stored it): it was never counted.
    await db.transaction(async (tx) => {
      const waiting = await app.get(ResponsesService).create(form, answersFor(form, 2), { source: 'api' }, tx);
      expect(await stats.deleteResponse(tx, form.id, waiting.id)).toBe(true);
    });
    expect(await expectExact(form)).toBe(1);
    // And one that was sequenced is taken out.
    const [{ id }] = await db.query('SELECT id FROM responses WHERE form_id = $1', [form.id]);
    expect((await callTool(app, token, 'delete_response', { publicId: form.publicId, responseId: id })).status).toBe(
      200,
    );
    expect(await expectExact(form)).toBe(0);
  });

  it('loses nothing when the instance that stored responses dies before sequencing them: another sequences them, with no read needed', async () => {
    const form = await createForm(app, ws, { status: 'published' });
    // What a crashed instance leaves: committed responses with no seq yet (its own sequencing never ran).
    await other.query('BEGIN');
    await other.query(
      `INSERT INTO responses (form_id, submitted_at, answers, source) SELECT $1, clock_timestamp(), $2::jsonb, 'api' FROM generate_series(1, 5)`,
      [form.id, JSON.stringify({ [form.blocks[0].id]: 'orphan' })],
    );
    await other.query('COMMIT');
    // The running instances' background passes give them their seq and count them.
    await waitFor(
      async () =>
        (await db.query('SELECT count(*)::int AS n FROM responses WHERE form_id = $1 AND seq IS NULL', [form.id]))[0]
          .n === 0,
    );
    const [{ total }] = await db.query('SELECT total::int FROM response_counters WHERE form_id = $1', [form.id]);
    expect(total).toBe(5);
    expect(await expectExact(form)).toBe(5);
  });

  it('loses nothing and counts nothing twice when a sequencing dies before its commit', async () => {
    const form = await createForm(app, ws, { status: 'published' });
    // Another "instance" takes the form's sequencer, sequences the submissions (their seq given,
    // aggregates updated), and its connection dies before the commit.
    const dying = new Client({ connectionString: testDatabaseUrl() });
    await dying.connect();
    dying.on('error', () => undefined);
    const tx = {
      query: async (sql: string, params?: unknown[]) => (await dying.query(sql, params)).rows,
    } as unknown as EntityManager;
    try {
      await dying.query('BEGIN');
      await stats.lockSequencer(tx, form.id);
      const submitted = await Promise.all(Array.from({ length: 8 }, (_, i) => submit(form, i)));
      expect(submitted.every((r) => r.status === 200)).toBe(true);
      expect(await stats.sequenceResponses(tx, [form.id])).toBe(8);
      const {
        rows: [{ pid }],
      } = await dying.query('SELECT pg_backend_pid() AS pid');
      await db.query('SELECT pg_terminate_backend($1)', [pid]);
    } finally {
      await dying.end().catch(() => undefined);
    }
    expect((await submit(form, 8)).status).toBe(200);
    expect(await expectExact(form)).toBe(9);
  });

  it('gives responses submitted at the same time their order of arrival', async () => {
    const form = await createForm(app, ws, { status: 'published' });
    const at = new Date(Date.UTC(2026, 5, 1));
    const ids: string[] = [];
    for (let i = 0; i < 6; i++)
      ids.push(
        (await app.get(ResponsesService).create(form, answersFor(form, i), { source: 'import', submittedAt: at })).id,
      );
    expect(await walk(form.publicId, 4)).toEqual(ids);
  });

  /** Resolves once a session waits for a lock held by the backend `pid` (a submission queued behind the first one). */
  async function waitForBlockedBy(pid: number): Promise<void> {
    await waitFor(
      async () =>
        (
          await other.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [
            pid,
          ])
        ).rows[0].n > 0,
      25_000,
    );
  }
});

/**
 * `npm start` with no DATABASE_URL: the built service on its embedded PostgreSQL, whose one
 * session every pooled connection shares.
 */
describe('hot forms on the embedded PostgreSQL (one session shared by every connection)', () => {
  it('takes concurrent submissions and counts each once', async () => {
    ensureBuilt();
    const dir = mkdtempSync(join(tmpdir(), 'formwork-data-'));
    const instance = await Instance.start(
      'embedded',
      { DATA_DIR: dir, NODE_ENV: 'development', LOG_LEVEL: 'warn' },
      90_000,
    );
    try {
      // The first start on an empty database prints a demo token.
      await waitFor(async () => instance.lines.some((l) => /token: fw_/.test(l)), 30_000);
      const token = /token: (fw_\w+)/.exec(instance.lines.join('\n'))![1];
      const publicId = (await callToolAt(instance.port, token, 'list_forms', {})).json.forms[0].publicId;
      const form = (await callToolAt(instance.port, token, 'get_form', { publicId })).json;
      const before = (await callToolAt(instance.port, token, 'summarize_responses', { publicId })).json.total;
      const answers = Object.fromEntries(
        form.blocks
          .filter((b: { required: boolean }) => b.required)
          .map((b: { id: string; type: string; choices?: Array<{ label: string }> }) => [
            b.id,
            b.type === 'email' ? 'ada@example.com' : b.type === 'rating' ? 4 : b.choices![0].label,
          ]),
      );
      const answered = await Promise.all(
        Array.from({ length: 8 }, () => callToolAt(instance.port, token, 'create_response', { publicId, answers })),
      );
      expect(answered.map((r) => r.status)).toEqual(Array(8).fill(200));
      expect((await callToolAt(instance.port, token, 'summarize_responses', { publicId })).json.total).toBe(before + 8);
    } finally {
      await instance.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('the condition never held');
    await new Promise((r) => setTimeout(r, 25));
  }
}

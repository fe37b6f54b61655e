import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { AuditService } from '../../src/audit/audit.service';
import { FormRecord } from '../../src/forms/forms.service';
import { MAX_INSERT_BATCH, ResponseInsertBatcher } from '../../src/responses/response-insert-batcher';
import { NewResponse, ResponsesRepository } from '../../src/responses/responses.repository';
import { uuidv7 } from '../../src/common/ids';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/**
 * Submissions stored together (ResponseInsertBatcher): under load, one statement stores the
 * submissions that waited for it, and each must still come out as if stored alone: its own row,
 * audit record and events, its own version check, and its own error.
 */
describe('submissions stored in one statement', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let batcher: ResponseInsertBatcher;
  let repo: ResponsesRepository;
  /** The repository's own insertMany, for the spies to call. */
  let realInsert: ResponsesRepository['insertMany'];
  let adminA: string;
  let wsA: TestWorkspace;
  let wsB: TestWorkspace;
  let tokenA: { token: string; id: string };
  let tokenB: { token: string; id: string };

  beforeAll(async () => {
    // DATABASE_POOL_SIZE 4 (createTestApp): two insert statements at a time.
    app = await createTestApp({ WEBHOOKS_ALLOW_PRIVATE_URLS: 'true', WEBHOOKS_DELIVERY: 'false' });
    db = app.get(DataSource);
    batcher = app.get(ResponseInsertBatcher);
    repo = app.get(ResponsesRepository);
    realInsert = repo.insertMany.bind(repo);
    wsA = await createWorkspace(app, 'pro');
    wsB = await createWorkspace(app, 'pro');
    tokenA = await createToken(app, wsA, { role: 'editor' });
    tokenB = await createToken(app, wsB, { role: 'editor' });
    adminA = (await createToken(app, wsA, { role: 'admin' })).token;
  });
  afterAll(() => app.close());
  afterEach(() => jest.restoreAllMocks());

  /** Workspaces of every insert statement from now on. */
  let workspacesOf: string[][] = [];

  /** Records the size of every insert statement's batch (and its workspaces, in workspacesOf). */
  function countStatements(): number[] {
    const sizes: number[] = [];
    workspacesOf = [];
    jest.spyOn(repo, 'insertMany').mockImplementation((m, responses) => {
      sizes.push(responses.length);
      workspacesOf.push([...new Set(responses.map((r) => r.form.workspaceId))]);
      return realInsert(m, responses);
    });
    return sizes;
  }

  const nameOf = (form: FormRecord) => form.blocks[0].id;

  it('stores concurrent submissions of two workspaces, one workspace a statement, each with its own audit record and event', async () => {
    const hook = await callTool(app, adminA, 'create_webhook', {
      url: 'http://127.0.0.1:9/hooks',
      events: ['response.created'],
    });
    expect(hook.status).toBe(200);
    const formA = await createForm(app, wsA);
    const formB = await createForm(app, wsB);
    const sizes = countStatements();
    const n = 30;
    const calls = [];
    for (let i = 0; i < n; i++) {
      calls.push(
        callTool(app, tokenA.token, 'create_response', {
          publicId: formA.publicId,
          answers: { [nameOf(formA)]: `A${i}` },
        }),
      );
      calls.push(
        callTool(app, tokenB.token, 'create_response', {
          publicId: formB.publicId,
          answers: { [nameOf(formB)]: `B${i}` },
        }),
      );
    }
    const results = await Promise.all(calls);
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));

    // Fewer statements than submissions, none over the cap: submissions waited and went together.
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(2 * n);
    expect(Math.max(...sizes)).toBeGreaterThan(1);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_INSERT_BATCH);
    // Never two workspaces in one statement.
    expect(workspacesOf.every((w) => w.length === 1)).toBe(true);

    for (const [form, ws, token, prefix] of [
      [formA, wsA, tokenA, 'A'],
      [formB, wsB, tokenB, 'B'],
    ] as const) {
      const answered = results.filter((r) => r.body.answers[nameOf(form)]?.startsWith(prefix));
      expect(answered).toHaveLength(n);
      const stored = await db.query(`SELECT id, answers ->> $2 AS name FROM responses WHERE form_id = $1 ORDER BY id`, [
        form.id,
        nameOf(form),
      ]);
      expect(stored.map((r: { id: string; name: string }) => [r.id, r.name])).toEqual(
        answered.map((r) => [r.body.id, r.body.answers[nameOf(form)]]).sort((a, b) => (a[0] < b[0] ? -1 : 1)),
      );
      const audit = await db.query(
        `SELECT subject_id AS "subjectId", actor_id AS "actorId", actor_kind AS "actorKind", details, request_id AS "requestId"
           FROM audit_events WHERE workspace_id = $1 AND action = 'response.create' ORDER BY subject_id`,
        [ws.id],
      );
      expect(audit.map((a: { subjectId: string }) => a.subjectId)).toEqual(stored.map((r: { id: string }) => r.id));
      for (const a of audit) {
        expect(a).toMatchObject({ actorId: token.id, actorKind: 'api_token', details: { form: form.publicId } });
        expect(typeof a.requestId).toBe('string');
      }
      // Each request's own id on its record.
      expect(new Set(audit.map((a: { requestId: string }) => a.requestId)).size).toBe(n);
    }
    // Events for the workspace with an endpoint only, one per response, each with its own body.
    const deliveries = await db.query(
      `SELECT workspace_id AS "workspaceId", payload FROM webhook_deliveries WHERE endpoint_id = $1`,
      [hook.body.id],
    );
    expect(deliveries).toHaveLength(n);
    const bodies = deliveries.map((d: { payload: string }) => JSON.parse(d.payload));
    const fromA = results.filter((r) => r.body.answers[nameOf(formA)] !== undefined);
    expect(bodies.map((b: { data: { response: { id: string } } }) => b.data.response.id).sort()).toEqual(
      fromA.map((r) => r.body.id).sort(),
    );
    for (const b of bodies) {
      const mine = fromA.find((r) => r.body.id === b.data.response.id)!;
      expect(b.data.response.submittedAt).toBe(mine.body.submittedAt);
      expect(b.data.response.answers).toEqual(mine.body.answers);
    }
  });

  /** Holds both statement slots until `release` is called, so that what comes next waits and goes together. */
  async function holdSlots(form: FormRecord): Promise<() => Promise<void>> {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const spy = jest.spyOn(repo, 'insertMany').mockImplementationOnce(async (m, r) => {
      await gate;
      return realInsert(m, r);
    });
    spy.mockImplementationOnce(async (m, r) => {
      await gate;
      return realInsert(m, r);
    });
    const held = [batcher.insert(newResponse(form, 'held 1')), batcher.insert(newResponse(form, 'held 2'))];
    return async () => {
      open();
      await Promise.all(held);
    };
  }

  function newResponse(form: FormRecord, name: string, over: Partial<NewResponse> = {}): NewResponse {
    return { id: uuidv7(), form, answers: { [nameOf(form)]: name }, source: 'api', ...over };
  }

  it('leaves out only the submission whose form changed, for its caller to validate again', async () => {
    const form = await createForm(app, wsA);
    const release = await holdSlots(form);
    const sizes = countStatements();
    const stale = newResponse(form, 'stale', { form: { ...form, version: form.version - 1 } });
    const fresh = [newResponse(form, 'one'), newResponse(form, 'two')];
    const outcomes = [batcher.insert(fresh[0]), batcher.insert(stale), batcher.insert(fresh[1])];
    await release();
    const [one, left, two] = await Promise.all(outcomes);
    expect(sizes).toEqual([3]); // the three went as one statement
    expect(left).toBeUndefined();
    expect([one?.id, two?.id]).toEqual(fresh.map((r) => r.id));
    const names = await db.query(`SELECT answers ->> $2 AS name FROM responses WHERE form_id = $1 ORDER BY name`, [
      form.id,
      nameOf(form),
    ]);
    expect(names.map((r: { name: string }) => r.name)).toEqual(['held 1', 'held 2', 'one', 'two']);
  });

  it('fails only the submission whose part of the statement failed; the others are stored', async () => {
    const form = await createForm(app, wsA);
    const release = await holdSlots(form);
    const sizes = countStatements();
    const audit = app.get(AuditService);
    const principal = { workspace: { id: wsA.id }, credential: { kind: 'api_token', id: tokenA.id } } as never;
    const good = newResponse(form, 'kept', { audit: audit.recordJson(principal, 'response.create') });
    // An audit record the table refuses (no workspace): the statement fails as a whole.
    const bad = newResponse(form, 'refused', {
      audit: { ...audit.recordJson(principal, 'response.create'), workspaceId: null as never },
    });
    const also = newResponse(form, 'kept too');
    const outcomes = [batcher.insert(good), batcher.insert(bad), batcher.insert(also)].map((p) =>
      p.then(
        (row) => ({ row }),
        (err: { code?: string }) => ({ err }),
      ),
    );
    await release();
    const [kept, refused, keptToo] = await Promise.all(outcomes);
    expect(sizes).toEqual([3, 1, 1, 1]); // together, then each alone
    expect(refused).toMatchObject({ err: { code: '23502' } }); // not_null_violation: its own error
    expect(kept).toMatchObject({ row: { id: good.id } });
    expect(keptToo).toMatchObject({ row: { id: also.id } });
    const names = await db.query(`SELECT answers ->> $2 AS name FROM responses WHERE form_id = $1 ORDER BY name`, [
      form.id,
      nameOf(form),
    ]);
    expect(names.map((r: { name: string }) => r.name)).toEqual(['held 1', 'held 2', 'kept', 'kept too']);
    const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM audit_events WHERE subject_id = $1`, [good.id]);
    expect(n).toBe(1);
  });

  it('fails every submission of a statement the database failed, without trying each again', async () => {
    const form = await createForm(app, wsA);
    const release = await holdSlots(form);
    const sizes = countStatements();
    const lost = Object.assign(new Error('Connection terminated unexpectedly'), { code: undefined });
    jest.spyOn(repo, 'insertMany').mockImplementationOnce(async (_m, responses) => {
      sizes.push(responses.length);
      throw lost;
    });
    const outcomes = [1, 2, 3].map((i) => batcher.insert(newResponse(form, `lost ${i}`)).catch((err: unknown) => err));
    await release();
    expect(await Promise.all(outcomes)).toEqual([lost, lost, lost]);
    expect(sizes).toEqual([3]); // no retries on a database that is away: each would add a connection wait
  });

  it('answers 503 with Retry-After to a submission that waited its turn longer than a pooled connection may be waited for', async () => {
    const form = await createForm(app, wsA);
    const release = await holdSlots(form);
    const late = callTool(app, tokenA.token, 'create_response', {
      publicId: form.publicId,
      answers: { [nameOf(form)]: 'late' },
    }).then((res) => res);
    // DATABASE_CONNECT_TIMEOUT_MS: 3 s by default.
    await new Promise((resolve) => setTimeout(resolve, 3_300));
    await release();
    const res = await late;
    expectError(res, 503, 'service_unavailable');
    expect(res.headers['retry-after']).toBe('2');
    const names = await db.query(`SELECT answers ->> $2 AS name FROM responses WHERE form_id = $1 ORDER BY name`, [
      form.id,
      nameOf(form),
    ]);
    expect(names.map((r: { name: string }) => r.name)).toEqual(['held 1', 'held 2']);
  });
});

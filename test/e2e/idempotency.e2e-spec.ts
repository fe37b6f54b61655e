import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { FormRecord, FormsService } from '../../src/forms/forms.service';
import { fingerprint } from '../../src/idempotency/canonical-json';
import { IdempotencyInterceptor } from '../../src/idempotency/idempotency.interceptor';
import { IdempotencyService } from '../../src/idempotency/idempotency.service';
import { ResponsesRepository } from '../../src/responses/responses.repository';
import { ResponsesService } from '../../src/responses/responses.service';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp, testDatabaseUrl } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

const onServer = process.env.FORMWORK_TEST_DATABASE_KIND === 'server';

describe('Idempotency-Key on tool calls', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let editor: { token: string; id: string };
  let form: FormRecord;
  let nameBlock: string;

  const keyed = (token: string, tool: string, body: unknown, key: string, headers: Record<string, string> = {}) =>
    callTool(app, token, tool, body, { 'Idempotency-Key': key, ...headers });
  const responseArgs = (name: string, f: FormRecord = form) => ({
    publicId: f.publicId,
    answers: { [f.blocks[0].id]: name },
  });
  const responsesNamed = async (name: string, f: FormRecord = form) =>
    Number(
      (
        await db.query(`SELECT count(*)::int AS n FROM responses WHERE form_id = $1 AND answers ->> $2 = $3`, [
          f.id,
          f.blocks[0].id,
          name,
        ])
      )[0].n,
    );
  const keyRows = (key: string) =>
    db.query(
      `SELECT tool, response_status, response_body, locked_until FROM idempotency_keys WHERE idempotency_key = $1`,
      [key],
    );

  beforeAll(async () => {
    app = await createTestApp();
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    editor = await createToken(app, ws, { role: 'editor' });
    form = await createForm(app, ws);
    nameBlock = form.blocks[0].id;
  });
  afterAll(() => app.close());

  it('sends only keyed calls through the interceptor; a call without the header runs as it is', async () => {
    const intercept = jest.spyOn(IdempotencyInterceptor.prototype, 'intercept');
    try {
      const plain = await callTool(app, editor.token, 'create_response', responseArgs('unkeyed'));
      expect(plain.status).toBe(200);
      expect(plain.headers['idempotency-replayed']).toBeUndefined();
      expect(intercept).not.toHaveBeenCalled();
      const key = randomUUID();
      expect((await keyed(editor.token, 'create_response', responseArgs('keyed'), key)).status).toBe(200);
      const again = await keyed(editor.token, 'create_response', responseArgs('keyed'), key);
      expect(again.headers['idempotency-replayed']).toBe('true');
      expect(intercept).toHaveBeenCalledTimes(2);
      expect(await responsesNamed('unkeyed')).toBe(1);
      expect(await responsesNamed('keyed')).toBe(1);
    } finally {
      intercept.mockRestore();
    }
  });
  afterEach(() => jest.restoreAllMocks());

  describe('a retry with the same key and arguments', () => {
    it('replays the first status and body byte for byte, with Idempotency-Replayed: true, and does not run the tool again', async () => {
      const key = randomUUID();
      const first = await keyed(editor.token, 'create_response', responseArgs('replay-1'), key);
      expect(first.status).toBe(200);
      expect(first.headers['idempotency-replayed']).toBeUndefined();
      const again = await keyed(editor.token, 'create_response', responseArgs('replay-1'), key);
      expect(again.status).toBe(200);
      expect(again.headers['idempotency-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
      expect(again.headers['content-type']).toMatch(/^application\/json/);
      expect(again.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
      expect(await responsesNamed('replay-1')).toBe(1);
      const audits = await db.query(
        `SELECT count(*)::int AS n FROM audit_events WHERE action = 'response.create' AND subject_id = $1`,
        [first.body.id],
      );
      expect(audits[0].n).toBe(1);
    });

    it('is recognised whatever the order of members and the spacing of the JSON', async () => {
      const key = randomUUID();
      const a = `{"publicId":"${form.publicId}","answers":{"${nameBlock}":"order"}}`;
      const b = `{ "answers" : { "${nameBlock}" : "order" } ,  "publicId" : "${form.publicId}" }`;
      const send = (raw: string) =>
        request(app.getHttpServer())
          .post('/api/v1/tools/create_response')
          .set('Authorization', `Bearer ${editor.token}`)
          .set('Content-Type', 'application/json')
          .set('Idempotency-Key', key)
          .send(raw);
      const first = await send(a);
      const second = await send(b);
      expect(first.status).toBe(200);
      expect(second.headers['idempotency-replayed']).toBe('true');
      expect(second.body).toEqual(first.body);
      expect(await responsesNamed('order')).toBe(1);
    });

    it('replays read tools too', async () => {
      const key = randomUUID();
      const first = await keyed(editor.token, 'get_form', { publicId: form.publicId }, key);
      const again = await keyed(editor.token, 'get_form', { publicId: form.publicId }, key);
      expect(first.status).toBe(200);
      expect(again.headers['idempotency-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
    });

    it('accepts a key of 255 characters', async () => {
      const key = 'k'.repeat(255);
      expect((await keyed(editor.token, 'list_forms', {}, key)).status).toBe(200);
      expect((await keyed(editor.token, 'list_forms', {}, key)).headers['idempotency-replayed']).toBe('true');
    });
  });

  describe('a key reused with different arguments', () => {
    it('is 422 idempotency_key_reused, and the tool does not run', async () => {
      const key = randomUUID();
      expect((await keyed(editor.token, 'create_response', responseArgs('first-body'), key)).status).toBe(200);
      const reused = await keyed(editor.token, 'create_response', responseArgs('second-body'), key);
      expectError(reused, 422, 'idempotency_key_reused');
      expect(await responsesNamed('second-body')).toBe(0);
      // The first answer is still there for a true retry.
      expect(
        (await keyed(editor.token, 'create_response', responseArgs('first-body'), key)).headers['idempotency-replayed'],
      ).toBe('true');
    });
  });

  describe('scope of a key', () => {
    it('belongs to one credential: another credential with the same key runs the tool', async () => {
      const other = await createToken(app, ws, { role: 'editor' });
      const key = randomUUID();
      await keyed(editor.token, 'create_response', responseArgs('per-credential'), key);
      const second = await keyed(other.token, 'create_response', responseArgs('per-credential'), key);
      expect(second.status).toBe(200);
      expect(second.headers['idempotency-replayed']).toBeUndefined();
      expect(await responsesNamed('per-credential')).toBe(2);
    });

    it('belongs to one tool: the same key on another tool runs that tool', async () => {
      const key = randomUUID();
      await keyed(editor.token, 'get_form', { publicId: form.publicId }, key);
      const other = await keyed(editor.token, 'list_forms', {}, key);
      expect(other.status).toBe(200);
      expect(other.headers['idempotency-replayed']).toBeUndefined();
      expect(other.body).toHaveProperty('forms');
    });
  });

  describe('bad keys', () => {
    it.each([
      ['empty', ''],
      ['longer than 255 characters', 'k'.repeat(256)],
    ])('%s: 400 invalid_arguments with a hint, and nothing runs', async (_label, key) => {
      const res = await keyed(editor.token, 'create_response', responseArgs(`bad-key-${key.length}`), key);
      const error = expectError(res, 400, 'invalid_arguments');
      expect(error.message).toContain('Idempotency-Key');
      expect(error.hint).toMatch(/UUID/);
      expect(await responsesNamed(`bad-key-${key.length}`)).toBe(0);
    });
  });

  describe('what is stored', () => {
    it("stores the tool's own refusal (4xx from inside a write tool) and replays it", async () => {
      const key = randomUUID();
      const bad = { publicId: form.publicId, answers: { [form.blocks[5].id]: 'not a number' } };
      const first = await keyed(editor.token, 'create_response', bad, key);
      expectError(first, 400, 'invalid_arguments');
      const again = await keyed(editor.token, 'create_response', bad, key);
      expect(again.status).toBe(400);
      expect(again.headers['idempotency-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
      expect((await keyed(editor.token, 'create_response', responseArgs('after-refusal'), key)).status).toBe(422);
    });

    it('stores a 404 of a read tool and a 409 version_conflict of a write tool', async () => {
      const missing = randomUUID();
      const notFound = await keyed(editor.token, 'get_form', { publicId: 'f_doesnotexist' }, missing);
      expectError(notFound, 404, 'not_found');
      const replayed = await keyed(editor.token, 'get_form', { publicId: 'f_doesnotexist' }, missing);
      expect(replayed.status).toBe(404);
      expect(replayed.headers['idempotency-replayed']).toBe('true');

      const stale = randomUUID();
      const update = { publicId: form.publicId, version: form.version + 100, title: 'Stale' };
      expectError(await keyed(editor.token, 'update_form', update, stale), 409, 'version_conflict');
      const again = await keyed(editor.token, 'update_form', update, stale);
      expect(again.status).toBe(409);
      expect(again.headers['idempotency-replayed']).toBe('true');
    });

    it('stores nothing for failures before the tool ran (400 arguments, 401, 403), so the retry runs', async () => {
      const key = randomUUID();
      expectError(
        await keyed(editor.token, 'create_response', { publicId: form.publicId, answers: {}, extra: 1 }, key),
        400,
        'invalid_arguments',
      );
      expectError(
        await callTool(app, undefined, 'create_response', responseArgs('before-run'), { 'Idempotency-Key': key }),
        401,
        'unauthorized',
      );
      const viewer = await createToken(app, ws, { role: 'viewer' });
      expectError(await keyed(viewer.token, 'create_response', responseArgs('before-run'), key), 403, 'forbidden');
      expect(await keyRows(key)).toEqual([]);
      const ran = await keyed(editor.token, 'create_response', responseArgs('before-run'), key);
      expect(ran.status).toBe(200);
      expect(ran.headers['idempotency-replayed']).toBeUndefined();
    });

    it('stores nothing for a 429 either', async () => {
      const tight = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '1' });
      try {
        const t = await createToken(tight, ws, { role: 'editor' });
        expect((await callTool(tight, t.token, 'list_forms', {})).status).toBe(200);
        const key = randomUUID();
        expectError(
          await callTool(tight, t.token, 'create_response', responseArgs('limited'), { 'Idempotency-Key': key }),
          429,
          'rate_limited',
        );
        expect(await keyRows(key)).toEqual([]);
      } finally {
        await tight.close();
      }
    });

    it('rolls back a write that failed with a 5xx, stores nothing, and the retry runs afresh', async () => {
      const key = randomUUID();
      // create_form writes in the key's transaction; the form row is inserted, then the tool fails: all of it must go.
      const forms = app.get(FormsService);
      const createAs = forms.createAs.bind(forms);
      jest.spyOn(forms, 'createAs').mockImplementationOnce(async (...args) => {
        await createAs(...args);
        throw new Error('disk on fire');
      });
      const title = `five-hundred ${key}`;
      const formsTitled = async () =>
        (await db.query(`SELECT count(*)::int AS n FROM forms WHERE title = $1`, [title]))[0].n;
      const failed = await keyed(editor.token, 'create_form', { title }, key);
      expectError(failed, 500, 'internal_error');
      expect(await formsTitled()).toBe(0);
      expect(await keyRows(key)).toEqual([]);
      const retried = await keyed(editor.token, 'create_form', { title }, key);
      expect(retried.status).toBe(200);
      expect(retried.headers['idempotency-replayed']).toBeUndefined();
      expect(await formsTitled()).toBe(1);
    });

    it('create_response: a failed insert statement stores neither the response nor the key, and the retry runs afresh', async () => {
      const key = randomUUID();
      // The key is claimed by the statement that stores the response: when that statement fails, nothing is left.
      jest
        .spyOn(ResponsesRepository.prototype, 'insertMany')
        .mockRejectedValueOnce(Object.assign(new Error('terminating connection'), { code: '57P01' }));
      const failed = await keyed(editor.token, 'create_response', responseArgs('statement-failed'), key);
      expect(failed.status).toBeGreaterThanOrEqual(500);
      expect(await responsesNamed('statement-failed')).toBe(0);
      expect(await keyRows(key)).toEqual([]);
      const retried = await keyed(editor.token, 'create_response', responseArgs('statement-failed'), key);
      expect(retried.status).toBe(200);
      expect(retried.headers['idempotency-replayed']).toBeUndefined();
      expect(await responsesNamed('statement-failed')).toBe(1);
    });

    it('create_response: an answer lost after its statement committed is replayed to the retry, and nothing runs twice', async () => {
      const key = randomUUID();
      const repo = app.get(ResponsesRepository);
      const insertMany = repo.insertMany.bind(repo);
      // The statement commits the response, the key and the answer together; the connection then drops.
      jest.spyOn(repo, 'insertMany').mockImplementationOnce(async (...args) => {
        await insertMany(...args);
        throw Object.assign(new Error('connection lost'), { code: '08006' });
      });
      const failed = await keyed(editor.token, 'create_response', responseArgs('lost-answer'), key);
      expect(failed.status).toBeGreaterThanOrEqual(500);
      const retried = await keyed(editor.token, 'create_response', responseArgs('lost-answer'), key);
      expect(retried.status).toBe(200);
      expect(retried.headers['idempotency-replayed']).toBe('true');
      expect(await responsesNamed('lost-answer')).toBe(1);
      const [row] = await keyRows(key);
      expect(row.response_body).toBe(retried.text);
      expect(JSON.parse(retried.text)).toMatchObject({ answers: { [nameBlock]: 'lost-answer' } });
    });

    it('releases the key of a read tool that failed with a 5xx', async () => {
      const key = randomUUID();
      jest.spyOn(app.get(ResponsesService), 'summarize').mockRejectedValueOnce(new Error('boom'));
      expectError(
        await keyed(editor.token, 'summarize_responses', { publicId: form.publicId }, key),
        500,
        'internal_error',
      );
      expect(await keyRows(key)).toEqual([]);
      const retried = await keyed(editor.token, 'summarize_responses', { publicId: form.publicId }, key);
      expect(retried.status).toBe(200);
      expect(retried.headers['idempotency-replayed']).toBeUndefined();
    });

    it('commits the key with the write: the record holds the status and exact body', async () => {
      const key = randomUUID();
      const res = await keyed(editor.token, 'create_response', responseArgs('committed'), key);
      const [row] = await keyRows(key);
      expect(row).toMatchObject({
        tool: 'create_response',
        response_status: 200,
        response_body: res.text,
        locked_until: null,
      });
    });
  });

  describe('concurrent duplicates', () => {
    it('run the tool exactly once; the others get 409 idempotency_key_in_use with Retry-After: 1, or the replay', async () => {
      const key = randomUUID();
      const answers = await Promise.all(
        Array.from({ length: 8 }, () => keyed(editor.token, 'create_response', responseArgs('concurrent'), key)),
      );
      expect(await responsesNamed('concurrent')).toBe(1);
      const firsts = answers.filter((r) => r.status === 200 && r.headers['idempotency-replayed'] === undefined);
      expect(firsts).toHaveLength(1);
      for (const r of answers) {
        if (r.status === 409) {
          expectError(r, 409, 'idempotency_key_in_use');
          expect(r.headers['retry-after']).toBe('1');
        } else {
          expect(r.status).toBe(200);
          expect(r.text).toBe(firsts[0].text);
        }
      }
      const after = await keyed(editor.token, 'create_response', responseArgs('concurrent'), key);
      expect(after.headers['idempotency-replayed']).toBe('true');
      expect(after.text).toBe(firsts[0].text);
    });

    it(
      onServer
        ? 'answer 409 while the first call is still running, and the replay once it has finished'
        : 'wait for the first call and get its replay (embedded PostgreSQL: one session runs one transaction at a time)',
      async () => {
        const key = randomUUID();
        const args = responseArgs('while-running');
        if (!onServer) {
          const [a, b] = await Promise.all([
            keyed(editor.token, 'create_response', args, key),
            keyed(editor.token, 'create_response', args, key),
          ]);
          expect([a.status, b.status]).toEqual([200, 200]);
          expect(await responsesNamed('while-running')).toBe(1);
          return;
        }
        // Hold the form's row so that the first call blocks inside its transaction.
        const blocker = new Client({ connectionString: testDatabaseUrl() });
        await blocker.connect();
        try {
          await blocker.query('BEGIN');
          await blocker.query('SELECT id FROM forms WHERE id = $1 FOR UPDATE', [form.id]);
          const first = keyed(editor.token, 'create_response', args, key).then((r) => r);
          await waitFor(async () => {
            // Inside its transaction the blocker would be served its first snapshot of
            // pg_stat_activity again: clear it before each poll.
            await blocker.query('SELECT pg_stat_clear_snapshot()');
            const { rows } = await blocker.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
            );
            return rows[0].n > 0;
          });
          const duplicate = await keyed(editor.token, 'create_response', args, key);
          expectError(duplicate, 409, 'idempotency_key_in_use');
          expect(duplicate.headers['retry-after']).toBe('1');
          await blocker.query('COMMIT');
          const done = await first;
          expect(done.status).toBe(200);
          const retry = await keyed(editor.token, 'create_response', args, key);
          expect(retry.headers['idempotency-replayed']).toBe('true');
          expect(retry.text).toBe(done.text);
          expect(await responsesNamed('while-running')).toBe(1);
        } finally {
          await blocker.query('ROLLBACK').catch(() => undefined);
          await blocker.end();
        }
      },
    );
  });

  describe('many keyed submissions at once (they share insert statements)', () => {
    it('each is stored once with its own key and answer, and each replays its own answer', async () => {
      const keys = Array.from({ length: 24 }, () => randomUUID());
      const firsts = await Promise.all(
        keys.map((key, n) => keyed(editor.token, 'create_response', responseArgs(`batch-${n}`), key)),
      );
      for (const r of firsts) expect(r.status).toBe(200);
      const replays = await Promise.all(
        keys.map((key, n) => keyed(editor.token, 'create_response', responseArgs(`batch-${n}`), key)),
      );
      for (const [n, r] of replays.entries()) {
        expect(r.headers['idempotency-replayed']).toBe('true');
        expect(r.text).toBe(firsts[n].text);
        expect(await responsesNamed(`batch-${n}`)).toBe(1);
      }
      const rows = await db.query(
        `SELECT k.idempotency_key AS key, k.response_id, k.form_public_id, r.answers ->> $2 AS name
           FROM idempotency_keys k JOIN responses r ON r.id::text = k.response_id WHERE k.idempotency_key = ANY ($1)`,
        [keys, nameBlock],
      );
      expect(rows).toHaveLength(keys.length);
      for (const row of rows) {
        const n = keys.indexOf(row.key);
        expect(row).toMatchObject({
          response_id: firsts[n].body.id,
          form_public_id: form.publicId,
          name: `batch-${n}`,
        });
      }
    });
  });

  describe('a key left in progress by an instance that died', () => {
    /** What an instance leaves behind when it dies mid-run: a claim with no answer. */
    async function strandedClaim(tool: string, key: string, args: unknown, lockedFor: string) {
      await db.query(
        `INSERT INTO idempotency_keys (scope, tool, idempotency_key, fingerprint, lock_token, locked_until, workspace_id, read_only)
         VALUES ($1, $2, $3, $4, $5, now() + $6::interval, $7, $8)`,
        [`tok:${editor.id}`, tool, key, fingerprint(args), randomUUID(), lockedFor, ws.id, tool === 'get_form'],
      );
    }

    it.each([
      ['a read tool', 'get_form', () => ({ publicId: form.publicId })],
      ['a write tool', 'create_response', () => responseArgs('taken-over')],
    ])('%s: 409 while its lock holds, then taken over and run once', async (_label, tool, args) => {
      const key = randomUUID();
      await strandedClaim(tool, key, args(), '1 minute');
      const busy = await keyed(editor.token, tool, args(), key);
      expectError(busy, 409, 'idempotency_key_in_use');
      expect(busy.headers['retry-after']).toBe('1');

      await db.query(
        `UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE idempotency_key = $1`,
        [key],
      );
      const taken = await keyed(editor.token, tool, args(), key);
      expect(taken.status).toBe(200);
      expect(taken.headers['idempotency-replayed']).toBeUndefined();
      const replay = await keyed(editor.token, tool, args(), key);
      expect(replay.headers['idempotency-replayed']).toBe('true');
      expect(replay.text).toBe(taken.text);
      if (tool === 'create_response') expect(await responsesNamed('taken-over')).toBe(1);
    });

    it('is not taken over with different arguments: 422', async () => {
      const key = randomUUID();
      await strandedClaim('get_form', key, { publicId: 'f_other' }, '-1 second');
      expectError(
        await keyed(editor.token, 'get_form', { publicId: form.publicId }, key),
        422,
        'idempotency_key_reused',
      );
    });
  });

  describe('retention', () => {
    it('forgets a key after 24 hours: the same key then runs afresh, even with other arguments', async () => {
      const key = randomUUID();
      await keyed(editor.token, 'create_response', responseArgs('day-old'), key);
      await db.query(
        `UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 second' WHERE idempotency_key = $1`,
        [key],
      );
      const fresh = await keyed(editor.token, 'create_response', responseArgs('next-day'), key);
      expect(fresh.status).toBe(200);
      expect(fresh.headers['idempotency-replayed']).toBeUndefined();
      expect(await responsesNamed('next-day')).toBe(1);
    });

    it('purges records older than 24 hours and keeps the others', async () => {
      const old = randomUUID();
      const recent = randomUUID();
      await keyed(editor.token, 'list_forms', {}, old);
      await keyed(editor.token, 'list_forms', {}, recent);
      await db.query(
        `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE idempotency_key = $1`,
        [old],
      );
      expect(await app.get(IdempotencyService).purgeExpired()).toBeGreaterThanOrEqual(1);
      expect(await keyRows(old)).toEqual([]);
      expect(await keyRows(recent)).toHaveLength(1);
    });
  });

  describe('after a deletion, nothing of the deleted data is readable through a replay', () => {
    /** Stored answers that still hold `text` anywhere. */
    const storedWith = async (text: string) =>
      Number(
        (
          await db.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE response_body LIKE '%' || $1 || '%'`, [
            text,
          ])
        )[0].n,
      );

    const storedFor = async (keys: string[]) =>
      Number(
        (await db.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE idempotency_key = ANY($1)`, [keys]))[0]
          .n,
      );

    it('delete_response: its create_response replays a 404, reads run afresh without it, other responses still replay', async () => {
      const f = await createForm(app, ws);
      const [created, kept, listed, got] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
      const secret = `secret-${randomUUID()}`;
      const first = await keyed(editor.token, 'create_response', responseArgs(secret, f), created);
      const other = await keyed(editor.token, 'create_response', responseArgs('still-here', f), kept);
      const page = await keyed(editor.token, 'list_responses', { publicId: f.publicId }, listed);
      expect(page.text).toContain(secret);
      expect(
        (await keyed(editor.token, 'get_response', { publicId: f.publicId, responseId: first.body.id }, got)).text,
      ).toContain(secret);
      // create_response's answer in the clear; the reads' answers sealed (they carry file links): stored all the same.
      const readKeys = [listed, got];
      expect([await storedWith(secret), await storedFor(readKeys)]).toEqual([1, 2]);

      expect(
        (await callTool(app, editor.token, 'delete_response', { publicId: f.publicId, responseId: first.body.id }))
          .status,
      ).toBe(200);
      expect([await storedWith(secret), await storedFor(readKeys)]).toEqual([0, 0]);

      const replay = await keyed(editor.token, 'create_response', responseArgs(secret, f), created);
      expectError(replay, 404, 'not_found');
      expect(replay.headers['idempotency-replayed']).toBe('true');
      expect(await responsesNamed(secret, f)).toBe(0); // the key stays spent: the write did not run again
      const relisted = await keyed(editor.token, 'list_responses', { publicId: f.publicId }, listed);
      expect(relisted.status).toBe(200);
      expect(relisted.headers['idempotency-replayed']).toBeUndefined();
      expect(relisted.text).not.toContain(secret);
      expectError(
        await keyed(editor.token, 'get_response', { publicId: f.publicId, responseId: first.body.id }, got),
        404,
        'not_found',
      );
      const otherAgain = await keyed(editor.token, 'create_response', responseArgs('still-here', f), kept);
      expect(otherAgain.headers['idempotency-replayed']).toBe('true');
      expect(otherAgain.text).toBe(other.text);
    });

    it('delete_form: the answers of every tool that showed the form or its responses are gone', async () => {
      const title = `Doomed ${randomUUID()}`;
      const createKey = randomUUID();
      const formArgs = { title, blocks: [{ type: 'short_text', title: 'Name' }] };
      const created = await keyed(editor.token, 'create_form', formArgs, createKey);
      const publicId = created.body.publicId as string;
      const f = { publicId, blocks: created.body.blocks } as unknown as FormRecord;
      const secret = `secret-${randomUUID()}`;
      const keys = {
        create: randomUUID(),
        update: randomUUID(),
        respond: randomUUID(),
        get: randomUUID(),
        list: randomUUID(),
        summary: randomUUID(),
      };
      await keyed(editor.token, 'update_form', { publicId, description: secret }, keys.update);
      expect((await keyed(editor.token, 'create_response', responseArgs(secret, f), keys.respond)).status).toBe(200);
      await keyed(editor.token, 'get_form', { publicId }, keys.get);
      expect((await keyed(editor.token, 'list_forms', {}, keys.list)).text).toContain(title);
      await keyed(editor.token, 'summarize_responses', { publicId }, keys.summary);
      expect(await storedWith(secret)).toBeGreaterThanOrEqual(3);

      const admin = await createToken(app, ws, { role: 'admin' });
      expect((await callTool(app, admin.token, 'delete_form', { publicId })).status).toBe(200);
      expect(await storedWith(secret)).toBe(0);
      expect(await storedWith(title)).toBe(0);

      for (const [tool, args, key] of [
        ['create_form', formArgs, createKey],
        ['update_form', { publicId, description: secret }, keys.update],
        ['create_response', responseArgs(secret, f), keys.respond],
      ] as const) {
        const replay = await keyed(editor.token, tool, args, key);
        expectError(replay, 404, 'not_found');
        expect(replay.headers['idempotency-replayed']).toBe('true');
      }
      expectError(await keyed(editor.token, 'get_form', { publicId }, keys.get), 404, 'not_found');
      const list = await keyed(editor.token, 'list_forms', {}, keys.list);
      expect(list.headers['idempotency-replayed']).toBeUndefined();
      expect(list.text).not.toContain(title);
    });
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('timed out waiting for the condition');
    await new Promise((r) => setTimeout(r, 20));
  }
}

import { INestApplication } from '@nestjs/common';
import { Client } from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/**
 * A submission that waits for a concurrent edit of its form must be validated against the blocks
 * as the edit left them. The interleaving is forced: a second connection holds the form row locked
 * while it changes the blocks (as update_form does), the submission is sent and seen waiting for
 * that lock, then the edit commits.
 */
describe('a submission racing an edit of its form', () => {
  let app: INestApplication;
  let ws: TestWorkspace;
  let editor: string;
  let editConnection: Client;

  beforeAll(async () => {
    app = await createTestApp();
    ws = await createWorkspace(app, 'pro');
    editor = (await createToken(app, ws, { role: 'editor' })).token;
    editConnection = new Client({ connectionString: process.env.FORMWORK_TEST_DATABASE_URL });
    await editConnection.connect();
  });
  afterAll(async () => {
    await editConnection.end();
    await app.close();
  });

  const blocks = [
    { type: 'multiple_choice' as const, title: 'Colour', choices: ['Red', 'Green'] },
    { type: 'short_text' as const, title: 'Nickname' },
  ];

  /** Runs `edit` (SQL on the form's blocks) in a transaction that holds the form row until `submit` is seen waiting. */
  async function editWhileSubmitting(
    formId: string,
    edit: string,
    params: unknown[],
    submit: () => Promise<request.Response>,
  ): Promise<request.Response> {
    await editConnection.query('BEGIN');
    await editConnection.query('SELECT 1 FROM forms WHERE id = $1 FOR UPDATE', [formId]);
    await editConnection.query(edit, params);
    await editConnection.query('UPDATE forms SET version = version + 1 WHERE id = $1', [formId]);
    const pending = submit().then((res) => res); // supertest sends on then()
    try {
      await waitFor(async () => {
        // Inside a transaction, PostgreSQL keeps serving the first snapshot of pg_stat_activity it
        // took: clear it, or a poll made before the submission queued would be all we ever see.
        await editConnection.query('SELECT pg_stat_clear_snapshot()');
        const { rows } = await editConnection.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> pg_backend_pid()`,
        );
        return rows[0].n > 0;
      });
    } finally {
      await editConnection.query('COMMIT');
    }
    return pending;
  }

  const storedAnswers = async (formId: string) =>
    (await app.get(DataSource).query('SELECT answers FROM responses WHERE form_id = $1', [formId])).map(
      (r: { answers: unknown }) => r.answers,
    );

  it('create_response refuses a choice the edit removed, and stores nothing', async () => {
    const form = await createForm(app, ws, { blocks, status: 'published' });
    const colour = form.blocks[0];
    const green = colour.choices!.find((c) => c.label === 'Green')!;
    const res = await editWhileSubmitting(
      form.id,
      `UPDATE blocks SET settings = jsonb_set(settings, '{choices}', (SELECT jsonb_agg(c) FROM jsonb_array_elements(settings->'choices') c WHERE c->>'id' <> $3))
        WHERE form_id = $1 AND id = $2`,
      [form.id, colour.id, green.id],
      () => callTool(app, editor, 'create_response', { publicId: form.publicId, answers: { [colour.id]: 'Green' } }),
    );
    const error = expectError(res, 400, 'invalid_arguments');
    expect(error.details?.map((d) => d.path)).toEqual([`/answers/${colour.id}`]);
    expect(await storedAnswers(form.id)).toEqual([]);
  });

  /** A published form whose text block "Nickname" a concurrent edit retypes to number while `submit` waits. */
  async function submitWhileRetyping(submit: (publicId: string, nickname: string) => Promise<request.Response>) {
    const form = await createForm(app, ws, { blocks, status: 'published' });
    const nickname = form.blocks[1];
    const res = await editWhileSubmitting(
      form.id,
      `UPDATE blocks SET type = 'number' WHERE form_id = $1 AND id = $2`,
      [form.id, nickname.id],
      () => submit(form.publicId, nickname.id),
    );
    return { form, nickname, res };
  }

  it('the respondent page refuses text for a block the edit made a number (not a 500)', async () => {
    const { form, nickname, res } = await submitWhileRetyping((publicId, id) =>
      request(app.getHttpServer())
        .post(`/f/${publicId}`)
        .send({ answers: { [id]: 'Ada' } }),
    );
    const error = expectError(res, 400, 'invalid_arguments');
    expect(error.details?.map((d) => d.path)).toEqual([`/answers/${nickname.id}`]);
    expect(await storedAnswers(form.id)).toEqual([]);
  });

  it('an answer that fits the edited form is stored against it', async () => {
    const { form, nickname, res } = await submitWhileRetyping((publicId, id) =>
      callTool(app, editor, 'create_response', { publicId, answers: { [id]: 7 } }),
    );
    expect(res.status).toBe(200);
    expect(await storedAnswers(form.id)).toEqual([{ [nickname.id]: 7 }]);
  });

  it('submissions waiting for an edit of their form do not hold up submissions to other forms', async () => {
    // The test app's pool is 4: two insert statements at a time. Two submissions to the form under
    // edit wait for it; if they waited inside those statements, nothing else could be stored.
    const edited = await createForm(app, ws, { blocks, status: 'published' });
    const other = await createForm(app, ws, { blocks, status: 'published' });
    const nick = (form: typeof edited) => form.blocks[1].id;
    await editConnection.query('BEGIN');
    try {
      await editConnection.query('SELECT 1 FROM forms WHERE id = $1 FOR UPDATE', [edited.id]);
      const waiting = [1, 2].map((i) =>
        callTool(app, editor, 'create_response', {
          publicId: edited.publicId,
          answers: { [nick(edited)]: `W${i}` },
        }).then((res) => res),
      );
      await waitFor(async () => {
        await editConnection.query('SELECT pg_stat_clear_snapshot()');
        const { rows } = await editConnection.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> pg_backend_pid()`,
        );
        return rows[0].n === 2;
      });
      const others = await Promise.all(
        [1, 2, 3, 4, 5].map((i) =>
          callTool(app, editor, 'create_response', { publicId: other.publicId, answers: { [nick(other)]: `O${i}` } }),
        ),
      );
      expect(others.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      expect(await storedAnswers(edited.id)).toEqual([]);
      await editConnection.query('COMMIT');
      expect((await Promise.all(waiting)).map((r) => r.status)).toEqual([200, 200]);
    } finally {
      await editConnection.query('ROLLBACK'); // after COMMIT: a warning, nothing to undo
    }
    expect((await storedAnswers(edited.id)).length).toBe(2);
    expect((await storedAnswers(other.id)).length).toBe(5);
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('the submission never waited for the edit');
    await new Promise((r) => setTimeout(r, 20));
  }
}

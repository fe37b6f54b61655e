import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { FormRecord } from '../../src/forms/forms.service';
import { createForm, createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/**
 * The checks of a tool call run in the order ../shared/DESIGN.md fixes: credential (401), tool
 * (404), scope, plan, role (403), arguments (400), Idempotency-Key, then the tool. One call with
 * every fault at once is refused for the first; removing that fault reveals the next.
 */
describe('the order of the checks of a tool call', () => {
  let app: NestFastifyApplication;
  let form: FormRecord;
  let tokens: Record<'readOnlyFree' | 'writerFree' | 'viewerPro' | 'editorPro', string>;

  const MALFORMED = '{"publicId": ';
  const send = (token: string | undefined, tool: string, body: string, key = '') =>
    callTool(app, token, tool, undefined, { 'Content-Type': 'application/json', 'Idempotency-Key': key }).send(body);
  const stored = async (name: string) =>
    Number(
      (
        await app
          .get(DataSource)
          .query(`SELECT count(*)::int AS n FROM responses WHERE form_id = $1 AND answers ->> $2 = $3`, [
            form.id,
            form.blocks[0].id,
            name,
          ])
      )[0].n,
    );
  const keyRows = async (key: string) =>
    Number(
      (
        await app
          .get(DataSource)
          .query('SELECT count(*)::int AS n FROM idempotency_keys WHERE idempotency_key = $1', [key])
      )[0].n,
    );

  beforeAll(async () => {
    app = await createTestApp();
    const free = await createWorkspace(app, 'free');
    const pro = await createWorkspace(app, 'pro');
    form = await createForm(app, pro);
    tokens = {
      readOnlyFree: (await createToken(app, free, { role: 'editor', scopes: ['forms:read'] })).token,
      writerFree: (await createToken(app, free, { role: 'editor', scopes: ['responses:write'] })).token,
      viewerPro: (await createToken(app, pro, { role: 'viewer', scopes: ['responses:write'] })).token,
      editorPro: (await createToken(app, pro, { role: 'editor' })).token,
    };
  });
  afterAll(() => app.close());

  it('reports the first failing check, in the order 401, 404, 403 scope, 403 plan, 403 role, 400 arguments, key, run', async () => {
    expectError(await send(undefined, 'no_such_tool', MALFORMED), 401, 'unauthorized');
    expectError(await send(tokens.readOnlyFree, 'no_such_tool', MALFORMED), 404, 'not_found');
    expectError(await send(tokens.readOnlyFree, 'create_response', MALFORMED), 403, 'insufficient_scope');
    expectError(await send(tokens.writerFree, 'create_response', MALFORMED), 403, 'pro_required');
    expectError(await send(tokens.viewerPro, 'create_response', MALFORMED), 403, 'forbidden');
    const malformed = expectError(await send(tokens.editorPro, 'create_response', MALFORMED), 400, 'invalid_arguments');
    expect(malformed.details).toEqual([{ path: '', message: 'malformed JSON' }]);
    // Arguments before the key: a schema error is reported, not the empty key.
    const schema = expectError(
      await send(tokens.editorPro, 'create_response', JSON.stringify({ publicId: form.publicId })),
      400,
      'invalid_arguments',
    );
    expect(schema.details).toEqual([{ path: '/answers', message: 'is required' }]);
    // Then the key: with valid arguments, the empty key is the refusal, and nothing ran.
    const args = JSON.stringify({ publicId: form.publicId, answers: { [form.blocks[0].id]: 'check-order' } });
    const badKey = expectError(await send(tokens.editorPro, 'create_response', args), 400, 'invalid_arguments');
    expect(badKey.message).toContain('Idempotency-Key');
    expect(await stored('check-order')).toBe(0);
    // Finally the tool runs.
    const key = randomUUID();
    const ran = await send(tokens.editorPro, 'create_response', args, key);
    expect(ran.status).toBe(200);
    expect(await stored('check-order')).toBe(1);
    expect(await keyRows(key)).toBe(1);
  });

  it('claims no key for a call refused before the tool ran', async () => {
    const key = randomUUID();
    for (const [token, tool, body] of [
      [tokens.readOnlyFree, 'no_such_tool', '{}'],
      [tokens.viewerPro, 'create_response', '{}'],
      [tokens.editorPro, 'create_response', MALFORMED],
      [tokens.editorPro, 'create_response', '{"publicId": 1}'],
    ] as const) {
      expect((await send(token, tool, body, key)).status).toBeGreaterThanOrEqual(400);
    }
    expect(await keyRows(key)).toBe(0);
  });
});

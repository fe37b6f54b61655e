/**
 * Answers as they were sent (issue 49, item 9): create_response and update_response answer with
 * `answers` keyed as the caller sent them (by ref or by id, block by block; the blocks not sent by
 * ref when the caller used refs throughout, else by id), over REST and MCP, and a keyed retry
 * replays the first body byte for byte. The response.created event stays keyed by id.
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

describe('create_response and update_response answer keyed as sent', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let admin: string;
  let publicId: string;
  /** Block ids by ref ("age" has no ref: its id under its title's name). */
  let id: Record<'name' | 'colour' | 'age', string>;

  beforeAll(async () => {
    // A webhook endpoint on loopback (nothing listens: its deliveries are read where they are stored).
    app = await createTestApp({ WEBHOOKS_ALLOW_PRIVATE_URLS: 'true', WEBHOOKS_DELIVERY: 'false' });
    db = app.get(DataSource);
    admin = (await createToken(app, await createWorkspace(app, 'pro'), { role: 'admin' })).token;
    await ok('create_webhook', { url: 'http://127.0.0.1:9/created', events: ['response.created'] });
    const form = await ok('create_form', {
      title: 'Keyed',
      partialResponses: true,
      blocks: [
        { ref: 'name', type: 'short_text', title: 'Name' },
        { ref: 'colour', type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Green'] },
        { type: 'number', title: 'Age' },
      ],
    });
    await ok('publish_form', { publicId: form.publicId });
    publicId = form.publicId;
    const [name, colour, age] = form.blocks.map((b: { id: string }) => b.id);
    id = { name, colour, age };
  });
  afterAll(() => app.close());

  const ok = async (name: string, body: object, headers: Record<string, string> = {}) => {
    const res = await callTool(app, admin, name, body, headers);
    if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  /** A tools/call over MCP (stateless, as an agent's client posts it): its structuredContent and raw text. */
  const overMcp = async (name: string, args: object, headers: Record<string, string> = {}) => {
    const res = await request(app.getHttpServer())
      .post('/mcp')
      .set('Accept', 'application/json, text/event-stream')
      .set('Content-Type', 'application/json')
      .set('Authorization', `Bearer ${admin}`)
      .set(headers)
      .send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }));
    expect(res.status).toBe(200);
    const result = res.body.result as { isError?: boolean; structuredContent: { id: string; answers: object } };
    if (result.isError) throw new Error(`${name} over MCP: ${JSON.stringify(result)}`);
    return { body: result.structuredContent, replayed: res.headers['idempotency-replayed'] };
  };
  const createdEvent = async (responseId: string) => {
    const rows: Array<{ payload: string }> = await db.query(
      `SELECT payload FROM webhook_deliveries WHERE event_type = 'response.created' AND payload LIKE '%' || $1 || '%'`,
      [responseId],
    );
    expect(rows).toHaveLength(1);
    return JSON.parse(rows[0].payload).data.response as { answers: object; refs?: object };
  };

  it('create_response: by ref in, by ref out; by id in, by id out; mixed block by block (REST and MCP)', async () => {
    for (const call of [ok, async (n: string, a: object) => (await overMcp(n, a)).body]) {
      const byRef = await call('create_response', { publicId, answers: { name: 'Ann', colour: 'Red', [id.age]: 30 } });
      expect(byRef.answers).toEqual({ name: 'Ann', colour: 'Red', [id.age]: 30 });
      const byId = await call('create_response', {
        publicId,
        answers: { [id.name]: 'Bo', [id.colour]: 'Green', [id.age]: 31 },
      });
      expect(byId.answers).toEqual({ [id.name]: 'Bo', [id.colour]: 'Green', [id.age]: 31 });
      const mixed = await call('create_response', { publicId, answers: { name: 'Cy', [id.colour]: 'Red' } });
      expect(mixed.answers).toEqual({ name: 'Cy', [id.colour]: 'Red' });
      // A partial alike; get_response still keys by id unless asked for refs.
      const partial = await call('create_response', { publicId, answers: { colour: 'Green' }, partial: true });
      expect(partial.answers).toEqual({ colour: 'Green' });
      expect((await ok('get_response', { publicId, responseId: byRef.id })).answers).toEqual({
        [id.name]: 'Ann',
        [id.colour]: 'Red',
        [id.age]: 30,
      });
      // The webhook's event is keyed by id, with the refs of the answered blocks beside, as before.
      const event = await createdEvent(byRef.id);
      expect(event.answers).toEqual({ [id.name]: 'Ann', [id.colour]: 'Red', [id.age]: 30 });
      expect(event.refs).toEqual({ [id.name]: 'name', [id.colour]: 'colour' });
    }
  });

  it("the respondent page's JSON answer is keyed as sent too", async () => {
    const page = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .send({ answers: { name: 'Ivy', [id.colour]: 'Green' } });
    expect(page.status).toBe(201);
    expect(page.body.answers).toEqual({ name: 'Ivy', [id.colour]: 'Green' });
  });

  it('a keyed create_response retried replays the identical body (REST and MCP)', async () => {
    for (const answers of [{ name: 'Dee', colour: 'Red' }, { [id.name]: 'Eve' }]) {
      const key = randomUUID();
      const first = await callTool(app, admin, 'create_response', { publicId, answers }, { 'Idempotency-Key': key });
      expect(first.status).toBe(200);
      expect(Object.keys(first.body.answers)).toEqual(Object.keys(answers));
      const again = await callTool(app, admin, 'create_response', { publicId, answers }, { 'Idempotency-Key': key });
      expect(again.headers['idempotency-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
      const mcp = await overMcp('create_response', { publicId, answers }, { 'Idempotency-Key': key });
      expect(mcp.replayed).toBe('true');
      expect(mcp.body).toEqual(first.body);
      const stored = await db.query(`SELECT count(*)::int AS n FROM responses WHERE id = $1`, [first.body.id]);
      expect(stored[0].n).toBe(1);
    }
    // A first call over MCP by ref, replayed over MCP and REST.
    const key = randomUUID();
    const args = { publicId, answers: { name: 'Fay' } };
    const first = await overMcp('create_response', args, { 'Idempotency-Key': key });
    expect(first.body.answers).toEqual({ name: 'Fay' });
    expect((await overMcp('create_response', args, { 'Idempotency-Key': key })).body).toEqual(first.body);
    const rest = await callTool(app, admin, 'create_response', args, { 'Idempotency-Key': key });
    expect(rest.headers['idempotency-replayed']).toBe('true');
    expect(rest.body).toEqual(first.body);
  });

  it('update_response: sent blocks as sent; kept ones by ref when refs were used throughout, else by id', async () => {
    const p = await ok('create_response', { publicId, answers: { name: 'Gil', [id.age]: 40 }, partial: true });
    expect(p.answers).toEqual({ name: 'Gil', [id.age]: 40 });
    const target = { publicId, responseId: p.id };
    // By ref throughout: the kept name by its ref, the age (no ref) by its id.
    expect((await ok('update_response', { ...target, answers: { colour: 'Red' } })).answers).toEqual({
      name: 'Gil',
      colour: 'Red',
      [id.age]: 40,
    });
    // By id: all by id.
    expect((await ok('update_response', { ...target, answers: { [id.colour]: 'Green' } })).answers).toEqual({
      [id.name]: 'Gil',
      [id.colour]: 'Green',
      [id.age]: 40,
    });
    // Mixed: the one by ref under its ref, the rest by id; over MCP alike.
    const mixed = await overMcp('update_response', { ...target, answers: { name: 'Gail', [id.colour]: 'Red' } });
    expect(mixed.body.answers).toEqual({ name: 'Gail', [id.colour]: 'Red', [id.age]: 40 });
    // Nothing sent by ref: by id.
    expect((await ok('update_response', { ...target, answers: {} })).answers).toEqual({
      [id.name]: 'Gail',
      [id.colour]: 'Red',
      [id.age]: 40,
    });
  });

  it('update_response completing by ref answers by ref, a keyed retry replays it, and its event is by id', async () => {
    const p = await ok('create_response', { publicId, answers: { [id.name]: 'Hal' }, partial: true });
    const args = { publicId, responseId: p.id, answers: { colour: 'Green' }, complete: true };
    const key = randomUUID();
    const first = await callTool(app, admin, 'update_response', args, { 'Idempotency-Key': key });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id: p.id, status: 'completed', answers: { name: 'Hal', colour: 'Green' } });
    expect(Object.keys(first.body.answers)).toEqual(['name', 'colour']);
    const again = await callTool(app, admin, 'update_response', args, { 'Idempotency-Key': key });
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    const mcp = await overMcp('update_response', args, { 'Idempotency-Key': key });
    expect(mcp.replayed).toBe('true');
    expect(mcp.body).toEqual(first.body);
    expect((await createdEvent(p.id)).answers).toEqual({ [id.name]: 'Hal', [id.colour]: 'Green' });
  });
});

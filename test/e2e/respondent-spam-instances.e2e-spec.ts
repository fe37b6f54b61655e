import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { solveChallenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { createToken, createWorkspace } from '../factories';
import { REDIS_URL, requireRedis } from '../utils/cluster';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

/**
 * Issue 47, item 5, over two instances sharing Redis and the database: the rate of a form's page
 * posts that makes the challenge required is counted once for both, a challenge issued by one is
 * taken by the other, and a solution used on one is refused on the other.
 */
describe('respondent spam defence over two instances', () => {
  let a: NestFastifyApplication;
  let b: NestFastifyApplication;
  let db: DataSource;
  let token: string;

  beforeAll(async () => {
    await requireRedis();
    const env = { REDIS_URL, SPAM_CHALLENGE_FORM_POSTS_PER_MIN: '2' };
    a = await createTestApp(env);
    await a.init();
    b = await createTestApp(env);
    await b.init();
    db = a.get(DataSource);
    const ws = await createWorkspace(a, 'pro');
    token = (await createToken(a, ws, { role: 'admin' })).token;
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  async function published(spamProtection: string) {
    const created = await callTool(a, token, 'create_form', {
      title: 'Sign-up',
      spamProtection,
      blocks: [{ type: 'short_text', title: 'Name' }],
    });
    expect((await callTool(a, token, 'publish_form', { publicId: created.body.publicId })).status).toBe(200);
    return { publicId: created.body.publicId as string, block: created.body.blocks[0].id as string };
  }
  const stateOf = async (app: NestFastifyApplication, publicId: string) =>
    /name="_state" value="([^"]+)"/.exec((await request(app.getHttpServer()).get(`/f/${publicId}`)).text)![1];
  const post = (app: NestFastifyApplication, publicId: string, fields: Record<string, string>) =>
    request(app.getHttpServer()).post(`/f/${publicId}`).type('form').set('Sec-Fetch-Site', 'same-origin').send(fields);
  const stored = async (publicId: string) =>
    (
      await db.query(
        `SELECT (SELECT count(*)::int FROM responses r WHERE r.form_id = f.id) AS responses,
                (SELECT count(*)::int FROM spam_responses s WHERE s.form_id = f.id) AS spam
           FROM forms f WHERE f.public_id = $1`,
        [publicId],
      )
    )[0];

  it("counts a form's page posts once for both instances: the third in the minute is asked for the challenge", async () => {
    const { publicId, block } = await published('auto');
    expect((await post(a, publicId, { _state: await stateOf(a, publicId), [block]: 'one' })).text).toContain(
      'Thank you',
    );
    expect((await post(b, publicId, { _state: await stateOf(b, publicId), [block]: 'two' })).text).toContain(
      'Thank you',
    );
    // Each instance alone has seen one or two posts; together three: past the rate of 2.
    const third = await post(a, publicId, { _state: await stateOf(a, publicId), [block]: 'three' });
    expect(third.text).toContain('<altcha-widget');
    expect(await stored(publicId)).toEqual({ responses: 2, spam: 0 });
  });

  it('takes on one instance the challenge the other issued, once', async () => {
    const { publicId, block } = await published('always');
    const challenge = (await request(a.getHttpServer()).get(`/f/${publicId}/challenge`)).body;
    const solution = await solveChallenge({ challenge, deriveKey });
    const altcha = Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
    const onB = await post(b, publicId, { _state: await stateOf(b, publicId), [block]: 'Ada', altcha });
    expect(onB.text).toContain('Thank you');
    const replayOnA = await post(a, publicId, { _state: await stateOf(a, publicId), [block]: 'Ada', altcha });
    expect(replayOnA.status).toBe(409);
    expect(await stored(publicId)).toEqual({ responses: 1, spam: 0 });
  });
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { solveChallenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/**
 * Issue 47, item 5: spam defence of the respondent pages, as a scripted bot meets it. A post judged
 * as spam (no solved challenge where one is asked, the honeypot filled, sent too fast) gets the
 * thank-you page and is kept as a spam row: nothing counts it. A replayed challenge stores nothing
 * and says so. The tools list, restore (then it counts) and delete spam.
 */
describe('respondent spam defence', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let token: string;
  const MIN_FILL_MS = 600;

  const ask = (name: string, args: object) => callTool(app, token, name, args);
  const http = () => request(app.getHttpServer());
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const stateOf = (html: string) => /name="_state" value="([^"]+)"/.exec(html)?.[1];

  beforeAll(async () => {
    app = await createTestApp({ SPAM_MIN_FILL_MS: String(MIN_FILL_MS), SPAM_CHALLENGE_FORM_POSTS_PER_MIN: '3' });
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
    db = app.get(DataSource);
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(async () => {
    await app?.close();
  });

  /** A published form (one page unless `blocks` says otherwise); its publicId and first block id. */
  async function published(spamProtection?: string, blocks: object[] = [{ type: 'short_text', title: 'Name' }]) {
    const created = await ask('create_form', {
      title: 'Sign-up',
      blocks,
      ...(spamProtection ? { spamProtection } : {}),
    });
    expect(created.status).toBe(200);
    expect((await ask('publish_form', { publicId: created.body.publicId })).status).toBe(200);
    return { publicId: created.body.publicId as string, block: created.body.blocks[0].id as string };
  }

  /** The form's page as a browser gets it: its signed state, and whether it asks for the challenge. */
  async function open(publicId: string) {
    const res = await http().get(`/f/${publicId}`).set('Accept', 'text/html');
    expect(res.status).toBe(200);
    return {
      state: stateOf(res.text)!,
      widget: res.text.includes('<altcha-widget'),
      csp: res.headers['content-security-policy'],
    };
  }

  /** A solved challenge for the form, as the widget posts it. */
  async function solved(publicId: string): Promise<string> {
    const res = await http().get(`/f/${publicId}/challenge`);
    expect(res.status).toBe(200);
    const solution = await solveChallenge({ challenge: res.body, deriveKey });
    return Buffer.from(JSON.stringify({ challenge: res.body, solution })).toString('base64');
  }

  const post = (publicId: string, fields: Record<string, string>) =>
    http().post(`/f/${publicId}`).type('form').set('Sec-Fetch-Site', 'same-origin').send(fields);

  const counts = async (publicId: string) => {
    const [row] = await db.query(
      `SELECT (SELECT count(*)::int FROM responses r WHERE r.form_id = f.id) AS responses,
              (SELECT count(*)::int FROM spam_responses s WHERE s.form_id = f.id) AS spam
         FROM forms f WHERE f.public_id = $1`,
      [publicId],
    );
    return row as { responses: number; spam: number };
  };
  const reasons = async (publicId: string) =>
    (
      await db.query(
        `SELECT s.reason FROM spam_responses s JOIN forms f ON f.id = s.form_id WHERE f.public_id = $1 ORDER BY s.id`,
        [publicId],
      )
    ).map((r: { reason: string }) => r.reason);

  it('takes spamProtection on create_form and update_form, shows it (default auto), refuses another value at its path', async () => {
    const { publicId } = await published();
    expect((await ask('get_form', { publicId })).body.spamProtection).toBe('auto');
    const updated = await ask('update_form', { publicId, spamProtection: 'always' });
    expect(updated.status).toBe(200);
    expect(updated.body.spamProtection).toBe('always');
    expect((await ask('get_form', { publicId })).body.spamProtection).toBe('always');
    const bad = expectError(
      await ask('update_form', { publicId, spamProtection: 'sometimes' }),
      400,
      'invalid_arguments',
    );
    expect(bad.details?.[0]?.path).toBe('/spamProtection');
    expect((await ask('get_form', { publicId })).body.spamProtection).toBe('always');
  });

  it('answers a bot like a person (thank-you page) and keeps each of its posts as spam, counted nowhere', async () => {
    const { publicId, block } = await published('always');
    const page = await open(publicId);
    expect(page.widget).toBe(true);
    // The widget's challenge and worker come from this origin only.
    expect(page.csp).toContain("connect-src 'self'");
    expect(page.csp).toContain("worker-src 'self'");
    expect(page.csp).toContain("script-src 'self'");
    await sleep(MIN_FILL_MS);

    const noChallenge = await post(publicId, { _state: page.state, [block]: 'bot 1' });
    const honeypot = await post(publicId, {
      _state: page.state,
      [block]: 'bot 2',
      comments: 'Great post! Visit http://spam.example',
      altcha: await solved(publicId),
    });
    const work = await solved(publicId); // solved before the page is opened: the post follows at once
    const fresh = await open(publicId);
    const tooFast = await post(publicId, { _state: fresh.state, [block]: 'bot 3', altcha: work });
    const noState = await post(publicId, { [block]: 'bot 4', altcha: await solved(publicId) }); // never opened the page
    const other = await published('always');
    const otherForm = await post(publicId, {
      _state: page.state,
      [block]: 'bot 5',
      altcha: await solved(other.publicId),
    });
    const garbled = await post(publicId, { _state: page.state, [block]: 'bot 6', altcha: 'bm90IGEgc29sdXRpb24=' });
    for (const res of [noChallenge, honeypot, tooFast, noState, otherForm, garbled]) {
      expect(res.status).toBe(200);
      expect(res.text).toContain('Thank you');
    }
    expect(await reasons(publicId)).toEqual([
      'no_challenge',
      'honeypot',
      'too_fast',
      'too_fast',
      'bad_challenge',
      'bad_challenge',
    ]);
    expect(await counts(publicId)).toEqual({ responses: 0, spam: 6 });
    // Nothing counts them: not the list, not the summary.
    expect((await ask('list_responses', { publicId })).body.total).toBe(0);
    expect((await ask('summarize_responses', { publicId })).body.total).toBe(0);
  });

  it('stores a person who solved the challenge, and refuses the same solution sent again with a clear page, storing nothing', async () => {
    const { publicId, block } = await published('always');
    const page = await open(publicId);
    const altcha = await solved(publicId);
    await sleep(MIN_FILL_MS);
    const first = await post(publicId, { _state: page.state, [block]: 'Ada', altcha });
    expect(first.status).toBe(200);
    expect(first.text).toContain('Thank you');
    expect(await counts(publicId)).toEqual({ responses: 1, spam: 0 });

    const again = await open(publicId);
    await sleep(MIN_FILL_MS);
    const replayed = await post(publicId, { _state: again.state, [block]: 'Ada again', altcha });
    expect(replayed.status).toBe(409);
    expect(replayed.text).toContain('already sent');
    expect(await counts(publicId)).toEqual({ responses: 1, spam: 0 });
  });

  it('under auto asks for the challenge once the form passes its rate of posts: the page again with it, then spam without it', async () => {
    const { publicId, block } = await published();
    const page = await open(publicId);
    expect(page.widget).toBe(false);
    await sleep(MIN_FILL_MS);
    for (let i = 0; i < 3; i++)
      expect((await post(publicId, { _state: page.state, [block]: `person ${i}` })).status).toBe(200);
    expect(await counts(publicId)).toEqual({ responses: 3, spam: 0 });

    // The 4th post in the minute: its page did not ask, so it is asked now (nothing stored).
    const asked = await post(publicId, { _state: page.state, [block]: 'fourth' });
    expect(asked.status).toBe(200);
    expect(asked.text).toContain('<altcha-widget');
    expect(asked.text).toContain('One more step');
    expect(asked.text).toContain('value="fourth"'); // the answers kept
    expect(await counts(publicId)).toEqual({ responses: 3, spam: 0 });
    // Sent again without solving it: spam. Solved: stored.
    const state = stateOf(asked.text)!;
    expect((await post(publicId, { _state: state, [block]: 'fourth' })).text).toContain('Thank you');
    expect(await counts(publicId)).toEqual({ responses: 3, spam: 1 });
    expect((await post(publicId, { _state: state, [block]: 'fourth', altcha: await solved(publicId) })).status).toBe(
      200,
    );
    expect(await counts(publicId)).toEqual({ responses: 4, spam: 1 });
  });

  it('off: no checks at all', async () => {
    const { publicId, block } = await published('off');
    expect((await open(publicId)).widget).toBe(false);
    expect((await post(publicId, { [block]: 'fast', comments: 'filled' })).status).toBe(200);
    expect(await counts(publicId)).toEqual({ responses: 1, spam: 0 });
  });

  it('marks a walk of several pages whose honeypot was filled on its first page, and ends it like any other', async () => {
    const { publicId, block } = await published('auto', [
      { type: 'short_text', title: 'Name' },
      { type: 'page_break', title: 'More' },
      { type: 'short_text', title: 'City' },
    ]);
    const first = await open(publicId);
    await sleep(MIN_FILL_MS);
    const second = await post(publicId, { _state: first.state, [block]: 'Bot', comments: 'x', _action: 'next' });
    expect(second.status).toBe(200);
    const end = await post(publicId, { _state: stateOf(second.text)!, _action: 'submit' });
    expect(end.status).toBe(200);
    expect(end.text).toContain('Thank you');
    expect(await reasons(publicId)).toEqual(['honeypot']);
    expect(await counts(publicId)).toEqual({ responses: 0, spam: 1 });
  });

  it('under always, a walk of several pages asks on every page and needs the solution only to submit', async () => {
    const { publicId, block } = await published('always', [
      { type: 'short_text', title: 'Name' },
      { type: 'page_break', title: 'More' },
      { type: 'short_text', title: 'City' },
    ]);
    const first = await open(publicId);
    expect(first.widget).toBe(true);
    await sleep(MIN_FILL_MS);
    const second = await post(publicId, { _state: first.state, [block]: 'Ada', _action: 'next' });
    expect(second.status).toBe(200);
    expect(second.text).toContain('<altcha-widget');
    const state = stateOf(second.text)!;
    // Submitted without the solution: spam; with it (the same page again, as a person who solved it): stored.
    expect((await post(publicId, { _state: state, _action: 'submit' })).text).toContain('Thank you');
    expect(await counts(publicId)).toEqual({ responses: 0, spam: 1 });
    const other = await open(publicId); // a walk of its own (the first one's submission is used up)
    await sleep(MIN_FILL_MS);
    const again = await post(publicId, { _state: other.state, [block]: 'Grace', _action: 'next' });
    const done = await post(publicId, {
      _state: stateOf(again.text)!,
      _action: 'submit',
      altcha: await solved(publicId),
    });
    expect(done.text).toContain('Thank you');
    expect(await counts(publicId)).toEqual({ responses: 1, spam: 1 });
  });

  it('keeps a JSON post without the challenge as spam (201 like any), and refuses a replayed one (409 challenge_used)', async () => {
    const { publicId, block } = await published('always');
    const bot = await http()
      .post(`/f/${publicId}`)
      .send({ answers: { [block]: 'json bot' } });
    expect(bot.status).toBe(201);
    expect(await counts(publicId)).toEqual({ responses: 0, spam: 1 });
    const altcha = await solved(publicId);
    const person = await http()
      .post(`/f/${publicId}`)
      .send({ answers: { [block]: 'ok' }, altcha });
    expect(person.status).toBe(201);
    // The bot's answer has the shape of a stored response's.
    expect(Object.keys(bot.body).sort()).toEqual(Object.keys(person.body).sort());
    expect(await counts(publicId)).toEqual({ responses: 1, spam: 1 });
    expectError(
      await http()
        .post(`/f/${publicId}`)
        .send({ answers: { [block]: 'again' }, altcha }),
      409,
      'challenge_used',
    );
    expect(await counts(publicId)).toEqual({ responses: 1, spam: 1 });
  });

  it('lists spam with status spam, restores one with update_response (then it counts) and deletes another', async () => {
    const { publicId, block } = await published('always');
    for (const answer of ['false positive', 'real spam']) {
      const res = await post(publicId, { [block]: answer });
      expect(res.text).toContain('Thank you');
    }
    const listed = await ask('list_responses', { publicId, status: 'spam' });
    expect(listed.status).toBe(200);
    expect(listed.body.total).toBe(2);
    expect(listed.body.responses.map((r: { answers: Record<string, string> }) => r.answers[block])).toEqual([
      'false positive',
      'real spam',
    ]);
    expect(listed.body.responses[0].status).toBeUndefined(); // neither partial nor completed
    expect(await reasons(publicId)).toEqual(['too_fast', 'too_fast']);
    const [keep, drop] = listed.body.responses.map((r: { id: string }) => r.id);

    // Without complete: refused at its path, nothing changed.
    expectError(await ask('update_response', { publicId, responseId: keep, answers: {} }), 400, 'invalid_arguments');
    const restored = await ask('update_response', { publicId, responseId: keep, answers: {}, complete: true });
    expect(restored.status).toBe(200);
    expect(restored.body).toMatchObject({ id: keep, status: 'completed', answers: { [block]: 'false positive' } });
    expect((await ask('list_responses', { publicId })).body.total).toBe(1);
    expect((await ask('summarize_responses', { publicId })).body.total).toBe(1);

    expect((await ask('delete_response', { publicId, responseId: drop })).body).toEqual({ id: drop, deleted: true });
    expect((await ask('list_responses', { publicId, status: 'spam' })).body.total).toBe(0);
    expect(await counts(publicId)).toEqual({ responses: 1, spam: 0 });
    expectError(
      await ask('list_responses', { publicId, status: 'spam', since: '2020-01-01T00:00:00Z' }),
      400,
      'invalid_arguments',
    );
  });
});

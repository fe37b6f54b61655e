import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createHash } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

/**
 * Issue 47, item 4: invitations. create_invites / list_invites / revoke_invites; the form setting
 * access; an invite fixes its hidden values and takes one response (tools: 409 invite_used; the
 * page: "Already answered"), also when submissions race; it survives save and resume; a tampered,
 * expired, revoked or other form's invite is refused and stores nothing.
 */
describe('invitations (issue 47)', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let token: string;

  const ask = (name: string, args: object, t = token) => callTool(app, t, name, args);
  const server = () => app.getHttpServer();
  const secretOf = (url: string) => new URL(url).searchParams.get('invite')!;
  const stateOf = (html: string) => {
    const m = /<input type="hidden" name="_state" value="([^"]+)"\/>/.exec(html);
    if (!m) throw new Error(`no state in the page:\n${html}`);
    return m[1];
  };
  const walkOf = (html: string) =>
    JSON.parse(Buffer.from(stateOf(html).split('.')[0], 'base64url').toString('utf8')) as {
      h: Record<string, string>;
      v?: string;
    };
  const post = (agent: ReturnType<typeof request.agent>, publicId: string, html: string, fields: string[][]) =>
    agent
      .post(`/f/${publicId}`)
      .type('form')
      .send(new URLSearchParams([['_state', stateOf(html)], ...fields]).toString());
  const stored = async (publicId: string) =>
    (
      await db.query(
        `SELECT r.hidden FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1 ORDER BY r.submitted_at`,
        [publicId],
      )
    ).map((r: { hidden: unknown }) => r.hidden) as Array<Record<string, string>>;
  const partials = async (publicId: string) =>
    (
      await db.query(
        `SELECT count(*)::int AS n FROM partial_responses p JOIN forms f ON f.id = p.form_id WHERE f.public_id = $1`,
        [publicId],
      )
    )[0].n as number;

  /** A published invite-only form: one page, or two with partial responses. */
  async function inviteForm(extra: object = {}) {
    const created = await ask('create_form', {
      title: 'Customer panel',
      access: 'invite',
      hiddenFields: ['customer'],
      blocks: [{ ref: 'score', type: 'short_text', title: 'How are we doing?', required: true }],
      ...extra,
    });
    expect(created.status).toBe(200);
    expect((await ask('publish_form', { publicId: created.body.publicId })).status).toBe(200);
    return {
      publicId: created.body.publicId as string,
      ids: Object.fromEntries(
        (created.body.blocks as Array<{ ref: string; id: string }>).map((b) => [b.ref, b.id]),
      ) as Record<string, string>,
    };
  }

  beforeAll(async () => {
    app = await createTestApp();
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'editor' })).token;
  });
  afterAll(() => app.close());

  it('create_form and update_form take access, get_form shows it (public by default)', async () => {
    const plain = await ask('create_form', { title: 'Open' });
    expect(plain.body.access).toBe('public');
    const { publicId } = await inviteForm();
    expect((await ask('get_form', { publicId })).body.access).toBe('invite');
    const updated = await ask('update_form', { publicId: plain.body.publicId, access: 'invite' });
    expect(updated.status).toBe(200);
    expect(updated.body.access).toBe('invite');
    expectError(await ask('update_form', { publicId, access: 'friends' }), 400, 'invalid_arguments');
  });

  it('makes single-use links of 192 random bits, stores only their hashes, and lists their state with exact paging', async () => {
    const { publicId } = await inviteForm();
    const made = await ask('create_invites', {
      publicId,
      invites: [{ hidden: { customer: 'c-1' }, email: 'ada@example.com' }, { hidden: { customer: 'c-2' } }],
      expiresAt: '2099-01-01T00:00:00Z',
    });
    expect(made.status).toBe(200);
    expect(made.body.expiresAt).toBe('2099-01-01T00:00:00.000Z');
    expect(made.body.invites).toHaveLength(2);
    const [first] = made.body.invites;
    expect(first.url).toMatch(new RegExp(`/f/${publicId}\\?invite=inv_[A-Za-z0-9_-]{32}$`));
    const secret = secretOf(first.url);
    expect(Buffer.from(secret.slice(4), 'base64url')).toHaveLength(24);
    expect(Object.keys(first).sort()).toEqual(['id', 'url']);
    // Only the SHA-256 is stored: no column holds the secret.
    const rows = await db.query(`SELECT * FROM form_invites WHERE id = $1`, [first.id]);
    expect(rows[0].secret_hash).toEqual(createHash('sha256').update(secret).digest());
    expect(JSON.stringify(rows)).not.toContain(secret.slice(4));

    const more = await ask('create_invites', { publicId, count: 3 });
    expect(more.body.invites).toHaveLength(3);
    const all: Array<{ id: string; state: string; email: string | null; hidden: object }> = [];
    for (let offset = 0; ;) {
      const page = await ask('list_invites', { publicId, limit: 2, offset });
      expect(page.status).toBe(200);
      expect(page.body.total).toBe(5);
      expect(JSON.stringify(page.body)).not.toMatch(/inv_/);
      all.push(...page.body.invites);
      offset += page.body.count;
      if (!page.body.count) break;
    }
    expect(all.map((i) => i.id)).toEqual([...made.body.invites, ...more.body.invites].map((i) => i.id));
    expect(all[0]).toMatchObject({ state: 'unused', email: 'ada@example.com', hidden: { customer: 'c-1' } });
  });

  it('a retry with the same Idempotency-Key shows the same links, from an answer stored sealed', async () => {
    const { publicId } = await inviteForm();
    const key = { 'Idempotency-Key': `invites-${publicId}` };
    const first = await callTool(app, token, 'create_invites', { publicId, count: 2 }, key);
    const again = await callTool(app, token, 'create_invites', { publicId, count: 2 }, key);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect((await ask('list_invites', { publicId })).body.total).toBe(2);
    const kept = await db.query(`SELECT response_body FROM idempotency_keys WHERE idempotency_key = $1`, [
      key['Idempotency-Key'],
    ]);
    expect(kept).toHaveLength(1);
    expect(String(kept[0].response_body)).not.toContain(secretOf(first.body.invites[0].url));
  });

  it('refuses bad invitations at their path and stores none', async () => {
    const { publicId } = await inviteForm();
    const refused = [
      await ask('create_invites', { publicId }),
      await ask('create_invites', { publicId, count: 1, invites: [{}] }),
      await ask('create_invites', { publicId, count: 1, expiresAt: '2001-01-01T00:00:00Z' }),
      await ask('create_invites', { publicId, invites: [{ hidden: { nope: 'x' } }] }),
      await ask('create_invites', { publicId, count: 1001 }),
    ];
    for (const r of refused) expectError(r, 400, 'invalid_arguments');
    expect(refused[2].body.error.details[0].path).toBe('/expiresAt');
    expect(refused[3].body.error.details[0].path).toBe('/invites/0/hidden/nope');
    expect((await ask('list_invites', { publicId })).body.total).toBe(0);
    expectError(await ask('create_invites', { publicId: 'nope', count: 1 }), 404, 'not_found');
    // Another workspace's form is not found, and its caller cannot list or revoke.
    const other = await createWorkspace(app, 'pro');
    const otherToken = (await createToken(app, other, { role: 'admin' })).token;
    expectError(await ask('create_invites', { publicId, count: 1 }, otherToken), 404, 'not_found');
    expectError(await ask('list_invites', { publicId }, otherToken), 404, 'not_found');
    // A write: Pro plan and the editor role.
    const free = await createWorkspace(app, 'free');
    const freeToken = (await createToken(app, free, { role: 'admin' })).token;
    const freeForm = await ask('create_form', { title: 'Free' }, freeToken);
    expectError(
      await ask('create_invites', { publicId: freeForm.body.publicId, count: 1 }, freeToken),
      403,
      'pro_required',
    );
    const viewer = (await createToken(app, ws, { role: 'viewer' })).token;
    expectError(await ask('create_invites', { publicId, count: 1 }, viewer), 403, 'forbidden');
    expect((await ask('list_invites', { publicId }, viewer)).status).toBe(200);
  });

  it('create_response with an invite: its hidden values, once (409 invite_used); others refused with 4xx, nothing stored', async () => {
    const { publicId, ids } = await inviteForm();
    const other = await inviteForm();
    const made = await ask('create_invites', {
      publicId,
      invites: [{ hidden: { customer: 'c-1' } }, {}, {}],
    });
    const [one, two, three] = made.body.invites.map((i: { url: string }) => secretOf(i.url));
    const answer = (invite: string, extra: object = {}) =>
      ask('create_response', { publicId, answers: { [ids.score]: 'Good' }, invite, ...extra });

    expectError(await answer(one, { hidden: { customer: 'c-9' } }), 400, 'invalid_arguments');
    const first = await answer(one, { hidden: { customer: 'c-1' } });
    expect(first.status).toBe(200);
    expect(first.body.hidden).toEqual({ customer: 'c-1' });
    expectError(await answer(one), 409, 'invite_used');

    expectError(await answer(`${one.slice(0, -2)}xx`), 403, 'invite_invalid'); // tampered
    expectError(await answer('inv_short'), 403, 'invite_invalid');
    const foreign = secretOf((await ask('create_invites', { publicId: other.publicId, count: 1 })).body.invites[0].url);
    expectError(await answer(foreign), 403, 'invite_invalid'); // another form's
    expect((await ask('revoke_invites', { publicId, ids: [made.body.invites[1].id] })).body).toEqual({
      revoked: [made.body.invites[1].id],
      unchanged: [],
    });
    expectError(await answer(two), 410, 'invite_revoked');
    await db.query(`UPDATE form_invites SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      made.body.invites[2].id,
    ]);
    expectError(await answer(three), 410, 'invite_expired');
    expectError(await answer(one, { partial: true }), 400, 'invalid_arguments');
    expect(await stored(publicId)).toEqual([{ customer: 'c-1' }]);

    const states = (await ask('list_invites', { publicId })).body.invites.map((i: { state: string }) => i.state);
    expect(states).toEqual(['completed', 'revoked', 'expired']);
    // Revoking an answered invite changes nothing; an unknown id is a 404 and revokes nothing.
    const ids3 = made.body.invites.map((i: { id: string }) => i.id);
    expect((await ask('revoke_invites', { publicId, ids: [ids3[0]] })).body).toEqual({
      revoked: [],
      unchanged: [ids3[0]],
    });
    expectError(
      await ask('revoke_invites', { publicId, ids: [ids3[2], '00000000-0000-7000-8000-000000000000'] }),
      404,
      'not_found',
    );
    expect((await ask('list_invites', { publicId })).body.invites[2].state).toBe('expired');
  });

  it('stores one response when submissions of one invite race (tools and the page’s JSON)', async () => {
    const { publicId, ids } = await inviteForm();
    const [secret] = (await ask('create_invites', { publicId, count: 1 })).body.invites.map((i: { url: string }) =>
      secretOf(i.url),
    );
    const answers = { [ids.score]: 'Fine' };
    const racing = await Promise.all(
      Array.from({ length: 12 }, (_, n) =>
        n % 2
          ? ask('create_response', { publicId, answers, invite: secret })
          : request(server()).post(`/f/${publicId}`).send({ answers, invite: secret }),
      ),
    );
    const ok = racing.filter((r) => r.status === 200 || r.status === 201);
    expect(ok).toHaveLength(1);
    for (const r of racing.filter((x) => !ok.includes(x))) expectError(r, 409, 'invite_used');
    expect(await stored(publicId)).toHaveLength(1);
  });

  it('the page: without an invite it says so and stores nothing; a bad one gets a clear page; answered once, then "Already answered"', async () => {
    const { publicId, ids } = await inviteForm();
    const made = (await ask('create_invites', { publicId, invites: [{ hidden: { customer: 'c-7' } }, {}] })).body
      .invites;
    const bare = await request(server()).get(`/f/${publicId}`).set('Accept', 'text/html');
    expect(bare.status).toBe(403);
    expect(bare.text).toContain('This form is by invitation only');
    // A post without an invite (no state, or a state of its own) stores nothing.
    const posted = await request(server()).post(`/f/${publicId}`).type('form').send(`${ids.score}=Spam`);
    expect(posted.status).toBe(403);
    expect(posted.text).toContain('This form is by invitation only');
    expectError(
      await request(server())
        .post(`/f/${publicId}`)
        .send({ answers: { [ids.score]: 'Spam' } }),
      403,
      'invite_required',
    );
    // Spam defence is for public forms: an uninvited post, even one a bot sent, is refused, never kept as spam to restore.
    await ask('update_form', { publicId, spamProtection: 'always' });
    expectError(
      await request(server())
        .post(`/f/${publicId}`)
        .send({ answers: { [ids.score]: 'Spam' } }),
      403,
      'invite_required',
    );
    const honeypot = await request(server()).post(`/f/${publicId}`).type('form').send(`${ids.score}=Spam&comments=buy`);
    expect(honeypot.status).toBe(403);
    const [kept] = await db.query(
      `SELECT count(*)::int AS n FROM spam_responses s JOIN forms f ON f.id = s.form_id WHERE f.public_id = $1`,
      [publicId],
    );
    expect(kept.n).toBe(0);
    await ask('update_form', { publicId, spamProtection: 'auto' });
    const tampered = await request(server()).get(`/f/${publicId}?invite=inv_${'A'.repeat(32)}`);
    expect(tampered.status).toBe(403);
    expect(tampered.text).toContain('This invitation link does not work');

    const browser = request.agent(server());
    // The invite's hidden values win over the URL's.
    const first = await browser.get(`/f/${publicId}?invite=${secretOf(made[0].url)}&customer=c-hacked`);
    expect(first.status).toBe(200);
    expect(walkOf(first.text)).toMatchObject({ h: { customer: 'c-7' }, v: made[0].id });
    const done = await post(browser, publicId, first.text, [[ids.score, 'Great']]);
    expect(done.status).toBe(200);
    expect(done.text).toContain('Thank you');
    // The same page posted again (another nonce: a new visit) and the link opened again.
    const again = await browser.get(`/f/${publicId}?invite=${secretOf(made[0].url)}`);
    expect(again.status).toBe(409);
    expect(again.text).toContain('Already answered');
    await db.query(`DELETE FROM settings_once`); // forget the nonce: only the invite refuses now
    const replay = await post(browser, publicId, first.text, [[ids.score, 'Again']]);
    expect(replay.status).toBe(409);
    expect(replay.text).toContain('Already answered');
    expect(await stored(publicId)).toEqual([{ customer: 'c-7' }]);

    // Revoked while the page is open: the post says so and stores nothing.
    const open = await request(server()).get(`/f/${publicId}?invite=${secretOf(made[1].url)}`);
    await ask('revoke_invites', { publicId, ids: [made[1].id] });
    const late = await request(server())
      .post(`/f/${publicId}`)
      .type('form')
      .send(
        new URLSearchParams([
          ['_state', stateOf(open.text)],
          [ids.score, 'Late'],
        ]).toString(),
      );
    expect(late.status).toBe(410);
    expect(late.text).toContain('This invitation was withdrawn');
    expect(await stored(publicId)).toHaveLength(1);
  });

  it('on a public one-page form, an invite link is walked and answered once; the plain address stays open', async () => {
    const created = await ask('create_form', {
      title: 'Quick poll',
      blocks: [{ type: 'short_text', title: 'Your pick', required: true }],
    });
    const { publicId } = created.body;
    const block = created.body.blocks[0].id as string;
    await ask('publish_form', { publicId });
    const [invite] = (await ask('create_invites', { publicId, count: 1 })).body.invites;
    const first = await request(server()).get(`/f/${publicId}?invite=${secretOf(invite.url)}`);
    expect(first.status).toBe(200);
    expect(walkOf(first.text).v).toBe(invite.id);
    const done = await post(request.agent(server()), publicId, first.text, [[block, 'Tea']]);
    expect(done.status).toBe(200);
    expect((await ask('list_invites', { publicId })).body.invites[0].state).toBe('completed');
    await db.query(`DELETE FROM settings_once`);
    const again = await post(request.agent(server()), publicId, first.text, [[block, 'Coffee']]);
    expect(again.status).toBe(409);
    expect(again.text).toContain('Already answered');
    const plain = await request(server()).get(`/f/${publicId}`);
    expect(plain.status).toBe(200);
    // Its state (the spam defence's) names no invitation: the plain page is not the invite's walk.
    expect(walkOf(plain.text).v).toBeUndefined();
    expect(plain.text).not.toContain(invite.id);
    expect(await stored(publicId)).toHaveLength(1);
  });

  it('survives save and resume: started on Next, resumed with the invite, completed once', async () => {
    const { publicId, ids } = await inviteForm({
      partialResponses: true,
      blocks: [
        { ref: 'score', type: 'short_text', title: 'How are we doing?', required: true },
        { ref: 'more', type: 'page_break', title: 'More' },
        { ref: 'why', type: 'short_text', title: 'Why?' },
      ],
    });
    const [invite] = (await ask('create_invites', { publicId, invites: [{ hidden: { customer: 'c-3' } }] })).body
      .invites;
    const browser = request.agent(server());
    const first = await browser.get(`/f/${publicId}?invite=${secretOf(invite.url)}`);
    const second = await post(browser, publicId, first.text, [
      [ids.score, 'Good'],
      ['_action', 'next'],
    ]);
    expect(second.status).toBe(200);
    expect(await partials(publicId)).toBe(1);
    expect((await ask('list_invites', { publicId })).body.invites[0].state).toBe('started');

    // The browser comes back to the plain address (its cookie): page 2, the invite kept.
    const back = await browser.get(`/f/${publicId}`);
    expect(back.status).toBe(200);
    expect(back.text).toContain('Welcome back');
    expect(walkOf(back.text)).toMatchObject({ h: { customer: 'c-3' }, v: invite.id });
    const done = await post(browser, publicId, back.text, [[ids.why, 'Fast']]);
    expect(done.status).toBe(200);
    expect(await stored(publicId)).toEqual([{ customer: 'c-3' }]);
    const listed = (await ask('list_invites', { publicId })).body.invites[0];
    expect(listed.state).toBe('completed');
    expect(listed.responseId).toBe((await ask('list_responses', { publicId })).body.responses[0].id);
    const reopened = await request(server()).get(`/f/${publicId}?invite=${secretOf(invite.url)}`);
    expect(reopened.status).toBe(409);
    expect(reopened.text).toContain('Already answered');
  });
});

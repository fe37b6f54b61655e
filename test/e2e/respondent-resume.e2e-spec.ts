import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { FormsService } from '../../src/forms/forms.service';
import { PartialResponsesService } from '../../src/responses/partial-responses.service';
import { SessionsService } from '../../src/settings/sessions.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

/**
 * Partial responses on the respondent page (issue 36), without JavaScript: plain form posts and
 * the resume cookie as a browser keeps it. Each "browser" is a cookie jar of its own (supertest's agent).
 */
describe('respondent page: save as you go and resume (issue 36)', () => {
  let app: NestFastifyApplication;
  let token: string;
  let publicId: string;
  let ids: Record<string, string>;
  let ws: TestWorkspace;

  const server = () => app.getHttpServer();
  const stateOf = (html: string) => {
    const m = /<input type="hidden" name="_state" value="([^"]+)"\/>/.exec(html);
    if (!m) throw new Error(`no state in the page:\n${html}`);
    return m[1];
  };
  /** What a page's signed state carries (answers so far, hidden values, pages visited). */
  const walkOf = (html: string) =>
    JSON.parse(Buffer.from(stateOf(html).split('.')[0], 'base64url').toString('utf8')) as {
      a: Record<string, unknown>;
      h: Record<string, string>;
      s: string[];
      p?: string;
    };
  const cookieOf = (res: request.Response) =>
    ([res.headers['set-cookie']].flat().filter(Boolean) as string[]).find((c) => c.startsWith('fw_resume='));
  const post = (agent: ReturnType<typeof request.agent>, html: string, fields: Array<[string, string]>) =>
    agent
      .post(`/f/${publicId}`)
      .type('form')
      .send(new URLSearchParams([['_state', stateOf(html)], ...fields]).toString());
  const linkOf = (html: string) => {
    const m = /<textarea id="resume-link"[^>]*>([^<]+)<\/textarea>/.exec(html);
    if (!m) throw new Error(`no resume link in the page:\n${html}`);
    return new URL(m[1].replace(/&amp;/g, '&'));
  };
  /** How many of the form's responses are completed (list_responses' default) and in progress. */
  const counts = async (id = publicId) => {
    const form = await app.get(FormsService).getPublic(id);
    const { partial } = await app.get(PartialResponsesService).countsByStatus(form.id);
    const completed = (await callTool(app, token, 'list_responses', { publicId: id })).body.total as number;
    return { completed, partial };
  };

  async function makeForm(extra: Record<string, unknown> = {}) {
    const created = await callTool(app, token, 'create_form', {
      title: 'Membership application',
      hiddenFields: ['source'],
      partialResponses: true,
      blocks: [
        { ref: 'name', type: 'short_text', title: 'Your name', required: true },
        { ref: 'plan', type: 'multiple_choice', title: 'Plan', required: true, choices: ['Basic', 'Family'] },
        { ref: 'about', type: 'page_break', title: 'About you' },
        { ref: 'city', type: 'short_text', title: 'City', required: true },
        { ref: 'note', type: 'long_text', title: 'Anything else?' },
        { ref: 'end', type: 'page_break', title: 'Last page' },
        { ref: 'agree', type: 'yes_no', title: 'Do you agree to the rules?', required: true },
      ],
      ...extra,
    });
    expect(created.status).toBe(200);
    await callTool(app, token, 'publish_form', { publicId: created.body.publicId });
    return created.body as {
      publicId: string;
      blocks: Array<{ ref: string; id: string; choices?: Array<{ id: string; label: string }> }>;
    };
  }

  beforeAll(async () => {
    app = await createTestApp();
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    const form = await makeForm();
    publicId = form.publicId;
    ids = Object.fromEntries(form.blocks.map((b) => [b.ref, b.id]));
    ids.family = form.blocks[1].choices!.find((c) => c.label === 'Family')!.id;
  });
  afterAll(() => app.close());

  it('says so on the first page, saves on Next into an HttpOnly cookie of the form’s page, and resumes there on page 2 with the answers and the hidden values of the start', async () => {
    const browser = request.agent(server());
    const first = await browser.get(`/f/${publicId}?source=newsletter`);
    expect(first.status).toBe(200);
    expect(first.text).toContain('Your answers are saved as you go on this device.');
    expect(first.text).toContain('Save and finish later');
    expect(cookieOf(first)).toBeUndefined(); // nothing is saved for opening the form

    const next = await post(browser, first.text, [
      [ids.name, 'Ada'],
      [ids.plan, ids.family],
      ['_action', 'next'],
    ]);
    expect(next.status).toBe(200);
    expect(next.text).toContain('Page 2 of 3');
    const cookie = cookieOf(next)!;
    expect(cookie).toMatch(
      new RegExp(`^fw_resume=[\\w-]{22,}; Path=/f/${publicId}; HttpOnly; SameSite=Lax; Max-Age=\\d+$`),
    );
    expect(cookie).not.toContain('Secure'); // the page was asked for over http
    expect(await counts()).toEqual({ completed: 0, partial: 1 });

    // The tab is closed; the same browser opens the form again (a link with another source, even).
    const back = await browser.get(`/f/${publicId}?source=other`);
    expect(back.status).toBe(200);
    expect(back.text).toContain('Page 2 of 3');
    expect(back.text).toContain('Welcome back');
    const walk = walkOf(back.text);
    expect(walk.a).toEqual({ [ids.name]: 'Ada', [ids.plan]: ids.family });
    expect(walk.h).toEqual({ source: 'newsletter' });
    expect(walk.s).toEqual(['', ids.about]);

    // Back goes to page 1 with its answers in the fields, and saves too.
    const page1 = await post(browser, back.text, [
      [ids.city, 'Lyon'],
      ['_action', 'back'],
    ]);
    expect(page1.text).toContain('Page 1 of 3');
    expect(page1.text).toContain('value="Ada"');
    expect(cookieOf(page1)).toBe(cookie);
    expect(await counts()).toEqual({ completed: 0, partial: 1 });
  });

  it('gives a resume link that moves the answers to another browser (a new secret there), and the submission there completes the one response; the old link and cookie then say it was submitted and show none of it', async () => {
    const first = request.agent(server());
    const p1 = await first.get(`/f/${publicId}?source=ad`);
    const p2 = await post(first, p1.text, [
      [ids.name, 'Grace'],
      [ids.plan, ids.family],
      ['_action', 'next'],
    ]);
    const saved = await post(first, p2.text, [
      [ids.city, 'Arlington'],
      ['_action', 'save'],
    ]);
    expect(saved.status).toBe(200);
    expect(saved.text).toContain('Your answers are saved');
    const link = linkOf(saved.text);
    expect(link.pathname).toBe(`/f/${publicId}`);
    expect(link.searchParams.get('resume')!.length).toBeGreaterThanOrEqual(22); // 128 bits or more

    const other = request.agent(server());
    const opened = await other.get(`${link.pathname}${link.search}`).set('Sec-Fetch-User', '?1');
    expect(opened.status).toBe(303);
    expect(opened.headers.location).toBe(`/f/${publicId}`);
    expect(cookieOf(opened)).toMatch(/^fw_resume=[\w-]{43};/);
    expect(cookieOf(opened)).not.toContain(link.searchParams.get('resume')); // a new secret, for this browser only
    const resumed = await other.get(`/f/${publicId}`);
    expect(resumed.status).toBe(200);
    expect(resumed.text).toContain('Page 2 of 3');
    expect(resumed.text).toContain('value="Arlington"'); // the answer typed before "Save and finish later"
    expect(resumed.text).toContain('Welcome back');
    const p3 = await post(other, resumed.text, [
      [ids.city, 'Arlington'],
      ['_action', 'next'],
    ]);
    expect(p3.text).toContain('Page 3 of 3');
    const done = await post(other, p3.text, [
      [ids.agree, 'true'],
      ['_action', 'submit'],
    ]);
    expect(done.status).toBe(200);
    expect(done.text).toContain('Thank you!');
    expect(cookieOf(done)).toMatch(/^fw_resume=; .*Max-Age=0/); // this browser forgets the secret

    const list = await callTool(app, token, 'list_responses', { publicId });
    const mine = list.body.responses.filter(
      (r: { answers: Record<string, unknown> }) => r.answers[ids.name] === 'Grace',
    );
    expect(mine).toHaveLength(1);
    expect(mine[0].answers).toEqual({
      [ids.name]: 'Grace',
      [ids.plan]: 'Family',
      [ids.city]: 'Arlington',
      [ids.agree]: true,
    });
    expect(mine[0].hidden).toEqual({ source: 'ad' });

    for (const res of [
      await request(server()).get(`${link.pathname}${link.search}`),
      await first.get(`/f/${publicId}`), // the first browser's cookie
    ]) {
      expect(res.status).toBe(200);
      expect(res.text).toContain('Already submitted');
      expect(res.text).not.toContain('Grace');
      expect(res.text).not.toContain('Arlington');
      expect(res.text).not.toContain('_state');
    }
  });

  it('answers a guessed, tampered or other form’s secret with the first page, fresh, and leaves the cookie alone', async () => {
    const a = request.agent(server());
    const p1 = await a.get(`/f/${publicId}`);
    const p2 = await post(a, p1.text, [
      [ids.name, 'Private Person'],
      [ids.plan, ids.family],
      ['_action', 'next'],
    ]);
    const secret = /fw_resume=([^;]+)/.exec(cookieOf(p2)!)![1];
    const otherForm = await makeForm({ title: 'Another form' });
    const tampered = `${secret.slice(0, -2)}${secret.endsWith('AA') ? 'BB' : 'AA'}`;
    for (const [id, s] of [
      [publicId, 'A'.repeat(43)],
      [publicId, tampered],
      [otherForm.publicId, secret],
      [publicId, '<script>'],
    ]) {
      const res = await request(server()).get(`/f/${id}?resume=${encodeURIComponent(s)}`);
      expect(res.status).toBe(200);
      expect(res.text).toContain('Page 1 of 3');
      expect(res.text).toContain('does not open any answers');
      expect(res.text).not.toContain('Private Person');
      expect(walkOf(res.text).a).toEqual({});
      expect(cookieOf(res)).toBeUndefined(); // a link never clears a browser's own answers (issue 45, 6.2)
    }
    // A cookie that names nothing: the first page, no message (the person just opens the form).
    const res = await request(server())
      .get(`/f/${publicId}`)
      .set('Cookie', `fw_resume=${'B'.repeat(43)}`);
    expect(res.text).toContain('Page 1 of 3');
    expect(res.text).not.toContain('does not open any answers');
  });

  it('drops the answers to blocks the form no longer has and re-checks the path; a closed form shows the closed page, a deleted one 404', async () => {
    const form = await makeForm({ title: 'Edited later' });
    const id = Object.fromEntries(form.blocks.map((b) => [b.ref, b.id]));
    const family = form.blocks[1].choices!.find((c) => c.label === 'Family')!.id;
    const a = request.agent(server());
    const p1 = await a.get(`/f/${form.publicId}`);
    const sendAs = (html: string, fields: Array<[string, string]>) =>
      a
        .post(`/f/${form.publicId}`)
        .type('form')
        .send(new URLSearchParams([['_state', stateOf(html)], ...fields]).toString());
    const p2 = await sendAs(p1.text, [
      [id.name, 'Linus'],
      [id.plan, family],
      ['_action', 'next'],
    ]);
    await sendAs(p2.text, [
      [id.city, 'Helsinki'],
      ['_action', 'save'],
    ]);

    // The owner removes the City question (the blocks given again without it).
    const got = await callTool(app, token, 'get_form', { publicId: form.publicId });
    const blocks = got.body.blocks.filter((b: { id: string }) => b.id !== id.city);
    expect(blocks).toHaveLength(got.body.blocks.length - 1);
    const edited = await callTool(app, token, 'update_form', { publicId: form.publicId, blocks });
    expect(edited.status).toBe(200);
    const resumed = await a.get(`/f/${form.publicId}`);
    expect(resumed.status).toBe(200);
    expect(resumed.text).toContain('Page 2 of 3');
    expect(resumed.text).not.toContain('Helsinki');
    expect(walkOf(resumed.text).a).toEqual({ [id.name]: 'Linus', [id.plan]: family });

    await callTool(app, token, 'close_form', { publicId: form.publicId });
    const closed = await a.get(`/f/${form.publicId}`);
    expect(closed.status).toBe(409);
    expect(closed.text).toContain('This form is closed');
    expect(closed.text).not.toContain('Linus');

    await callTool(app, token, 'delete_form', { publicId: form.publicId });
    const gone = await a.get(`/f/${form.publicId}`);
    expect(gone.status).toBe(404);
  });

  it('keeps a file the partial holds: shown with its Keep box after Back and after a resume, and held by the submission', async () => {
    const created = await callTool(app, token, 'create_form', {
      title: 'Claim',
      partialResponses: true,
      blocks: [
        { type: 'file_upload', title: 'Receipt' },
        { type: 'page_break', title: 'More' },
        { type: 'short_text', title: 'Shop' },
      ],
    });
    const claim = created.body.publicId as string;
    const [receipt, , shop] = created.body.blocks.map((b: { id: string }) => b.id);
    await callTool(app, token, 'publish_form', { publicId: claim });
    const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(3000, 0x41)]);
    const a = request.agent(server());
    const first = await a.get(`/f/${claim}`);
    const next = await a
      .post(`/f/${claim}`)
      .field('_state', stateOf(first.text))
      .field('_action', 'next')
      .attach(receipt, pdf, { filename: 'receipt.pdf', contentType: 'application/pdf' });
    expect(next.text).toContain('Page 2 of 2');
    const keep = new RegExp(
      `<input type="checkbox" name="${receipt}" checked="" value="(upl_[^"]+)"/> Keep receipt.pdf`,
    );
    const back = await a.post(`/f/${claim}`).field('_state', stateOf(next.text)).field('_action', 'back');
    expect(back.text).toMatch(keep);

    // Resumed in the same browser (page 1, where Back left it): the file is still there to keep.
    const resumed = await a.get(`/f/${claim}`);
    expect(resumed.text).toContain('Page 1 of 2');
    const uploadId = keep.exec(resumed.text)![1];
    const again = await a
      .post(`/f/${claim}`)
      .field('_state', stateOf(resumed.text))
      .field('_action', 'next')
      .field(receipt, uploadId);
    expect(again.text).toContain('Page 2 of 2');
    const done = await a
      .post(`/f/${claim}`)
      .field('_state', stateOf(again.text))
      .field('_action', 'submit')
      .field(shop, 'Corner shop');
    expect(done.text).toContain('Thank you!');
    const list = await callTool(app, token, 'list_responses', { publicId: claim });
    expect(list.body.total).toBe(1);
    expect(list.body.responses[0].answers[receipt]).toEqual([expect.objectContaining({ name: 'receipt.pdf' })]);
  });

  it('marks the cookie Secure when the page is asked for over https (behind a trusted proxy)', async () => {
    const behind = await createTestApp({ TRUST_PROXY: '1', PUBLIC_URL: 'https://forms.example.com' });
    try {
      const first = await request(behind.getHttpServer()).get(`/f/${publicId}`).set('X-Forwarded-Proto', 'https');
      const next = await request(behind.getHttpServer())
        .post(`/f/${publicId}`)
        .set('X-Forwarded-Proto', 'https')
        .type('form')
        .send(
          new URLSearchParams([
            ['_state', stateOf(first.text)],
            [ids.name, 'Secure Sam'],
            [ids.plan, ids.family],
            ['_action', 'next'],
          ]).toString(),
        );
      expect(next.text).toContain('Page 2 of 3');
      expect(cookieOf(next)).toMatch(/; HttpOnly; SameSite=Lax; Max-Age=\d+; Secure$/);
    } finally {
      await behind.close();
    }
  });

  it('spends the per-IP budget on each resume attempt', async () => {
    const one = await request(server()).get(`/f/${publicId}?resume=${'C'.repeat(43)}`);
    const two = await request(server()).get(`/f/${publicId}?resume=${'D'.repeat(43)}`);
    const left = (r: request.Response) => Number(r.headers['ratelimit-remaining']);
    expect(left(one)).toBeGreaterThan(0);
    expect(left(two)).toBe(left(one) - 1);
  });

  it('saves nothing and offers no saving on a form with the setting off (the default)', async () => {
    const created = await callTool(app, token, 'create_form', {
      title: 'No saving',
      blocks: [
        { type: 'short_text', title: 'Name' },
        { type: 'page_break', title: 'Two' },
        { type: 'short_text', title: 'City' },
      ],
    });
    const off = created.body.publicId;
    await callTool(app, token, 'publish_form', { publicId: off });
    const p1 = await request(server()).get(`/f/${off}`);
    expect(p1.text).not.toContain('saved as you go');
    expect(p1.text).not.toContain('Save and finish later');
    const p2 = await request(server())
      .post(`/f/${off}`)
      .type('form')
      .send(
        new URLSearchParams([
          ['_state', stateOf(p1.text)],
          [created.body.blocks[0].id, 'X'],
          ['_action', 'next'],
        ]).toString(),
      );
    expect(p2.text).toContain('Page 2 of 2');
    expect(cookieOf(p2)).toBeUndefined();
    expect(await counts(off)).toEqual({ completed: 0, partial: 0 });
  });

  it('shows the owner "N completed · M in progress" and the drop-off by page as a chart and a table of the same numbers', async () => {
    const form = await makeForm({ title: 'Counted' });
    const id = Object.fromEntries(form.blocks.map((b) => [b.ref, b.id]));
    const family = form.blocks[1].choices!.find((c) => c.label === 'Family')!.id;
    const walk = async (pages: number, finish: boolean) => {
      const agent = request.agent(server());
      let html = (await agent.get(`/f/${form.publicId}`)).text;
      const fields: Array<Array<[string, string]>> = [
        [
          [id.name, 'N'],
          [id.plan, family],
        ],
        [[id.city, 'C']],
        [[id.agree, 'true']],
      ];
      for (let i = 0; i < pages; i++) {
        const last = i === 2;
        const res = await agent
          .post(`/f/${form.publicId}`)
          .type('form')
          .send(
            new URLSearchParams([
              ['_state', stateOf(html)],
              ...fields[i],
              ['_action', last ? 'submit' : 'next'],
            ]).toString(),
          );
        html = res.text;
      }
      if (finish) expect(html).toContain('Thank you!');
    };
    await walk(1, false); // stopped on page 2
    await walk(2, false); // stopped on page 3
    await walk(2, false);
    await walk(3, true); // completed

    const email = `owner-${Date.now()}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(ws.slug, email, 'viewer');
    const cookie = `fw_session=${await app.get(SessionsService).start(user.id)}`;
    const page = await request(server()).get(`/settings/w/${ws.slug}/forms/${form.publicId}`).set('Cookie', cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain('1 completed · 3 in progress');
    expect(page.text).toContain('Drop-off by page');
    // The table: reached, share of those who started, completed, per page.
    const rows = [
      ...page.text.matchAll(
        /<tr><td[^>]*>(\d)\. ([^<]+)<\/td><td>([\d,]+)<\/td><td>([\d.]+)%<\/td><td>([\d,]+)<\/td><\/tr>/g,
      ),
    ].map((m) => m.slice(1).join(' | '));
    expect(rows).toEqual(['1 | First page | 4 | 100 | 1', '2 | About you | 4 | 100 | 1', '3 | Last page | 3 | 75 | 1']);

    // A form without the setting and with no partials shows neither.
    const plain = await callTool(app, token, 'create_form', {
      title: 'Plain',
      blocks: [{ type: 'short_text', title: 'A' }],
    });
    const other = await request(server())
      .get(`/settings/w/${ws.slug}/forms/${plain.body.publicId}`)
      .set('Cookie', cookie);
    expect(other.status).toBe(200);
    expect(other.text).not.toContain('in progress');
  });
  describe('link fixation and cross-site posts (issue 45, 6.1 and 6.2)', () => {
    /** A link made by "Save and finish later" on an empty first page (what an attacker would send). */
    async function emptyLink(maker: ReturnType<typeof request.agent>) {
      const p1 = await maker.get(`/f/${publicId}`);
      const saved = await post(maker, p1.text, [['_action', 'save']]);
      expect(saved.text).toContain('Your answers are saved');
      return linkOf(saved.text);
    }
    const partialAnswersOf = async (name: string) => {
      const list = await callTool(app, token, 'list_responses', { publicId, status: 'partial' });
      return (list.body.responses as Array<{ answers: Record<string, unknown> }>).filter(
        (r) => r.answers[ids.name] === name,
      );
    };

    it('moves a link opened in another browser: the sender of the link then reads nothing the person enters, and after submission the link says so', async () => {
      const sender = request.agent(server());
      const link = await emptyLink(sender);
      const url = `${link.pathname}${link.search}`;

      const person = request.agent(server());
      const opened = await person.get(url).set('Sec-Fetch-User', '?1').set('Sec-Fetch-Site', 'cross-site');
      expect(opened.status).toBe(303);
      const p1 = await person.get(`/f/${publicId}`);
      expect(p1.text).toContain('Page 1 of 3');
      const p2 = await post(person, p1.text, [
        [ids.name, 'Vera Victim'],
        [ids.plan, ids.family],
        ['_action', 'next'],
      ]);
      expect(p2.text).toContain('Page 2 of 3');
      expect(await partialAnswersOf('Vera Victim')).toHaveLength(1);

      // The sender opens the link again, and the form with its own cookie: nothing of Vera's answers.
      for (const res of [await sender.get(`/f/${publicId}`), await sender.get(url), await request(server()).get(url)]) {
        expect(res.status).toBe(200);
        expect(res.text).toContain('This link to finish “Membership application” was opened in another browser');
        expect(res.text).not.toContain('Vera');
        expect(res.text).not.toContain('_state');
      }
      // The sender starts again: a partial of its own; Vera's is unchanged.
      const p1Sender = await sender.get(`/f/${publicId}?source=x`);
      await post(sender, p1Sender.text, [
        [ids.name, 'Sender Sid'],
        [ids.plan, ids.family],
        ['_action', 'next'],
      ]);
      expect((await partialAnswersOf('Vera Victim'))[0].answers[ids.name]).toBe('Vera Victim');

      // The person opens the link again in their browser: their own walk (the link moved there).
      const again = await person.get(url).set('Sec-Fetch-User', '?1');
      expect(again.status).toBe(303);
      const back = await person.get(`/f/${publicId}`);
      expect(walkOf(back.text).a[ids.name]).toBe('Vera Victim');
      const p3 = await post(person, back.text, [
        [ids.city, 'Oslo'],
        ['_action', 'next'],
      ]);
      const done = await post(person, p3.text, [
        [ids.agree, 'true'],
        ['_action', 'submit'],
      ]);
      expect(done.text).toContain('Thank you!');
      // Issue 36's promise holds for the old link: it says submitted, and shows nothing of it.
      const old = await request(server()).get(url);
      expect(old.text).toContain('Already submitted');
      expect(old.text).not.toContain('Vera');
    });

    it('asks first, showing nothing, when the link is fetched without a person’s click (a link preview, a scanner), and moves it on the button', async () => {
      const maker = request.agent(server());
      const p1 = await maker.get(`/f/${publicId}`);
      const p2 = await post(maker, p1.text, [
        [ids.name, 'Preview Pat'],
        [ids.plan, ids.family],
        ['_action', 'next'],
      ]);
      const saved = await post(maker, p2.text, [['_action', 'save']]);
      const link = linkOf(saved.text);
      const url = `${link.pathname}${link.search}`;

      const preview = await request(server()).get(url);
      expect(preview.status).toBe(200);
      expect(preview.text).toContain('Continue your answers');
      expect(preview.text).not.toContain('Preview Pat');
      expect(cookieOf(preview)).toBeUndefined();
      // Nothing moved: the browser that saved it still resumes by its link.
      expect(walkOf((await maker.get(url)).text).a[ids.name]).toBe('Preview Pat');

      const other = request.agent(server());
      const confirm = await other.get(url);
      const secret = /name="_resume" value="([^"]+)"/.exec(confirm.text)![1];
      const moved = await other
        .post(`/f/${publicId}`)
        .set('Sec-Fetch-Site', 'same-origin')
        .type('form')
        .send(new URLSearchParams([['_resume', secret]]).toString());
      expect(moved.status).toBe(303);
      expect(walkOf((await other.get(`/f/${publicId}`)).text).a[ids.name]).toBe('Preview Pat');
      expect((await maker.get(url)).text).toContain('opened in another browser');
    });

    it('refuses a page post from another site (its own state and secret), keeping the visitor’s cookie and storing nothing', async () => {
      // The attacker's walk: a partial and a signed state of their own.
      const attacker = request.agent(server());
      const a1 = await attacker.get(`/f/${publicId}`);
      const a2 = await post(attacker, a1.text, [
        [ids.name, 'Mallory'],
        [ids.plan, ids.family],
        ['_action', 'next'],
      ]);
      // The visitor's walk, with answers of their own.
      const visitor = request.agent(server());
      const v1 = await visitor.get(`/f/${publicId}`);
      const v2 = await post(visitor, v1.text, [
        [ids.name, 'Victor Visitor'],
        [ids.plan, ids.family],
        ['_action', 'next'],
      ]);
      const visitorCookie = cookieOf(v2)!;
      const before = await counts();

      for (const headers of [
        { Origin: 'https://evil.example', 'Sec-Fetch-Site': 'cross-site' },
        { Origin: 'null', 'Sec-Fetch-Site': 'cross-site' }, // a sandboxed frame
        { Origin: 'https://evil.example' }, // a browser without Sec-Fetch-*
      ]) {
        const res = await visitor
          .post(`/f/${publicId}`)
          .set(headers)
          .type('form')
          .send(
            new URLSearchParams([
              ['_state', stateOf(a2.text)],
              [ids.city, 'X'],
              ['_action', 'next'],
            ]).toString(),
          );
        expect(res.status).toBe(403);
        expect(res.text).toContain('Your answers were not sent');
        expect(cookieOf(res)).toBeUndefined();
      }
      expect(await counts()).toEqual(before);
      // The visitor's own answers are still theirs.
      expect(walkOf((await visitor.get(`/f/${publicId}`)).text).a[ids.name]).toBe('Victor Visitor');

      // The page's own posts pass (a same-origin form post says Origin: null under no-referrer), as do
      // posts that say nothing (old browsers, curl).
      const own = await post(visitor, (await visitor.get(`/f/${publicId}`)).text, [
        [ids.city, 'Rome'],
        ['_action', 'back'],
      ])
        .set('Origin', 'null')
        .set('Sec-Fetch-Site', 'same-origin');
      expect(own.status).toBe(200);
      expect(cookieOf(own)).toBe(visitorCookie);

      // A post that says nothing of its origin never replaces the cookie this browser holds.
      const silent = await visitor
        .post(`/f/${publicId}`)
        .type('form')
        .send(
          new URLSearchParams([
            ['_state', stateOf(a2.text)],
            [ids.city, 'X'],
            ['_action', 'next'],
          ]).toString(),
        );
      expect(silent.status).toBe(200);
      expect(cookieOf(silent)).toBeUndefined();
      expect(walkOf((await visitor.get(`/f/${publicId}`)).text).a[ids.name]).toBe('Victor Visitor');

      // The page's upload endpoint too.
      const upload = await request(server())
        .post(`/f/${publicId}/uploads`)
        .set('Origin', 'https://evil.example')
        .set('Sec-Fetch-Site', 'cross-site')
        .send({ block: ids.name, filename: 'a.pdf', contentType: 'application/pdf', size: 10 });
      expect(upload.status).toBe(403);
      expect(upload.body.error.code).toBe('forbidden');
    });

    it('never continues the partial of another person’s state posted with Origin: null and no Sec-Fetch-Site (link fixation): the visitor’s answers start a new partial', async () => {
      // The attacker's walk: a partial whose link they keep, and its signed state.
      const attacker = request.agent(server());
      const a2 = await post(attacker, (await attacker.get(`/f/${publicId}`)).text, [
        [ids.name, 'Fixing Fay'],
        [ids.plan, ids.family],
        ['_action', 'next'],
      ]);
      const attackerSecret = walkOf(a2.text).p!;
      expect(attackerSecret).toBeTruthy();
      // The attacker's page (Referrer-Policy no-referrer) posts that state from a browser without Sec-Fetch-*.
      const unknownOrigin = (agent: ReturnType<typeof request.agent>, fields: Array<[string, string]>) =>
        post(agent, a2.text, fields).set('Origin', 'null');

      // A visitor with answers of their own (a cookie), and one without.
      const visitor = request.agent(server());
      const v2 = await post(visitor, (await visitor.get(`/f/${publicId}`)).text, [
        [ids.name, 'Wanda Walker'],
        [ids.plan, ids.family],
        ['_action', 'next'],
      ]);
      const visitorSecret = walkOf(v2.text).p!;
      const fresh = request.agent(server());
      const before = await counts();
      for (const [agent, city] of [
        [visitor, 'Visitor Town'],
        [fresh, 'Fresh Town'],
      ] as const) {
        const res = await unknownOrigin(agent, [
          [ids.city, city],
          ['_action', 'next'],
        ]);
        expect(res.status).toBe(200);
        expect(res.text).toContain('Page 3 of 3');
        expect(res.text).not.toContain(attackerSecret);
        const p = walkOf(res.text).p;
        expect(p).toBeTruthy();
        expect([attackerSecret, visitorSecret]).not.toContain(p);
        // The visitor's cookie is not replaced; a browser without one keeps the new partial, never the attacker's.
        if (agent === visitor) {
          expect(cookieOf(res)).toBeUndefined();
          continue;
        }
        expect(cookieOf(res)).toContain(`fw_resume=${p}`);
        // What is typed next (the cookie holding it) goes to that new partial.
        const back = await post(agent, res.text, [['_action', 'back']]).set('Origin', 'null');
        expect(back.status).toBe(200);
        expect(walkOf(back.text).p).toBe(p);
      }
      expect(await counts()).toEqual({ ...before, partial: before.partial + 2 });
      // The attacker's partial is as it was: none of what the visitors typed.
      const fay = await partialAnswersOf('Fixing Fay');
      expect(fay).toHaveLength(3);
      const attackers = fay.filter((r) => r.answers[ids.city] === undefined);
      expect(attackers).toHaveLength(1);
      expect(fay.map((r) => r.answers[ids.city]).sort()).toEqual(['Fresh Town', 'Visitor Town', undefined]);
      expect(walkOf((await attacker.get(`/f/${publicId}?resume=${attackerSecret}`)).text).a[ids.city]).toBeUndefined();
      // The visitor's own walk: their answers, and their own posts without Sec-Fetch-* continue it.
      const own = await visitor.get(`/f/${publicId}`);
      expect(walkOf(own.text).a[ids.name]).toBe('Wanda Walker');
      const ownNext = await post(visitor, own.text, [
        [ids.city, 'Own Town'],
        ['_action', 'next'],
      ]).set('Origin', 'null');
      expect(walkOf(ownNext.text).p).toBe(visitorSecret);
      expect((await partialAnswersOf('Wanda Walker'))[0].answers[ids.city]).toBe('Own Town');
    });

    it('asks again, moving nothing, on a "Continue here" post not known to come from the page in a browser with answers of its own', async () => {
      const maker = request.agent(server());
      const m2 = await post(maker, (await maker.get(`/f/${publicId}`)).text, [
        [ids.name, 'Linked Lena'],
        [ids.plan, ids.family],
        ['_action', 'next'],
      ]);
      const link = linkOf((await post(maker, m2.text, [['_action', 'save']])).text);
      const url = `${link.pathname}${link.search}`;
      const secret = link.searchParams.get('resume')!;

      const visitor = request.agent(server());
      await post(visitor, (await visitor.get(`/f/${publicId}`)).text, [
        [ids.name, 'Holding Hal'],
        [ids.plan, ids.family],
        ['_action', 'next'],
      ]);
      const confirmPost = () =>
        visitor
          .post(`/f/${publicId}`)
          .type('form')
          .send(new URLSearchParams([['_resume', secret]]).toString());
      for (const res of [await confirmPost().set('Origin', 'null'), await confirmPost()]) {
        expect(res.status).toBe(200);
        expect(res.text).toContain('Continue your answers');
        expect(res.text).not.toContain('Linked Lena');
        expect(cookieOf(res)).toBeUndefined();
      }
      // Nothing moved: the visitor's answers stay, and the link still opens in the browser that saved it.
      expect(walkOf((await visitor.get(`/f/${publicId}`)).text).a[ids.name]).toBe('Holding Hal');
      expect(walkOf((await maker.get(url)).text).a[ids.name]).toBe('Linked Lena');
      // The page's own post moves it.
      const moved = await confirmPost().set('Origin', 'null').set('Sec-Fetch-Site', 'same-origin');
      expect(moved.status).toBe(303);
      expect(walkOf((await visitor.get(`/f/${publicId}`)).text).a[ids.name]).toBe('Linked Lena');
    });

    it('takes a post from an origin the workspace lets embed its forms, without replacing the cookie of the browser', async () => {
      await app.get(WorkspacesService).setEmbedOrigins(ws.slug, ['https://shop.example']);
      try {
        const visitor = request.agent(server());
        const v1 = await visitor.get(`/f/${publicId}`);
        await post(visitor, v1.text, [
          [ids.name, 'Embedded Emma'],
          [ids.plan, ids.family],
          ['_action', 'next'],
        ]);
        const other = await request(server()).get(`/f/${publicId}`);
        const res = await post(visitor, other.text, [
          [ids.name, 'Someone'],
          [ids.plan, ids.family],
          ['_action', 'next'],
        ])
          .set('Origin', 'https://shop.example')
          .set('Sec-Fetch-Site', 'cross-site');
        expect(res.status).toBe(200);
        expect(res.text).toContain('Page 2 of 3');
        expect(cookieOf(res)).toBeUndefined();
        expect(walkOf((await visitor.get(`/f/${publicId}`)).text).a[ids.name]).toBe('Embedded Emma');
      } finally {
        await app.get(WorkspacesService).setEmbedOrigins(ws.slug, []);
      }
    });

    it('keeps a visitor’s answers when another site sends them to a resume link that opens nothing', async () => {
      const visitor = request.agent(server());
      const v1 = await visitor.get(`/f/${publicId}`);
      await post(visitor, v1.text, [
        [ids.name, 'Kept Kim'],
        [ids.plan, ids.family],
        ['_action', 'next'],
      ]);
      const res = await visitor.get(`/f/${publicId}?resume=${'Z'.repeat(43)}`).set('Sec-Fetch-Site', 'cross-site');
      expect(res.status).toBe(200);
      expect(res.text).toContain('does not open any answers');
      expect(walkOf(res.text).a[ids.name]).toBe('Kept Kim');
      expect(cookieOf(res) ?? '').not.toMatch(/Max-Age=0/);
      expect(walkOf((await visitor.get(`/f/${publicId}`)).text).a[ids.name]).toBe('Kept Kim');
    });
  });
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';
import { PAGE_SCRIPT } from '../../src/respondent/page-assets';

/** The branching form of issue 25 on the respondent page, walked without JavaScript (plain form posts). */
describe('respondent page: forms of several pages, rules and hidden fields', () => {
  let app: NestFastifyApplication;
  let token: string;
  let publicId: string;
  let ids: Record<string, string>;
  let choice: Record<string, string>;

  const rows = async () =>
    (await app
      .get(DataSource)
      .query(
        'SELECT r.answers, r.hidden, r.shown FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1 ORDER BY r.submitted_at',
        [publicId],
      )) as Array<{ answers: Record<string, unknown>; hidden: Record<string, string>; shown: string[] | null }>;

  const stateOf = (html: string) => {
    const m = /<input type="hidden" name="_state" value="([^"]+)"\/>/.exec(html);
    if (!m) throw new Error(`no state in the page:\n${html}`);
    return m[1];
  };
  const post = (fields: Array<[string, string]>) =>
    request(app.getHttpServer()).post(`/f/${publicId}`).type('form').send(new URLSearchParams(fields).toString());

  beforeAll(async () => {
    app = await createTestApp();
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    const created = await callTool(app, token, 'create_form', {
      title: 'Summer party',
      description: 'Three short pages',
      hiddenFields: ['source'],
      blocks: [
        { ref: 'attend', type: 'multiple_choice', title: 'Are you coming?', required: true, choices: ['Yes', 'No'] },
        {
          ref: 'why_not',
          type: 'short_text',
          title: 'What keeps you away?',
          required: true,
          showIf: { block: 'attend', op: 'equals', value: 'No' },
        },
        {
          ref: 'details',
          type: 'page_break',
          title: 'Details',
          description: 'About your visit',
          jumps: [{ if: { block: 'attend', op: 'equals', value: 'No' }, to: 'end' }],
        },
        { ref: 'guests', type: 'number', title: 'How many guests?', required: true, min: 0, max: 5 },
        { ref: 'last', type: 'page_break', title: 'One more thing' },
        {
          ref: 'mood',
          type: 'linear_scale',
          title: 'How excited are you?',
          min: 1,
          max: 5,
          minLabel: 'Meh',
          maxLabel: 'Very',
        },
      ],
    });
    expect(created.status).toBe(200);
    publicId = created.body.publicId;
    ids = Object.fromEntries(created.body.blocks.map((b: { ref: string; id: string }) => [b.ref, b.id]));
    choice = Object.fromEntries(
      created.body.blocks[0].choices.map((c: { id: string; label: string }) => [c.label, c.id]),
    );
    await callTool(app, token, 'publish_form', { publicId });
  });
  afterAll(() => app.close());

  it('shows the first page only, with its progress, the state field and no input for a page_break; unknown query parameters are ignored', async () => {
    const res = await request(app.getHttpServer()).get(
      `/f/${publicId}?source=newsletter&utm_campaign=june&utm_source=x`,
    );
    expect(res.status).toBe(200);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.text).toContain('<title>Page 1 of 3: Summer party</title>');
    expect(res.text).toContain('<p class="muted" id="progress">Page 1 of 3</p>');
    expect(res.text).toContain(`name="${ids.attend}"`);
    // Not shown yet (its condition does not hold): drawn hidden for the page's script; later pages are not on this one.
    expect(res.text).toMatch(
      new RegExp(`<div id="q-${ids.why_not}" hidden=""><div class="field"><label for="f-${ids.why_not}">`),
    );
    expect(res.text).toMatch(new RegExp(`<div id="q-${ids.attend}"><fieldset`));
    expect(res.text).not.toContain(`name="${ids.guests}"`);
    // A page_break is never an input.
    expect(res.text).not.toContain(`name="${ids.details}"`);
    expect(res.text).not.toContain(`id="f-${ids.details}"`);
    expect(res.text).toContain('<button type="submit" value="next" name="_action">Next</button>');
    expect(res.text).not.toContain('value="back"');
    stateOf(res.text);
  });

  it('shows a block whose condition the answers now meet on the same page before moving on, then jumps to the end and stores the hidden value', async () => {
    const first = await request(app.getHttpServer()).get(`/f/${publicId}?source=newsletter&utm_source=x`);
    // Next with "No": the same page again, now with "What keeps you away?" (and nothing stored).
    const again = await post([
      ['_state', stateOf(first.text)],
      [ids.attend, choice.No],
      ['_action', 'next'],
    ]);
    expect(again.status).toBe(200);
    expect(again.text).toContain('<p class="muted" id="progress">Page 1 of 1</p>');
    expect(again.text).toContain(`<div id="q-${ids.why_not}"><div class="field">`);
    expect(again.text).toContain('role="status"');
    expect(again.text).toMatch(new RegExp(`checked="" value="${choice.No}"`));
    expect(again.text).toContain('<button type="submit" value="submit" name="_action">Submit</button>');
    // Next without answering it: the page's error summary.
    const refused = await post([
      ['_state', stateOf(again.text)],
      [ids.attend, choice.No],
      ['_action', 'submit'],
    ]);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('role="alert"');
    expect(refused.text).toContain('autofocus="" id="errors"');
    expect(refused.text).toContain(`<a href="#f-${ids.why_not}">`);
    expect(await rows()).toHaveLength(0);
    // Answered: the jump on "Details" ends the form, so this submits.
    const done = await post([
      ['_state', stateOf(refused.text)],
      [ids.attend, choice.No],
      [ids.why_not, 'Holiday'],
      ['_action', 'submit'],
    ]);
    expect(done.status).toBe(200);
    expect(done.text).toContain('Thank you!');
    const [row] = await rows();
    expect(row.answers).toEqual({ [ids.attend]: choice.No, [ids.why_not]: 'Holiday' });
    expect(row.hidden).toEqual({ source: 'newsletter' });
    expect(row.shown).toEqual([ids.attend, ids.why_not]);
    await app
      .get(DataSource)
      .query(
        'DELETE FROM responses WHERE id IN (SELECT r.id FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1)',
        [publicId],
      );
  });

  it('walks three pages with Back (answers kept), checks each page, draws the scale end labels, and stores one response for a replayed final post', async () => {
    const first = await request(app.getHttpServer()).get(`/f/${publicId}`);
    const second = await post([
      ['_state', stateOf(first.text)],
      [ids.attend, choice.Yes],
      ['_action', 'next'],
    ]);
    expect(second.status).toBe(200);
    expect(second.text).toContain('<title>Page 2 of 3: Summer party</title>');
    expect(second.text).toContain('<h2>Details</h2>');
    expect(second.text).toContain(`name="${ids.guests}"`);
    expect(second.text).not.toContain(`name="${ids.attend}"`);
    expect(second.text).toContain('<button type="submit" value="back" class="secondary" name="_action">Back</button>');

    // Back keeps what was typed on this page (unchecked) and shows page 1 with its answer.
    const back = await post([
      ['_state', stateOf(second.text)],
      [ids.guests, '9'],
      ['_action', 'back'],
    ]);
    expect(back.status).toBe(200);
    expect(back.text).toContain('Page 1 of 3');
    expect(back.text).toMatch(new RegExp(`checked="" value="${choice.Yes}"`));
    const forward = await post([
      ['_state', stateOf(back.text)],
      [ids.attend, choice.Yes],
      ['_action', 'next'],
    ]);
    expect(forward.text).toContain('Page 2 of 3');
    expect(forward.text).toContain(`name="${ids.guests}" value="9"`);

    // Page 2 is checked on its own: 9 is over the maximum.
    const refused = await post([
      ['_state', stateOf(forward.text)],
      [ids.guests, '9'],
      ['_action', 'next'],
    ]);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Enter a number from 0 to 5.');
    const third = await post([
      ['_state', stateOf(refused.text)],
      [ids.guests, '2'],
      ['_action', 'next'],
    ]);
    expect(third.status).toBe(200);
    expect(third.text).toContain('Page 3 of 3');
    expect(third.text).toContain('<h2>One more thing</h2>');
    expect(third.text).toContain(`id="l-${ids.mood}"`);
    expect(third.text).toMatch(/<span class="visually-hidden">1: <\/span>Meh<\/span>/);
    expect(third.text).toMatch(/<span class="visually-hidden">5: <\/span>Very<\/span>/);
    expect(third.text).toMatch(new RegExp(`aria-describedby="l-${ids.mood}"`));

    const final: Array<[string, string]> = [
      ['_state', stateOf(third.text)],
      [ids.mood, '4'],
      ['_action', 'submit'],
    ];
    // A double click: two posts of the same final page at once, then a replay.
    const [a, b] = await Promise.all([post(final), post(final)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.text).toContain('Thank you!');
    expect(b.text).toContain('Thank you!');
    const replay = await post(final);
    expect(replay.text).toContain('Thank you!');
    const stored = await rows();
    expect(stored).toHaveLength(1);
    expect(stored[0].answers).toEqual({ [ids.attend]: choice.Yes, [ids.guests]: 2, [ids.mood]: 4 });
    expect(stored[0].hidden).toEqual({});
    expect(stored[0].shown).toEqual([ids.attend, ids.details, ids.guests, ids.last, ids.mood]);
  });

  it("serves the page's script from its own origin under the page's CSP, with the page's rules in data-logic", async () => {
    const script = await request(app.getHttpServer()).get('/f/assets/respondent.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.headers['x-content-type-options']).toBe('nosniff');
    expect(script.text).toContain('function evaluate(c, facts)');
    const res = await request(app.getHttpServer()).get(`/f/${publicId}?source=newsletter`);
    const csp = res.headers['content-security-policy'];
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline'[^;]*;[^;]*script|unsafe-eval/);
    expect(res.text).toContain(`<script src="${PAGE_SCRIPT.path}" defer=""></script>`);
    expect(res.text).not.toMatch(/<script>|<script [^s]/);
    expect(res.text).toContain('<p class="visually-hidden" id="announce" aria-live="polite"></p>');
    const logic = JSON.parse(
      /data-logic="([^"]+)"/
        .exec(res.text)![1]
        .replace(/&quot;/g, '"')
        .replace(/&#x27;/g, "'")
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&'),
    );
    expect(logic).toEqual({
      position: 1,
      blocks: [
        { id: ids.attend, type: 'multiple_choice', title: 'Are you coming?' },
        {
          id: ids.why_not,
          type: 'short_text',
          title: 'What keeps you away?',
          showIf: { block: ids.attend, op: 'equals', value: choice.No },
        },
      ],
      answers: {},
      hidden: {},
      breaks: [
        { id: ids.details, jumps: [{ if: { block: ids.attend, op: 'equals', value: choice.No }, to: 'end' }] },
        { id: ids.last },
      ],
    });
  });

  it('does not show the page again for questions its script showed (_seen), and a Next whose answers end the form submits them', async () => {
    const before = (await rows()).length;
    const first = await request(app.getHttpServer()).get(`/f/${publicId}`);
    expect(first.text).toContain('value="next" name="_action">Next</button>');
    // The script showed "What keeps you away?" (listed in _seen) and it was answered; the button said Next.
    const done = await post([
      ['_state', stateOf(first.text)],
      [ids.attend, choice.No],
      [ids.why_not, 'Rain'],
      ['_seen', `${ids.attend} ${ids.why_not}`],
      ['_action', 'next'],
    ]);
    expect(done.status).toBe(200);
    expect(done.text).toContain('Thank you!');
    const stored = await rows();
    expect(stored).toHaveLength(before + 1);
    expect(stored[stored.length - 1].answers).toEqual({ [ids.attend]: choice.No, [ids.why_not]: 'Rain' });
    // _seen names only blocks of the current page: another page's id does not skip the check.
    const again = await request(app.getHttpServer()).get(`/f/${publicId}`);
    const shown = await post([
      ['_state', stateOf(again.text)],
      [ids.attend, choice.No],
      ['_seen', `${ids.guests} ${ids.mood}`],
      ['_action', 'next'],
    ]);
    expect(shown.text).toContain('Your answers added questions to this page.');
  });

  it('without JavaScript, a No that jumps to the end is sent by the Next it pressed: one post, no second look at the page (issue 34)', async () => {
    // The worked example of docs/tools.md: "Did you come?" No ends the form.
    const created = await callTool(app, token, 'create_form', {
      title: 'Workshop feedback',
      blocks: [
        { ref: 'came', type: 'yes_no', title: 'Did you come to the workshop?', required: true },
        {
          type: 'page_break',
          title: 'About the workshop',
          jumps: [{ if: { block: 'came', op: 'equals', value: false }, to: 'end' }],
        },
        { ref: 'score', type: 'rating', title: 'How useful was it?', required: true },
      ],
    });
    const workshop = created.body.publicId as string;
    const came = created.body.blocks[0].id as string;
    await callTool(app, token, 'publish_form', { publicId: workshop });
    const send = (fields: Array<[string, string]>) =>
      request(app.getHttpServer()).post(`/f/${workshop}`).type('form').send(new URLSearchParams(fields).toString());
    const stored = async () =>
      (await app
        .get(DataSource)
        .query('SELECT r.answers FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1', [
          workshop,
        ])) as Array<{ answers: Record<string, unknown> }>;

    const first = await request(app.getHttpServer()).get(`/f/${workshop}`);
    expect(first.text).toContain('<p class="muted" id="progress">Page 1 of 2</p>');
    expect(first.text).toContain('<button type="submit" value="next" name="_action">Next</button>');
    const done = await send([
      ['_state', stateOf(first.text)],
      [came, 'false'],
      ['_action', 'next'],
    ]);
    expect(done.status).toBe(200);
    expect(done.text).toContain('Thank you!');
    expect(await stored()).toEqual([{ answers: { [came]: false } }]);

    // Yes goes on to page 2, where the form ends: Submit there.
    const again = await request(app.getHttpServer()).get(`/f/${workshop}`);
    const second = await send([
      ['_state', stateOf(again.text)],
      [came, 'true'],
      ['_action', 'next'],
    ]);
    expect(second.text).toContain('<p class="muted" id="progress">Page 2 of 2</p>');
    expect(second.text).toContain('<button type="submit" value="submit" name="_action">Submit</button>');
    expect(await stored()).toHaveLength(1);
  });

  it('keeps the signed state under its bound: answers too long to carry give a problem on the page, not a post over the body limit', async () => {
    const long = (title: string) => ({ type: 'long_text', title });
    const created = await callTool(app, token, 'create_form', {
      title: 'Essays',
      blocks: [
        ...['One', 'Two', 'Three', 'Four', 'Five'].map(long),
        { type: 'page_break', title: 'More' },
        ...['Six', 'Seven', 'Eight', 'Nine', 'Ten'].map(long),
        { type: 'page_break', title: 'Last' },
        { type: 'short_text', title: 'Name' },
      ],
    });
    const essays = created.body.publicId;
    const bid = created.body.blocks.map((b: { id: string }) => b.id);
    await callTool(app, token, 'publish_form', { publicId: essays });
    const send = (fields: Array<[string, string]>) =>
      request(app.getHttpServer()).post(`/f/${essays}`).type('form').send(new URLSearchParams(fields).toString());
    const text = (n: number) => 'x'.repeat(n);
    const first = await request(app.getHttpServer()).get(`/f/${essays}`);
    const second = await send([
      ['_state', stateOf(first.text)],
      ...bid.slice(0, 5).map((id: string): [string, string] => [id, text(10000)]),
      ['_action', 'next'],
    ]);
    expect(second.status).toBe(200);
    expect(second.text).toContain('<h2>More</h2>');
    // Page 2 full too: 100,000 characters of answers would be a state of about 134 KB.
    const page2 = bid.slice(6, 11).map((id: string, i: number): [string, string] => [id, text(i === 2 ? 10000 : 9000)]);
    const refused = await send([['_state', stateOf(second.text)], ...page2, ['_action', 'next']]);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('<h2>More</h2>');
    expect(refused.text).toContain(`<a href="#f-${bid[8]}">`);
    expect(refused.text).toMatch(/too long to carry to the next page \(1\d\d KB; this form takes 100 KB\)/);
    // What was typed is still on the page, but the state it carries is the one from before (under the bound).
    expect(refused.text).toContain(`>${text(10000)}</textarea>`);
    expect(stateOf(refused.text).length).toBeLessThan(100 * 1024);
    // Shortened: on to the last page, and the whole walk is stored.
    const shortened = page2.map(([id]: [string, string]): [string, string] => [id, text(2000)]);
    const third = await send([['_state', stateOf(refused.text)], ...shortened, ['_action', 'next']]);
    expect(third.status).toBe(200);
    expect(third.text).toContain('<h2>Last</h2>');
    const done = await send([
      ['_state', stateOf(third.text)],
      [bid[12], 'Ada'],
      ['_action', 'submit'],
    ]);
    expect(done.text).toContain('Thank you!');
    const list = await callTool(app, token, 'list_responses', { publicId: essays });
    expect(Object.keys(list.body.responses[0].answers)).toHaveLength(11);
  });

  it('takes no state it did not sign: a forged one starts the walk again and stores nothing', async () => {
    const before = (await rows()).length;
    const first = await request(app.getHttpServer()).get(`/f/${publicId}`);
    const [body, mac] = stateOf(first.text).split('.');
    const forged = JSON.parse(Buffer.from(body, 'base64url').toString());
    forged.s = ['', ids.details, ids.last];
    const tampered = `${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${mac}`;
    const res = await post([
      ['_state', tampered],
      [ids.mood, '4'],
      ['_action', 'next'],
    ]);
    expect(res.status).toBe(400);
    expect(res.text).toContain('Page 1 of');
    expect(res.text).toContain(`<a href="#f-${ids.attend}">`);
    expect(await rows()).toHaveLength(before);
  });

  it('serves the form as JSON for embedding with refs, rules and hidden fields, and takes hidden values in a JSON post', async () => {
    const res = await request(app.getHttpServer()).get(`/f/${publicId}`).set('Accept', 'application/json');
    expect(res.status).toBe(200);
    expect(res.body.hiddenFields).toEqual(['source']);
    expect(res.body.blocks[1]).toMatchObject({ ref: 'why_not', showIf: { block: 'attend', op: 'equals' } });
    expect(res.body.blocks[2]).toMatchObject({ type: 'page_break', jumps: [{ to: 'end' }] });
    expect(res.body.blocks[5]).toMatchObject({ minLabel: 'Meh', maxLabel: 'Very' });
    const created = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .send({ answers: { attend: 'No', why_not: 'Away' }, hidden: { source: 'embed', utm_source: 'x' } });
    expect(created.status).toBe(201);
    expect(created.body.hidden).toEqual({ source: 'embed' });
  });
});

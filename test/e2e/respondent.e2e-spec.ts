import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

describe('respondent page /f/{publicId}', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let token: string;
  let publicId: string;
  let ids: Record<string, string>;
  let colourIds: string[];

  const stored = async () =>
    Number(
      (
        await app
          .get(DataSource)
          .query('SELECT count(*) AS n FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1', [
            publicId,
          ])
      )[0].n,
    );

  beforeAll(async () => {
    app = await createTestApp();
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    const created = await callTool(app, token, 'create_form', {
      title: 'Feedback <script>alert("x")</script>',
      description: 'Tell us & be honest',
      blocks: [
        { type: 'statement', title: 'Welcome <b>friend</b>' },
        { type: 'short_text', title: 'Name', required: true },
        { type: 'email', title: 'Email', required: true },
        { type: 'multiple_choice', title: 'Colour', choices: ['Red', '<i>Green</i>'] },
        { type: 'checkboxes', title: 'Pets', choices: ['Cat', 'Dog'] },
        { type: 'rating', title: 'Stars', max: 5 },
        { type: 'number', title: 'Age', min: 0 },
        { type: 'yes_no', title: 'Subscribe' },
        { type: 'long_text', title: 'Comments', description: 'Anything else?' },
      ],
    });
    publicId = created.body.publicId;
    ids = Object.fromEntries(
      created.body.blocks.map((b: { title: string; id: string }) => [b.title.split(' ')[0], b.id]),
    );
    colourIds = created.body.blocks[3].choices.map((c: { id: string }) => c.id);
    await callTool(app, token, 'publish_form', { publicId });
  });
  afterAll(() => app.close());

  it('serves a published form as an accessible HTML page with labels, required marks and fitting inputs', async () => {
    const res = await request(app.getHttpServer()).get(`/f/${publicId}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    const html = res.text;
    expect(html).toContain('<html lang="en">');
    expect(html).toMatch(new RegExp(`<form [^>]*action="/f/${publicId}" method="post"`));
    expect(html).toContain(`<label for="f-${ids.Name}">Name <span class="req" aria-hidden="true">*</span></label>`);
    expect(html).toMatch(
      new RegExp(`<input type="email" id="f-${ids.Email}"[^>]*aria-required="true"[^>]* name="${ids.Email}"`),
    );
    expect(html).toMatch(new RegExp(`<input type="radio"[^>]* name="${ids.Colour}" value="${colourIds[0]}"`));
    expect(html).toMatch(new RegExp(`<input type="checkbox" name="${ids.Pets}"`));
    expect(html).toMatch(new RegExp(`<input type="number" id="f-${ids.Age}"[^>]* min="0"`));
    expect(html).toContain(
      `<textarea id="f-${ids.Comments}" name="${ids.Comments}" rows="5" aria-describedby="d-${ids.Comments}">`,
    );
    expect((html.match(/type="radio"[^>]* name="[^"]+" value="[1-5]"/g) ?? []).length).toBe(5); // rating 1..5
  });

  it('shows markup in titles, descriptions and choices as text', async () => {
    const html = (await request(app.getHttpServer()).get(`/f/${publicId}`)).text;
    expect(html).not.toContain('<script>alert');
    expect(html).toContain('Feedback &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(html).toContain('Welcome &lt;b&gt;friend&lt;/b&gt;');
    expect(html).toContain('&lt;i&gt;Green&lt;/i&gt;');
    expect(html).toContain('Tell us &amp; be honest');
  });

  it('answers an empty form post with the page, an error per required field, and stores nothing', async () => {
    const res = await request(app.getHttpServer()).post(`/f/${publicId}`).type('form').send({});
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.text).toContain('role="alert"');
    expect(res.text).toContain(
      `<p class="error" id="e-${ids.Name}"><span aria-hidden="true">⚠ </span>This question needs an answer.</p>`,
    );
    expect(res.text).toContain(`<p class="error" id="e-${ids.Email}">`);
    expect(res.text).toMatch(
      new RegExp(`id="f-${ids.Name}"[^>]*aria-describedby="e-${ids.Name}"[^>]*aria-invalid="true"`),
    );
    expect(await stored()).toBe(0);
  });

  it('keeps the answers (escaped) when a submission is refused', async () => {
    const res = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .type('form')
      .send(
        `${ids.Name}=${encodeURIComponent('Ada "<b>"')}&${ids.Email}=not-an-email&${ids.Pets}=${encodeURIComponent('Cat')}&${ids.Comments}=${encodeURIComponent('</textarea><script>x</script>')}`,
      );
    expect(res.status).toBe(400);
    expect(res.text).toContain('value="Ada &quot;&lt;b&gt;&quot;"');
    expect(res.text).toContain('value="not-an-email"');
    expect(res.text).toContain('Enter an email address, like name@example.com.');
    expect(res.text).not.toContain('This question needs an answer.'); // name was given
    expect(res.text).toContain('&lt;/textarea&gt;&lt;script&gt;x&lt;/script&gt;</textarea>');
    expect(await stored()).toBe(0);
  });

  it('shows a hostile form title, block title and description, choice label and re-shown answer as text', async () => {
    const evil = '<script>alert(1)</script> "><img src=x onerror=alert(2)> javascript:alert(3)';
    // How the renderer writes it as text (and inside an attribute value): nothing a browser runs.
    const asText =
      '&lt;script&gt;alert(1)&lt;/script&gt; &quot;&gt;&lt;img src=x onerror=alert(2)&gt; javascript:alert(3)';
    const made = await callTool(app, token, 'create_form', {
      title: `Form ${evil}`,
      blocks: [
        { type: 'short_text', title: `Say ${evil}`, description: `About ${evil}` },
        { type: 'multiple_choice', title: 'Pick', choices: [`Choice ${evil}`, 'Plain'] },
        { type: 'email', title: 'Mail', required: true },
      ],
    });
    const form = made.body;
    await callTool(app, token, 'publish_form', { publicId: form.publicId });
    const noMarkup = (html: string) => {
      expect(html).not.toMatch(/<script>|<img|onerror=alert\(2\)>|href="javascript:/i);
    };
    const shown = (await request(app.getHttpServer()).get(`/f/${form.publicId}`)).text;
    noMarkup(shown);
    for (const text of [
      `<title>Form ${asText}</title>`,
      `<h1>Form ${asText}</h1>`,
      `Say ${asText}`,
      `About ${asText}`,
    ]) {
      expect(shown).toContain(text);
    }
    expect(shown).toContain(`Choice ${asText}</label>`);
    // Refused (the email is missing): the answer comes back in its field, as a value.
    const refused = await request(app.getHttpServer())
      .post(`/f/${form.publicId}`)
      .type('form')
      .send(new URLSearchParams([[form.blocks[0].id, evil]]).toString());
    expect(refused.status).toBe(400);
    noMarkup(refused.text);
    expect(refused.text).toContain(`name="${form.blocks[0].id}" value="${asText}"`);
    const thanks = await request(app.getHttpServer())
      .post(`/f/${form.publicId}`)
      .type('form')
      .send(new URLSearchParams([[form.blocks[2].id, 'a@example.com']]).toString());
    expect(thanks.status).toBe(200);
    noMarkup(thanks.text);
    expect(thanks.text).toContain(`Your answers to “Form ${asText}” were received.`);
  });

  it('stores a valid form post, typed like the API, and shows a thank-you page', async () => {
    const body = new URLSearchParams([
      [ids.Name, 'Grace'],
      [ids.Email, 'grace@example.com'],
      [ids.Colour, colourIds[1]],
      [ids.Pets, 'Cat'],
      [ids.Pets, 'Dog'],
      [ids.Stars, '4'],
      [ids.Age, '37'],
      [ids.Subscribe, 'true'],
      [ids.Comments, ''],
    ]).toString();
    const res = await request(app.getHttpServer()).post(`/f/${publicId}`).type('form').send(body);
    expect(res.status).toBe(200);
    expect(res.text).toContain('Thank you!');
    const page = await callTool(app, token, 'list_responses', { publicId, order: 'newest', limit: 1 });
    expect(page.body.responses[0].answers).toEqual({
      [ids.Name]: 'Grace',
      [ids.Email]: 'grace@example.com',
      [ids.Colour]: '<i>Green</i>',
      [ids.Pets]: ['Cat', 'Dog'],
      [ids.Stars]: 4,
      [ids.Age]: 37,
      [ids.Subscribe]: true,
    });
    const [row] = await app
      .get(DataSource)
      .query(`SELECT source FROM responses WHERE id = $1`, [page.body.responses[0].id]);
    expect(row.source).toBe('web');
  });

  it('takes JSON for embedding: 201 with the response, or the JSON error envelope', async () => {
    const before = await stored();
    const ok = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .send({ answers: { [ids.Name]: 'Json', [ids.Email]: 'j@example.com', [ids.Colour]: 'Red' } });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ id: expect.any(String), answers: { [ids.Colour]: 'Red' } });
    const bad = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .send({ answers: { [ids.Name]: 'Json', [ids.Stars]: 9 } });
    const error = expectError(bad, 400, 'invalid_arguments');
    expect(error.details!.map((d) => d.path).sort()).toEqual([`/answers/${ids.Email}`, `/answers/${ids.Stars}`].sort());
    const shape = await request(app.getHttpServer()).post(`/f/${publicId}`).send({ name: 'x' });
    expect(expectError(shape, 400, 'invalid_arguments').details).toEqual([
      { path: '/answers', message: 'must be an object of answers by block id' },
    ]);
    expectError(
      await request(app.getHttpServer()).post(`/f/${publicId}`).set('Content-Type', 'application/json').send('{bad'),
      400,
      'invalid_arguments',
    );
    expect(await stored()).toBe(before + 1);
  });

  it('says so for draft and closed forms (409 form_not_accepting_responses for JSON), and 404 for unknown ones', async () => {
    const draft = await callTool(app, token, 'create_form', {
      title: 'Draft',
      blocks: [{ type: 'short_text', title: 'Q' }],
    });
    const page = await request(app.getHttpServer()).get(`/f/${draft.body.publicId}`);
    expect(page.status).toBe(409);
    expect(page.text).toContain('not open yet');
    expectError(
      await request(app.getHttpServer()).post(`/f/${draft.body.publicId}`).send({ answers: {} }),
      409,
      'form_not_accepting_responses',
    );

    await callTool(app, token, 'publish_form', { publicId: draft.body.publicId });
    await callTool(app, token, 'close_form', { publicId: draft.body.publicId });
    const closed = await request(app.getHttpServer()).get(`/f/${draft.body.publicId}`);
    expect(closed.status).toBe(409);
    expect(closed.text).toContain('This form is closed');
    const post = await request(app.getHttpServer()).post(`/f/${draft.body.publicId}`).type('form').send('x=1');
    expect(post.status).toBe(409);
    expect(post.text).toContain('This form is closed');
    const json = expectError(
      await request(app.getHttpServer()).post(`/f/${draft.body.publicId}`).send({ answers: {} }),
      409,
      'form_not_accepting_responses',
    );
    // Worded for the respondent, who cannot reopen the form: no tool names.
    expect(json.message).toBe('This form is no longer accepting responses.');
    expect(json.hint).toContain('contact the person or organisation who sent you the form');
    expect(JSON.stringify(json)).not.toContain('publish_form');
    expect(post.text).toContain('This form is no longer accepting responses.');
    expect(post.text).not.toContain('publish_form');

    const missing = await request(app.getHttpServer()).get('/f/nope');
    expect(missing.status).toBe(404);
    expect(missing.text).toContain('Form not found');
    expectError(await request(app.getHttpServer()).post('/f/nope').send({ answers: {} }), 404, 'not_found');
  });

  it('words refused answers for people on the page and its JSON answer, and keeps the API wording for create_response', async () => {
    const created = await callTool(app, token, 'create_form', {
      title: 'Party',
      blocks: [
        { type: 'url', title: 'Your website' },
        { type: 'number', title: 'How many guests?', min: 1, max: 5 },
        { type: 'number', title: 'Budget', max: 5 },
        { type: 'linear_scale', title: 'How likely?', min: 0, max: 10 },
        { type: 'date', title: 'Day' },
      ],
    });
    const form = created.body;
    await callTool(app, token, 'publish_form', { publicId: form.publicId });
    const [site, guests, budget, likely, day] = form.blocks.map((b: { id: string }) => b.id);
    const expected = {
      [site]: 'Enter a web address starting with http:// or https://.',
      [guests]: 'Enter a number from 1 to 5.',
      [budget]: 'Enter a number no greater than 5.',
      [likely]: 'Choose a number from 0 to 10.',
      [day]: 'Enter a date that exists on the calendar.',
    };
    const answers = { [site]: 'ftp://x', [guests]: 9, [budget]: 6, [likely]: 11, [day]: '2026-02-30' };

    const html = await request(app.getHttpServer())
      .post(`/f/${form.publicId}`)
      .type('form')
      .send(
        new URLSearchParams(Object.entries(answers).map(([k, v]) => [k, String(v)] as [string, string])).toString(),
      );
    expect(html.status).toBe(400);
    for (const [id, message] of Object.entries(expected)) {
      expect(html.text).toContain(`<p class="error" id="e-${id}"><span aria-hidden="true">⚠ </span>${message}</p>`);
    }
    // The summary names the question, then what to do: no "?:" and no schema words.
    expect(html.text).toContain(
      `<a href="#f-${guests}"><span class="question">How many guests?</span> <span class="problem">Enter a number from 1 to 5.</span></a>`,
    );
    expect(html.text).toContain(
      `<span class="question">Budget</span><span class="visually-hidden">. </span><span class="problem">`,
    );
    // The words a person reads: the page without its signed state (random base64 may spell "URL").
    const words = html.text.replace(/name="_state" value="[^"]*"/, '');
    expect(words).not.toMatch(/[?.!:]\s*[:.]\s|must be|http\(s\)|URL/);

    const json = await request(app.getHttpServer()).post(`/f/${form.publicId}`).send({ answers });
    const error = expectError(json, 400, 'invalid_arguments');
    expect(error.details).toEqual(
      expect.arrayContaining(Object.entries(expected).map(([id, message]) => ({ path: `/answers/${id}`, message }))),
    );
    expect(error.details).toHaveLength(5);

    // API callers keep the terse wording that names types and bounds.
    const api = expectError(
      await callTool(app, token, 'create_response', { publicId: form.publicId, answers }),
      400,
      'invalid_arguments',
    );
    expect(api.details).toContainEqual({ path: `/answers/${site}`, message: 'must be an http(s) URL' });
    expect(api.details).toContainEqual({ path: `/answers/${budget}`, message: 'must be at most 5' });
  });

  it('reads form-post numbers as plain decimals only, and refuses a post with too many fields with 413', async () => {
    const hex = await request(app.getHttpServer())
      .post(`/f/${publicId}`)
      .type('form')
      .send(`${ids.Name}=A&${ids.Email}=a@b.co&${ids.Age}=0x10`);
    expect(hex.status).toBe(400);
    expect(hex.text).toContain('Enter a number no less than 0.');
    const many = Array.from({ length: 1100 }, (_, i) => `f${i}=1`).join('&');
    expectError(
      await request(app.getHttpServer()).post(`/f/${publicId}`).type('form').send(many),
      413,
      'payload_too_large',
    );
  });

  it('refuses to be framed by any site by default: page, refused post, closed and unknown forms alike', async () => {
    const server = app.getHttpServer();
    const draft = await callTool(app, token, 'create_form', {
      title: 'Not yet',
      blocks: [{ type: 'short_text', title: 'Q' }],
    });
    const answers = [
      await request(server).get(`/f/${publicId}`),
      await request(server).post(`/f/${publicId}`).type('form').send({}),
      await request(server).get(`/f/${draft.body.publicId}`),
      await request(server).get('/f/nope'),
      await request(server).post('/f/nope').type('form').send({}),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 400, 409, 404, 404]);
    for (const res of answers) {
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(res.headers['x-frame-options']).toBe('DENY');
    }
  });

  it("lets exactly the origins its workspace lists frame a form's pages, and no others", async () => {
    const server = app.getHttpServer();
    const other = await createWorkspace(app, 'pro');
    const otherToken = (await createToken(app, other, { role: 'admin' })).token;
    const form = await callTool(app, otherToken, 'create_form', {
      title: 'Embedded',
      blocks: [{ type: 'short_text', title: 'Q', required: true }],
    });
    await callTool(app, otherToken, 'publish_form', { publicId: form.body.publicId });
    await app
      .get(WorkspacesService)
      .setEmbedOrigins(other.slug, ['https://Shop.Example', 'https://blog.example:8443/']);

    for (const res of [
      await request(server).get(`/f/${form.body.publicId}`),
      await request(server).post(`/f/${form.body.publicId}`).type('form').send({}),
    ]) {
      expect(res.headers['content-security-policy']).toMatch(
        /; frame-ancestors https:\/\/shop\.example https:\/\/blog\.example:8443(;|$)/,
      );
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.headers['x-frame-options']).toBeUndefined();
    }
    // Another workspace's forms are not affected.
    const mine = await request(server).get(`/f/${publicId}`);
    expect(mine.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(mine.headers['x-frame-options']).toBe('DENY');

    // Cleared: no site again.
    await app.get(WorkspacesService).setEmbedOrigins(other.slug, []);
    const cleared = await request(server).get(`/f/${form.body.publicId}`);
    expect(cleared.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(cleared.headers['x-frame-options']).toBe('DENY');
  });

  it('answers GET with the published form as JSON when the client prefers JSON, and the page to browsers', async () => {
    const server = app.getHttpServer();
    const res = await request(server).get(`/f/${publicId}`).set('Accept', 'application/json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers.vary).toMatch(/\bAccept\b/);
    expect(Object.keys(res.body).sort()).toEqual(['blocks', 'description', 'publicId', 'title']);
    expect(res.body).toMatchObject({
      publicId,
      title: 'Feedback <script>alert("x")</script>',
      description: 'Tell us & be honest',
    });
    expect(res.body.blocks).toHaveLength(9);
    expect(res.body.blocks[1]).toEqual({ id: ids.Name, type: 'short_text', title: 'Name', required: true });
    expect(res.body.blocks[3]).toEqual({
      id: ids.Colour,
      type: 'multiple_choice',
      title: 'Colour',
      required: false,
      choices: [
        { id: colourIds[0], label: 'Red' },
        { id: colourIds[1], label: '<i>Green</i>' },
      ],
    });
    expect(res.body.blocks[5]).toEqual({ id: ids.Stars, type: 'rating', title: 'Stars', required: false, max: 5 });
    expect(res.body.blocks[8]).toEqual({
      id: ids.Comments,
      type: 'long_text',
      title: 'Comments',
      description: 'Anything else?',
      required: false,
    });

    // What a browser sends gets the page, which also says it varies by Accept.
    const browser = await request(server)
      .get(`/f/${publicId}`)
      .set('Accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8');
    expect(browser.headers['content-type']).toMatch(/text\/html/);
    expect(browser.headers.vary).toMatch(/\bAccept\b/);
    expect((await request(server).get(`/f/${publicId}`).set('Accept', '*/*')).headers['content-type']).toMatch(
      /text\/html/,
    );
  });

  it('answers GET as JSON with 409 form_not_accepting_responses for draft and closed forms, and 404 for unknown ones', async () => {
    const server = app.getHttpServer();
    const form = await callTool(app, token, 'create_form', {
      title: 'Later',
      blocks: [{ type: 'short_text', title: 'Q' }],
    });
    const asJson = (id: string) => request(server).get(`/f/${id}`).set('Accept', 'application/json');
    const draft = expectError(await asJson(form.body.publicId), 409, 'form_not_accepting_responses');
    expect(draft.message).toBe('This form is not accepting responses yet.');
    expect(draft.hint).not.toContain('publish_form');
    await callTool(app, token, 'publish_form', { publicId: form.body.publicId });
    await callTool(app, token, 'close_form', { publicId: form.body.publicId });
    const closed = expectError(await asJson(form.body.publicId), 409, 'form_not_accepting_responses');
    expect(closed.message).toBe('This form is no longer accepting responses.');
    expect(closed.hint).not.toContain('publish_form');
    expectError(await asJson('nope'), 404, 'not_found');
    expectError(await asJson('not%20an%20id'), 404, 'not_found');
  });

  it('is limited per client IP', async () => {
    const limited = await createTestApp({ RATE_LIMIT_IP_PER_MIN: '3' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await request(limited.getHttpServer()).get(`/f/${publicId}`)).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      await limited.close();
    }
  });
});

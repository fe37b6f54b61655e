import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { parse } from 'csv-parse/sync';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { LongReads } from '../../src/responses/long-reads';
import { DataSource } from 'typeorm';
import { Role } from '../../src/common/access/roles';
import { FormRecord, FormsService } from '../../src/forms/forms.service';
import { SessionsService } from '../../src/settings/sessions.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';
import { expectEscaped, resultsForm, XSS } from './results.fixture';

const N = 120;

describe('results pages: forms, summary, responses, download, share (issue 27)', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let other: TestWorkspace;
  let form: FormRecord;
  let answers: (i: number) => Record<string, unknown>;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp();
    ws = await createWorkspace(app, 'pro');
    other = await createWorkspace(app, 'pro');
    ({ form, answers } = await resultsForm(app, ws, N));
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(() => app.close());

  /** A member with a role and a signed-in session (cookie and CSRF token). */
  async function signedIn(role: Role, workspace = ws) {
    const email = `${role}-${randomBytes(4).toString('hex')}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(workspace.slug, email, role);
    const cookie = await app.get(SessionsService).start(user.id);
    const { csrf } = (await app.get(SessionsService).find(cookie))!;
    return { userId: user.id, cookie: `fw_session=${cookie}`, csrf };
  }
  const get = (url: string, cookie: string) => request(app.getHttpServer()).get(url).set('Cookie', cookie);
  const post = (url: string, who: { cookie: string; csrf: string }, form: Record<string, string> = {}) =>
    request(app.getHttpServer())
      .post(url)
      .set('Cookie', who.cookie)
      .type('form')
      .send({ csrf: who.csrf, ...form });
  const base = () => `/settings/w/${ws.slug}/forms`;

  it('summarize_responses gives rating and linear scale their distribution, unfiltered and filtered', async () => {
    const [, , rating, scale] = form.blocks.map((b) => b.id);
    const count = (id: string, lo: number, hi: number, keep: (i: number) => boolean = () => true) =>
      Array.from({ length: hi - lo + 1 }, (_, k) => ({
        value: lo + k,
        count: Array.from({ length: N }, (_, i) => i).filter((i) => keep(i) && answers(i)[id] === lo + k).length,
      }));
    const res = await callTool(app, token, 'summarize_responses', { publicId: form.publicId });
    expect(res.status).toBe(200);
    const of = (body: { blocks: Array<{ blockId: string; distribution?: unknown }> }, id: string) =>
      body.blocks.find((b) => b.blockId === id)!.distribution;
    expect(of(res.body, rating)).toEqual(count(rating, 1, 5));
    expect(of(res.body, scale)).toEqual(count(scale, 0, 10));
    expect(of(res.body, scale)).toContainEqual({ value: 10, count: 10 });
    // Filtered (the yes answers: even i), counted from the matching rows.
    const yes = form.blocks[5].id;
    const seg = await callTool(app, token, 'summarize_responses', {
      publicId: form.publicId,
      where: { block: yes, op: 'equals', value: true },
    });
    expect(seg.status).toBe(200);
    expect(of(seg.body, rating)).toEqual(count(rating, 1, 5, (i) => i % 2 === 0));
    expect(of(seg.body, scale)).toEqual(count(scale, 0, 10, (i) => i % 2 === 0));
    // Numbers keep min/mean/max and no distribution.
    expect(res.body.blocks[4]).toMatchObject({ min: 20, max: 69 });
    expect(res.body.blocks[4].distribution).toBeUndefined();
  });

  it('Forms lists the workspace forms with status, response count and last response, for a viewer', async () => {
    const viewer = await signedIn('viewer');
    const draft = await createForm(app, ws, { title: 'Draft form' });
    const theirs = await createForm(app, other, { title: 'Not yours' });
    const res = await get(base(), viewer.cookie);
    expect(res.status).toBe(200);
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.text).toContain(`href="${base()}/${form.publicId}"`);
    expect(res.text).toContain('>Published<');
    expect(res.text).toContain('>120<');
    expect(res.text).toContain('2026-01-30 18:00 UTC'); // the last response (119 × 6 h after Jan 1)
    expect(res.text).toContain(`value="http://formwork.test/f/${form.publicId}"`); // the share link, read-only
    expect(res.text).toContain(`href="http://formwork.test/f/${form.publicId}"`);
    expect(res.text).toContain('Draft form');
    expect(res.text).not.toContain(theirs.publicId);
    expect(res.text).toContain('<script src="/settings/assets/results.js"');
    expect(res.text).toMatch(/<a href="\/settings\/w\/[^"]+\/forms" aria-current="page">Forms<\/a>/);
    expectEscaped(res.text);
    expect((await get(`${base()}/${draft.publicId}`, viewer.cookie)).status).toBe(200);
    // The copy script is a file of this origin.
    const script = await request(app.getHttpServer()).get('/settings/assets/results.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toContain('text/javascript');
    expect(script.text).toContain('data-copy-field');
  });

  it("another workspace's form, and an unknown response, are 404", async () => {
    const viewer = await signedIn('viewer');
    const theirs = await createForm(app, other, { title: 'Theirs' });
    for (const path of ['', '/responses', '/share', '/responses/00000000-0000-4000-8000-000000000000'])
      expect((await get(`${base()}/${theirs.publicId}${path}`, viewer.cookie)).status).toBe(404);
    expect((await get(`${base()}/${form.publicId}/responses/not-a-uuid`, viewer.cookie)).status).toBe(404);
    const editor = await signedIn('editor');
    expect((await post(`${base()}/${theirs.publicId}/publish`, editor)).status).toBe(404);
    expect((await get(`${base()}/${theirs.publicId}/publish`, editor.cookie)).status).toBe(404);
    const theirsExport = await post(`${base()}/${theirs.publicId}/download`, editor, { format: 'csv' });
    expect(theirsExport.status).toBe(404);
    // Signed out: sent to sign in.
    expect((await request(app.getHttpServer()).get(`${base()}/${form.publicId}`)).status).toBe(303);
  });

  it('the summary draws each block from the maintained aggregates, with the numbers in a hidden table', async () => {
    const viewer = await signedIn('viewer');
    const res = await get(`${base()}/${form.publicId}`, viewer.cookie);
    expect(res.status).toBe(200);
    const html = res.text;
    expectEscaped(html);
    expect(html).toContain('120 responses, from 2026-01-01 00:00 UTC to 2026-01-30 18:00 UTC');
    expect(html.match(/<svg/g)!.length).toBeGreaterThanOrEqual(3 + 2 + 2 + 1 + 1); // colour, yes/no, pets bars; 2 scales; age
    // Choice counts: 40 each of 120, in the hidden table.
    expect(html).toMatch(/<caption>Answers to Colour<\/caption>/);
    expect(html).toContain(
      '<th scope="row">&lt;script&gt;alert(1)&lt;/script&gt; &quot;&gt;&lt;img src=x onerror=alert(2)&gt; javascript:alert(3)</th><td>40</td><td>33.3%</td>',
    );
    expect(html).toContain('<th scope="row">5</th><td>24</td><td>20%</td>'); // rating 5: 24 of 120
    expect(html).toContain('<th scope="row">10</th><td>10</td><td>8.3%</td>'); // scale 10
    expect(html).toContain('<th scope="row">Yes</th><td>60</td><td>50%</td>');
    const ages = Array.from({ length: N }, (_, i) => 20 + (i % 50));
    const mean = Math.round((ages.reduce((a, b) => a + b, 0) / N) * 10_000) / 10_000;
    expect(html).toContain(`Lowest 20 · mean ${mean} · highest 69`);
    expect(html).toContain('90 answered of 120 · 30 skipped'); // pets: 3 of 4 answer
    expect(html).toContain('Latest answers');
    expect(html).toContain('Person 119');
    // A viewer sees no Publish, Close or Delete.
    expect(html).not.toMatch(/>(Publish|Close|Reopen|Delete form)</);
  });

  it('the summary of a form that branches shows shown and answered counts', async () => {
    const viewer = await signedIn('viewer');
    const res0 = await callTool(app, token, 'create_form', {
      title: 'Branching',
      blocks: [
        { type: 'yes_no', title: 'Pets?', ref: 'pets' },
        { type: 'short_text', title: 'Which?', showIf: { block: 'pets', op: 'equals', value: true } },
      ],
    });
    expect(res0.status).toBe(200);
    const pid = res0.body.publicId;
    for (const v of [true, false, false])
      expect(
        (
          await callTool(app, token, 'create_response', {
            publicId: pid,
            answers: { pets: v, ...(v ? { [res0.body.blocks[1].id]: 'Cat' } : {}) },
          })
        ).status,
      ).toBe(200);
    const res = await get(`${base()}/${pid}`, viewer.cookie);
    expect(res.text).toContain('1 answered of 1 shown <span class="visually-hidden">this question</span> · 0 skipped');
    expect(res.text).toContain('3 answered of 3 shown');
  });

  it('the responses table pages by 50, newest first, and filters by one answer and days as list_responses does', async () => {
    const viewer = await signedIn('viewer');
    const page1 = await get(`${base()}/${form.publicId}/responses`, viewer.cookie);
    expect(page1.status).toBe(200);
    expectEscaped(page1.text);
    expect(page1.text).toContain('120 responses; 1 to 50 shown, newest first.');
    const rows = (html: string) => [...html.matchAll(/responses\/([0-9a-f-]{36})"/g)].map((m) => m[1]);
    const listed = async (args: Record<string, unknown>) => {
      const res = await callTool(app, token, 'list_responses', {
        publicId: form.publicId,
        order: 'newest',
        limit: 50,
        ...args,
      });
      expect(res.status).toBe(200);
      return { total: res.body.total, ids: res.body.responses.map((r: { id: string }) => r.id) };
    };
    expect(rows(page1.text)).toEqual((await listed({})).ids);
    const page3 = await get(`${base()}/${form.publicId}/responses?page=3`, viewer.cookie);
    expect(page3.text).toContain('101 to 120 shown');
    expect(rows(page3.text)).toEqual((await listed({ offset: 100 })).ids);
    expect(page3.text).toContain('>Newer<');
    expect(page3.text).not.toContain('>Older<');

    // Rating at least 4, between Jan 5 and Jan 20 (both days included).
    const [, colour, rating] = form.blocks;
    const q = `block=${rating.id}&op=gte&value=4&since=2026-01-05&until=2026-01-20`;
    const filtered = await get(`${base()}/${form.publicId}/responses?${q}`, viewer.cookie);
    expect(filtered.status).toBe(200);
    const want = await listed({
      where: { block: rating.id, op: 'gte', value: 4 },
      since: '2026-01-05T00:00:00.000Z',
      until: '2026-01-21T00:00:00.000Z',
    });
    expect(want.total).toBeGreaterThan(0);
    expect(filtered.text).toContain(`${want.total} responses match`);
    expect(rows(filtered.text)).toEqual(want.ids);
    // A choice by its label (the XSS one), as the tools take it.
    const byLabel = await get(
      `${base()}/${form.publicId}/responses?block=${colour.id}&op=equals&value=${encodeURIComponent(XSS)}`,
      viewer.cookie,
    );
    expect(byLabel.text).toContain('40 responses match');
    expectEscaped(byLabel.text);
    // A filter that does not fit: 400, the problem by its field.
    const bad = await get(`${base()}/${form.publicId}/responses?block=${colour.id}&op=gt&value=3`, viewer.cookie);
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('There is a problem');
    expect(bad.text).toContain('id="op-error"');
    const badDay = await get(`${base()}/${form.publicId}/responses?since=yesterday`, viewer.cookie);
    expect(badDay.status).toBe(400);
    expect(badDay.text).toContain('Enter the first day (From) as a date that exists, YYYY-MM-DD.');
    // The workspace's long reads all running (two downloads, say): a filtered table is refused as
    // a page, 429 with the tool's message and hint; an unfiltered one still answers.
    const held = [app.get(LongReads).take(ws.id), app.get(LongReads).take(ws.id)];
    try {
      const busy = await get(`${base()}/${form.publicId}/responses?${q}`, viewer.cookie);
      expect(busy.status).toBe(429);
      expect(busy.headers['retry-after']).toBe('2');
      expect(busy.headers['content-type']).toContain('text/html');
      expect(busy.text).toContain('Busy: try again shortly');
      expect(busy.text).toContain('Retry after 2 seconds');
      expect((await get(`${base()}/${form.publicId}/responses`, viewer.cookie)).status).toBe(200);
    } finally {
      for (const giveBack of held) giveBack();
    }
  });

  /** The options of a page's select, as [value, label]. */
  const optionsOf = (html: string, id: string) => {
    const select = new RegExp(`<select id="${id}"[^>]*>([\\s\\S]*?)</select>`).exec(html);
    expect(select).not.toBeNull();
    return [...select![1].matchAll(/<option value="([^"]*)"[^>]*>([^<]*)<\/option>/g)].map((m) => [m[1], m[2]]);
  };
  /** What a page shows in its error summary. */
  const problemsOf = (html: string) =>
    [...(/<div class="summary"[\s\S]*?<\/ul>/.exec(html)?.[0] ?? '').matchAll(/<a href="#(\w+)">([^<]*)<\/a>/g)].map(
      (m) => [m[1], m[2]],
    );

  it('an impossible day is a 400 page naming the field, on the page, the summary and the Download post (issue 34, 1.6)', async () => {
    const viewer = await signedIn('viewer');
    for (const [field, day, named] of [
      ['until', '2026-13-45', 'Enter the last day (To) as a date that exists, YYYY-MM-DD.'],
      ['until', '0000-00-00', 'Enter the last day (To) as a date that exists, YYYY-MM-DD.'],
      ['since', '2026-02-30', 'Enter the first day (From) as a date that exists, YYYY-MM-DD.'],
      ['since', '0000-01-01', 'Enter the first day (From) as a date that exists, YYYY-MM-DD.'],
    ]) {
      for (const path of ['/responses', '']) {
        const res = await get(`${base()}/${form.publicId}${path}?${field}=${day}`, viewer.cookie);
        expect(res.status).toBe(400);
        expect(res.headers['content-type']).toContain('text/html');
        expect(problemsOf(res.text)).toEqual([[field, named]]);
        expect(res.text).toContain(`id="${field}-error"`);
      }
      const dl = await post(`${base()}/${form.publicId}/download`, viewer, { format: 'csv', [field]: day });
      expect(dl.status).toBe(400);
      expect(dl.headers['content-type']).toContain('text/html');
      expect(problemsOf(dl.text)).toEqual([[field, named]]);
      expect(dl.text).not.toContain('role="status"'); // no count under a refused filter
    }
    // The last day a date can be: every response (no bound), as the first.
    const all = await get(`${base()}/${form.publicId}/responses?since=0001-01-01&until=9999-12-31`, viewer.cookie);
    expect(all.status).toBe(200);
    expect(all.text).toContain(`${N} responses match`);
    const backwards = await get(
      `${base()}/${form.publicId}/responses?since=2026-01-10&until=2026-01-09`,
      viewer.cookie,
    );
    expect(problemsOf(backwards.text)).toEqual([['until', 'The last day (To) is before the first day (From).']]);
  });

  it('filters by a hidden field on Responses and Summary, with the hidden field as a column (issue 34, 3.1)', async () => {
    const viewer = await signedIn('viewer');
    const page = await get(`${base()}/${form.publicId}/responses`, viewer.cookie);
    expect(page.text).toContain('<optgroup label="Hidden fields"><option value="hidden:source"');
    expect(page.text).toMatch(/<th>source<\/th><th><span class="visually-hidden">Actions/);
    expect(page.text).toContain('<div style="min-width:6rem;overflow-wrap:anywhere">newsletter</div>');
    const q = 'block=hidden%3Asource&op=equals&value=newsletter';
    const where = { hidden: 'source', op: 'equals', value: 'newsletter' };
    const res = await get(`${base()}/${form.publicId}/responses?${q}`, viewer.cookie);
    expect(res.status).toBe(200);
    const listed = await callTool(app, token, 'list_responses', {
      publicId: form.publicId,
      where,
      limit: 50,
      order: 'newest',
    });
    expect(listed.body.total).toBe(N / 2);
    expect(res.text).toContain(`${N / 2} responses match; 1 to 50 shown`);
    expect([...res.text.matchAll(/responses\/([0-9a-f-]{36})"/g)].map((m) => m[1])).toEqual(
      listed.body.responses.map((r: { id: string }) => r.id),
    );
    expect(optionsOf(res.text, 'op').map(([, label]) => label)).toContain('is given');
    // The Summary takes the same filter, as summarize_responses' where; the tabs keep it.
    const summary = await get(`${base()}/${form.publicId}?${q}`, viewer.cookie);
    expect(summary.status).toBe(200);
    expect(summary.text).toContain(`${N / 2} responses match, from 2026-01-01 06:00 UTC`);
    const seg = await callTool(app, token, 'summarize_responses', { publicId: form.publicId, where });
    const rated = seg.body.blocks.find((b: { blockId: string }) => b.blockId === form.blocks[2].id);
    const fives = rated.distribution.find((d: { value: number }) => d.value === 5).count;
    expect(fives).toBe(N / 10); // i odd and i % 5 = 4
    expect(summary.text).toContain(`<th scope="row">5</th><td>${fives}</td>`);
    expect(summary.text).toContain(`href="${base()}/${form.publicId}/responses?${q.replace(/&/g, '&amp;')}"`);
    expect(res.text).toContain(`href="${base()}/${form.publicId}?${q.replace(/&/g, '&amp;')}"`);
    // The Download of that filter: the hidden field's rows only.
    const dl = await post(`${base()}/${form.publicId}/download`, viewer, {
      format: 'ndjson',
      block: 'hidden:source',
      op: 'equals',
      value: 'newsletter',
    });
    expect(dl.status).toBe(303);
    const lines = (await request(app.getHttpServer()).get(dl.headers.location)).text.trim().split('\n');
    expect(lines).toHaveLength(N / 2);
    expect(lines.every((l) => JSON.parse(l).hidden.source === 'newsletter')).toBe(true);
    // Not a hidden field of this form: refused in words.
    const unknown = await get(
      `${base()}/${form.publicId}/responses?block=hidden%3Acampaign&op=answered`,
      viewer.cookie,
    );
    expect(unknown.status).toBe(400);
    expect(problemsOf(unknown.text)).toEqual([['block', 'Choose a question of this form.']]);
  });

  it('offers the conditions and values each question takes, and refuses in the page’s words (issue 34, 3.2)', async () => {
    const viewer = await signedIn('viewer');
    const [name, colour, rating, , , yes, pets] = form.blocks;
    const at = (q: string) => get(`${base()}/${form.publicId}/responses?${q}`, viewer.cookie);
    // A choice question: is, is not, answered; its value a select of its choices.
    const choice = await at(`block=${colour.id}&op=equals&value=Green`);
    expect(optionsOf(choice.text, 'op')).toEqual([
      ['equals', 'is'],
      ['not_equals', 'is not'],
      ['answered', 'is answered'],
      ['not_answered', 'is not answered'],
    ]);
    expect(optionsOf(choice.text, 'value').map(([v]) => v)).toEqual([
      expect.stringContaining('&lt;script'),
      'Green',
      'Blue',
    ]);
    expect(choice.text).toMatch(/<option value="Green" selected="">Green<\/option>/);
    // Checkboxes: includes; yes/no: a select of Yes and No; rating: more than and the like.
    expect(optionsOf((await at(`block=${pets.id}&op=contains&value=Dog`)).text, 'op').map(([, l]) => l)).toEqual([
      'includes',
      'does not include',
      'is answered',
      'is not answered',
    ]);
    expect(optionsOf((await at(`block=${yes.id}&op=equals&value=yes`)).text, 'value')).toEqual([
      ['yes', 'Yes'],
      ['no', 'No'],
    ]);
    expect(optionsOf((await at(`block=${rating.id}&op=gt&value=3`)).text, 'op').map(([o]) => o)).toContain('gt');
    // A choice ignores case, as typed before the select was there (or in an old link).
    const lower = await at(`block=${colour.id}&op=equals&value=gReEn`);
    expect(lower.status).toBe(200);
    expect(lower.text).toContain(`${N / 3} responses match`);
    const dogs = await at(`block=${pets.id}&op=contains&value=dog`);
    expect(dogs.status).toBe(200);
    // Refusals: in the page's words, in the error summary, and no count.
    for (const [q, field, says] of [
      [
        `block=${colour.id}&op=gt&value=3`,
        'op',
        '“Colour” takes these conditions: is, is not, is answered or is not answered. Choose one of them.',
      ],
      [`block=${colour.id}&op=equals&value=Purple`, 'value', 'Choose one of the choices of “Colour”:'],
      [`block=${rating.id}&op=gte&value=lots`, 'value', 'Enter a number for “Rating”.'],
      [`block=${yes.id}&op=equals&value=maybe`, 'value', 'Choose Yes or No for “Subscribe?”.'],
      [`block=${name.id}&op=equals&value=`, 'value', 'Enter the value to compare with.'],
      [`op=equals&value=Green`, 'value', 'Choose the question to compare this value with, or leave the value empty.'],
      [`block=nope&op=equals&value=1`, 'block', 'Choose a question of this form.'],
    ]) {
      const res = await at(q);
      expect(res.status).toBe(400);
      const problems = problemsOf(res.text);
      expect(problems).toHaveLength(1);
      expect(problems[0][0]).toBe(field);
      expect(problems[0][1]).toContain(says.replace(/"/g, '&quot;'));
      expect(res.text).not.toMatch(/does not fit|takes equals|op gt/); // not the API's words
      expect(res.text).not.toContain('role="status"');
      expect(res.text).not.toContain('Download CSV');
    }
    // The summary refuses the same way.
    const summary = await get(`${base()}/${form.publicId}?block=${colour.id}&op=gt&value=3`, viewer.cookie);
    expect(summary.status).toBe(400);
    expect(problemsOf(summary.text)[0][0]).toBe('op');
    expect(summary.text).not.toContain('<svg');
  });

  it('page 5,000 of a bulk-loaded form is reached through the seek table', async () => {
    const viewer = await signedIn('viewer');
    const big = await createForm(app, ws, { title: 'Big', status: 'published' });
    // 250,010 rows would be slow here; the page reading the last rows is the same path at any depth.
    const { bulkLoadResponses } = await import('../factories');
    await bulkLoadResponses(app, big, 5_010);
    const res = await get(`${base()}/${big.publicId}/responses?page=101`, viewer.cookie);
    expect(res.status).toBe(200);
    expect(res.text).toContain('5,001 to 5,010 shown');
    expect(res.text).toContain('Person 10<'); // newest first: the 10 oldest
    const summary = await get(`${base()}/${big.publicId}`, viewer.cookie);
    expect(summary.text).toContain('5,010 responses');
  });

  it('one response in full, with its hidden field, as text', async () => {
    const viewer = await signedIn('viewer');
    const { body } = await callTool(app, token, 'list_responses', { publicId: form.publicId, limit: 1 });
    const first = body.responses[0];
    const res = await get(`${base()}/${form.publicId}/responses/${first.id}`, viewer.cookie);
    expect(res.status).toBe(200);
    expectEscaped(res.text);
    expect(res.text).toContain('Response of 2026-01-01 00:00 UTC');
    expect(res.text).toContain('<dt style="font-weight:600">source</dt>');
    expect(res.text).not.toContain('Delete this response'); // a viewer
  });

  it('Download makes an export link of what the filter shows; the CSV matches list_responses', async () => {
    const viewer = await signedIn('viewer');
    const rating = form.blocks[2];
    const res = await post(`${base()}/${form.publicId}/download`, viewer, {
      format: 'csv',
      block: rating.id,
      op: 'lte',
      value: '2',
    });
    expect(res.status).toBe(303);
    expect(res.headers.location).toMatch(/^\/api\/v1\/exports\/download\?token=/);
    const csv = await request(app.getHttpServer())
      .get(res.headers.location)
      .buffer(true)
      .parse((r, done) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => done(null, Buffer.concat(chunks)));
      });
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toContain('text/csv');
    const records: string[][] = parse(csv.body as Buffer, { bom: true });
    const want = await callTool(app, token, 'list_responses', {
      publicId: form.publicId,
      limit: 200,
      where: { block: rating.id, op: 'lte', value: 2 },
    });
    expect(records.length - 1).toBe(want.body.total);
    expect(records.slice(1).map((r) => r[0])).toEqual(want.body.responses.map((r: { id: string }) => r.id));
    expect(records.slice(1).map((r) => r[4])).toEqual(
      want.body.responses.map((r: { answers: Record<string, number> }) => String(r.answers[rating.id])),
    );
    // NDJSON of everything.
    const all = await post(`${base()}/${form.publicId}/download`, viewer, { format: 'ndjson' });
    const nd = await request(app.getHttpServer()).get(all.headers.location);
    expect(nd.text.trim().split('\n')).toHaveLength(N);
    // Without the CSRF token: refused.
    const forged = await request(app.getHttpServer())
      .post(`${base()}/${form.publicId}/download`)
      .set('Cookie', viewer.cookie)
      .type('form')
      .send({ format: 'csv' });
    expect(forged.status).toBe(403);
  });

  it('Download\'s NDJSON keys answers by ref where blocks have one (as export_responses with answersBy "ref"), its CSV yes/no as Yes/No', async () => {
    const viewer = await signedIn('viewer');
    const made = await app.get(FormsService).create(ws.id, {
      title: 'Refs',
      blocks: [
        { type: 'short_text', title: 'Name', ref: 'name' },
        { type: 'yes_no', title: 'Subscribe?' },
      ],
    });
    const stored = await app.get(FormsService).get(ws.id, made.publicId);
    const [name, yes] = stored.blocks.map((b) => b.id);
    await callTool(app, token, 'publish_form', { publicId: made.publicId });
    const sent = await callTool(app, token, 'create_response', {
      publicId: made.publicId,
      answers: { [name]: 'Ada', [yes]: false },
    });
    expect(sent.status).toBe(200);
    const nd = await post(`${base()}/${made.publicId}/download`, viewer, { format: 'ndjson' });
    const line = JSON.parse((await request(app.getHttpServer()).get(nd.headers.location)).text.trim());
    expect(line.answers).toEqual({ name: 'Ada', [yes]: false });
    const csv = await post(`${base()}/${made.publicId}/download`, viewer, { format: 'csv' });
    const records: string[][] = parse((await request(app.getHttpServer()).get(csv.headers.location)).text, {
      bom: true,
    });
    expect(records).toEqual([
      ['id', 'submittedAt', 'Name', 'Subscribe?'],
      [line.id, line.submittedAt, 'Ada', 'No'],
    ]);
  });

  it('Share shows the public link with hidden fields and an embed snippet for the embed origins', async () => {
    const viewer = await signedIn('viewer');
    const res = await get(`${base()}/${form.publicId}/share?source=${encodeURIComponent(XSS)}`, viewer.cookie);
    expect(res.status).toBe(200);
    expectEscaped(res.text);
    const link = `http://formwork.test/f/${form.publicId}?${new URLSearchParams({ source: XSS })}`;
    expect(res.text).toContain(`value="${link.replace(/&/g, '&amp;')}"`);
    expect(res.text).toContain('No site may show this workspace');
    // The snippet escapes for the other site's HTML, and the page escapes it again.
    expect(res.text).toContain('&lt;iframe src=&quot;http://formwork.test/f/');
    expect(res.text).toContain('title=&quot;Survey &amp;lt;script&amp;gt;');
    await app.get(WorkspacesService).setEmbedOrigins(ws.slug, ['https://shop.example']);
    const after = await get(`${base()}/${form.publicId}/share`, viewer.cookie);
    expect(after.text).toContain('https://shop.example');
  });

  it('editors publish and close, admins delete, editors delete one response: asked first, audited, by the tools’ rules', async () => {
    const db = app.get(DataSource);
    const viewer = await signedIn('viewer');
    const editor = await signedIn('editor');
    const admin = await signedIn('admin');
    const f = await createForm(app, ws, { title: 'To publish' });
    const here = `${base()}/${f.publicId}`;
    // The editor sees Publish, not Delete; the viewer is refused the question and the post.
    const page = await get(here, editor.cookie);
    expect(page.text).toContain(`href="${here}/publish"`);
    expect(page.text).not.toContain(`href="${here}/delete"`);
    expect((await get(`${here}/publish`, viewer.cookie)).status).toBe(403);
    expect((await post(`${here}/publish`, viewer)).status).toBe(403);
    const ask = await get(`${here}/publish`, editor.cookie);
    expect(ask.status).toBe(200);
    expect(ask.text).toContain('Publish this form?');
    const done = await post(`${here}/publish`, editor);
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe(`${base()}?done=form-published`);
    expect((await get(done.headers.location, editor.cookie)).text).toContain('Form published: it takes responses.');
    expect((await post(`${here}/close`, editor)).status).toBe(303);
    const audit = await db.query(
      `SELECT action, actor_kind FROM audit_events WHERE workspace_id = $1 AND subject_id = $2 ORDER BY at`,
      [ws.id, f.publicId],
    );
    expect(audit).toEqual([
      { action: 'form.publish', actor_kind: 'session' },
      { action: 'form.close', actor_kind: 'session' },
    ]);
    expect((await post(`${here}/delete`, editor)).status).toBe(403);
    expect((await get(here, admin.cookie)).text).toContain(`href="${here}/delete"`);
    const del = await post(`${here}/delete`, admin);
    expect(del.headers.location).toBe(`${base()}?done=form-deleted`);
    expect((await get(here, admin.cookie)).status).toBe(404);

    // One response: the editor deletes it (a person's request to be forgotten).
    const { body } = await callTool(app, token, 'list_responses', {
      publicId: form.publicId,
      limit: 1,
      order: 'newest',
    });
    const rid = body.responses[0].id;
    const one = `${base()}/${form.publicId}/responses/${rid}`;
    expect((await get(one, editor.cookie)).text).toContain(`href="${one}/delete"`);
    expect((await get(`${one}/delete`, viewer.cookie)).status).toBe(403);
    expect((await get(`${one}/delete`, editor.cookie)).text).toContain('Delete this response?');
    const gone = await post(`${one}/delete`, editor);
    expect(gone.status).toBe(303);
    expect(gone.headers.location).toBe(`${base()}/${form.publicId}/responses?done=response-deleted`);
    expect((await callTool(app, token, 'get_response', { publicId: form.publicId, responseId: rid })).status).toBe(404);
    const [rec] = await db.query(
      `SELECT actor_kind, actor_user_id FROM audit_events WHERE action = 'response.delete' AND subject_id = $1`,
      [rid],
    );
    expect(rec).toEqual({ actor_kind: 'session', actor_user_id: editor.userId });
  });

  it('small wording: one response "matches"; only a published form shows a share link; "Close form" beside the title (issue 34, 3.8)', async () => {
    const viewer = await signedIn('viewer');
    const editor = await signedIn('editor');
    const [name] = form.blocks;
    const one = await get(
      `${base()}/${form.publicId}/responses?block=${name.id}&op=equals&value=${encodeURIComponent('Person 7')}`,
      viewer.cookie,
    );
    expect(one.status).toBe(200);
    expect(one.text).toMatch(/1 response matches; 1 to 1 shown/);
    const draft = await createForm(app, ws, { title: 'Unshared draft' });
    const closed = await createForm(app, ws, { title: 'Unshared closed', status: 'published' });
    await app.get(FormsService).setStatus(closed.id, 'closed');
    const list = await get(`${base()}?page=1`, viewer.cookie);
    for (const f of [draft, closed]) expect(list.text).not.toContain(`/f/${f.publicId}`);
    expect(list.text).toContain('None yet: publish the form to share it');
    expect(list.text).toContain('None: the form is closed');
    expect(list.text).toContain(`value="http://formwork.test/f/${form.publicId}"`);
    for (const [f, says] of [
      [draft, 'This form is a draft: it takes no responses'],
      [closed, 'This form is closed: it takes no responses'],
    ] as const) {
      const share = await get(`${base()}/${f.publicId}/share`, editor.cookie);
      expect(share.status).toBe(200);
      expect(share.text).toContain(says);
      expect(share.text).not.toContain(`/f/${f.publicId}`);
      expect(share.text).not.toContain('id="public-link"');
      expect(share.text).not.toContain('id="embed"');
      expect(share.text).toContain(`href="${base()}/${f.publicId}/publish"`); // the editor may publish it
    }
    // Closing is named for the form, not the page, and asked first with the same words.
    const open = await createForm(app, ws, { title: 'Open one', status: 'published' });
    const frame = await get(`${base()}/${open.publicId}`, editor.cookie);
    expect(frame.text).toContain(`<a href="${base()}/${open.publicId}/close">Close form</a>`);
    const ask = await get(`${base()}/${open.publicId}/close`, editor.cookie);
    expect(ask.text).toContain('Close this form?');
    expect(ask.text).toMatch(/<button type="submit" class="danger">Close form<\/button>/);
  });

  it('on Free, the write actions are refused as the tools refuse them (Pro needed)', async () => {
    const free = await createWorkspace(app, 'free');
    const editor = await signedIn('editor', free);
    const f = await createForm(app, free, { title: 'Free form' });
    const res = await post(`/settings/w/${free.slug}/forms/${f.publicId}/publish`, editor);
    expect(res.status).toBe(403);
    expect(res.text).toContain('needs a Pro workspace');
    expect((await app.get(FormsService).get(free.id, f.publicId)).status).toBe('draft');
    // Reading works on every plan.
    expect((await get(`/settings/w/${free.slug}/forms/${f.publicId}`, editor.cookie)).status).toBe(200);
  });
});

/**
 * Issue 47, item 6: a form's settings (opensAt, closesAt, maxResponses, access, spamProtection)
 * changed on the results pages: a POST with the session's CSRF token, editors only, through
 * update_form's rules (a refusal shown at its field in the page's words, nothing changed).
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { SessionsService } from '../../src/settings/sessions.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

describe('form settings on the results pages (issue 47)', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let token: string;
  let publicId: string;
  let block: string;

  const ok = async (name: string, body: object) => {
    const res = await callTool(app, token, name, body);
    if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  async function signedIn(role: 'viewer' | 'editor') {
    const email = `${role}-${randomBytes(4).toString('hex')}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(ws.slug, email, role);
    const cookie = await app.get(SessionsService).start(user.id);
    const { csrf } = (await app.get(SessionsService).find(cookie))!;
    return { cookie: `fw_session=${cookie}`, csrf };
  }
  const path = () => `/settings/w/${ws.slug}/forms/${publicId}/settings`;
  const post = (who: { cookie: string; csrf: string }, fields: Record<string, string>) =>
    request(app.getHttpServer())
      .post(path())
      .set('Cookie', who.cookie)
      .type('form')
      .send({ csrf: who.csrf, ...fields });
  const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
  const all = { opensAt: '', closesAt: '', maxResponses: '', access: 'public', spamProtection: 'auto' };

  beforeAll(async () => {
    app = await createTestApp({ WEBHOOKS_DELIVERY: 'false' });
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws)).token;
    const form = await ok('create_form', {
      title: 'Sign-up',
      blocks: [{ ref: 'name', type: 'short_text', title: 'Name' }],
      quotas: [{ name: 'Adas', limit: 5, when: { block: 'name', op: 'equals', value: 'Ada' } }],
    });
    publicId = form.publicId;
    block = form.blocks[0].id;
    await ok('publish_form', { publicId });
    for (const name of ['Ada', 'Bob', 'Cleo']) await ok('create_response', { publicId, answers: { [block]: name } });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('an editor changes every setting; get_form shows them; the page shows them back', async () => {
    const editor = await signedIn('editor');
    const page = await request(app.getHttpServer()).get(path()).set('Cookie', editor.cookie);
    expect(page.status).toBe(200);
    expect(text(page.text)).toContain('Who may answer, how many and when');
    expect(text(page.text)).toContain('update_form');
    expect(text(page.text)).toContain('Adas: at most 5');

    const saved = await post(editor, {
      opensAt: '2030-01-31 09:00',
      closesAt: '2030-02-28T10:00:00+01:00',
      maxResponses: '100',
      access: 'invite',
      spamProtection: 'always',
    });
    expect(saved.status).toBe(303);
    expect(saved.headers.location).toBe(`${path()}?done=form-settings-saved`);
    expect(await ok('get_form', { publicId })).toMatchObject({
      opensAt: '2030-01-31T09:00:00.000Z',
      closesAt: '2030-02-28T09:00:00.000Z',
      maxResponses: 100,
      access: 'invite',
      spamProtection: 'always',
    });
    const back = await request(app.getHttpServer())
      .get(`${path()}?done=form-settings-saved`)
      .set('Cookie', editor.cookie);
    expect(text(back.text)).toContain('Settings saved.');
    expect(back.text).toContain('value="2030-01-31 09:00"');
    expect(back.text).toContain('value="2030-02-28 09:00"');

    // Emptied: cleared.
    expect((await post(editor, all)).status).toBe(303);
    expect(await ok('get_form', { publicId })).toMatchObject({
      opensAt: null,
      closesAt: null,
      maxResponses: null,
      access: 'public',
      spamProtection: 'auto',
    });
  });

  it("refuses what update_form refuses, at the field in the page's words, and changes nothing", async () => {
    const editor = await signedIn('editor');
    const before = await ok('get_form', { publicId });

    const order = await post(editor, { ...all, opensAt: '2030-03-01 09:00', closesAt: '2030-02-01 09:00' });
    expect(order.status).toBe(400);
    expect(text(order.text)).toContain('There is a problem');
    expect(text(order.text)).toContain(
      'Closes at: the closing time (2030-02-01T09:00:00.000Z) must be after the opening time (2030-03-01T09:00:00.000Z)',
    );
    expect(order.text).toMatch(/id="closesAt"[^>]*aria-invalid="true"|aria-invalid="true"[^>]*id="closesAt"/);
    // What was typed stays in the fields.
    expect(order.text).toContain('value="2030-03-01 09:00"');

    const cap = await post(editor, { ...all, maxResponses: '2' });
    expect(cap.status).toBe(400);
    expect(text(cap.text)).toContain('Most responses: must be at least 3, the responses stored');
    expect(text(cap.text)).toContain('tick the box below it to keep the limit and close the form now');
    expect(cap.text).not.toContain('GET /api/v1/tools');

    const bad = await post(editor, { ...all, opensAt: 'next monday', maxResponses: '0', access: 'everyone' });
    expect(bad.status).toBe(400);
    expect(text(bad.text)).toContain('There are 3 problems');
    expect(text(bad.text)).toContain('Opens at: enter a date and time such as 2030-01-31 09:00 (UTC)');
    expect(text(bad.text)).toContain('Most responses: enter a whole number of 1 or more');
    expect(text(bad.text)).toContain('Who may answer: choose one of the options');

    expect(await ok('get_form', { publicId })).toEqual(before);

    // A cap below the responses stored, with "close now": kept, and the form closes.
    const closing = await post(editor, { ...all, maxResponses: '2', closeNow: '1' });
    expect(closing.status).toBe(303);
    expect(await ok('get_form', { publicId })).toMatchObject({ maxResponses: 2, status: 'closed' });
  });

  it("needs the CSRF token and the editor role; another workspace's form is not found", async () => {
    const editor = await signedIn('editor');
    const forged = await request(app.getHttpServer())
      .post(path())
      .set('Cookie', editor.cookie)
      .type('form')
      .send({ ...all, csrf: 'forged', maxResponses: '50' });
    expect(forged.status).toBe(403);
    const viewer = await signedIn('viewer');
    expect((await request(app.getHttpServer()).get(path()).set('Cookie', viewer.cookie)).status).toBe(403);
    expect((await post(viewer, { ...all, maxResponses: '50' })).status).toBe(403);
    // The viewer's form pages show no Settings tab; the editor's do.
    const summary = (who: { cookie: string }) =>
      request(app.getHttpServer()).get(`/settings/w/${ws.slug}/forms/${publicId}`).set('Cookie', who.cookie);
    expect((await summary(viewer)).text).not.toContain(`${publicId}/settings"`);
    expect((await summary(editor)).text).toContain(`${publicId}/settings"`);
    expect((await ok('get_form', { publicId })).maxResponses).not.toBe(50);
    // A page drawn before another change: refused, not overwritten.
    const stale = await post(editor, { ...all, maxResponses: '50', version: '1' });
    expect(stale.status).toBe(400);
    expect(text(stale.text)).toContain('this update was made from version 1');
    expect((await ok('get_form', { publicId })).maxResponses).not.toBe(50);

    const other = await createWorkspace(app, 'pro');
    const foreign = await callTool(app, (await createToken(app, other)).token, 'create_form', { title: 'Theirs' });
    const res = await request(app.getHttpServer())
      .get(`/settings/w/${ws.slug}/forms/${foreign.body.publicId}/settings`)
      .set('Cookie', editor.cookie);
    expect(res.status).toBe(404);
  });
});

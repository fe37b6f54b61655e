/**
 * Invitations in Chromium (issue 47), with JavaScript on and off: an invite link opens the form
 * with its hidden values; page 1, Next (started), "Save and finish later"; another browser finishes
 * from the link to finish later (resumed, the invite kept); the invite link then says "Already
 * answered", and the form's plain address says it is by invitation only. axe-core on the pages
 * (JavaScript on); screenshots in test-results/.
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdirSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Browser, Page } from 'playwright-core';
import { createToken, createWorkspace } from '../factories';
import { axeProblems, launchChromium } from '../utils/browser';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

jest.setTimeout(180_000); // a browser on a shared, slow machine
const SHOTS = join(__dirname, '..', '..', 'test-results'); // git-ignored

describe.each([true, false])('invitations in Chromium (JavaScript on: %s)', (javaScript) => {
  let app: NestFastifyApplication;
  let browser: Browser;
  let base: string;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp();
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  async function look(page: Page, name: string) {
    if (!javaScript) return;
    expect(await axeProblems(page)).toEqual([]);
    await page.screenshot({ path: join(SHOTS, `form-invites-${name}.png`), fullPage: true });
  }

  it('answers an invite once: started, resumed in another browser, completed, then refused', async () => {
    const created = await callTool(app, token, 'create_form', {
      title: 'Customer panel',
      access: 'invite',
      hiddenFields: ['customer'],
      partialResponses: true,
      blocks: [
        { type: 'short_text', title: 'Your name', required: true },
        { type: 'page_break', title: 'Your visit' },
        { type: 'short_text', title: 'What went well?', required: true },
      ],
    });
    expect(created.status).toBe(200);
    const { publicId } = created.body;
    await callTool(app, token, 'publish_form', { publicId });
    const made = await callTool(app, token, 'create_invites', {
      publicId,
      invites: [{ hidden: { customer: 'c-42' }, email: 'ada@example.com' }],
    });
    const invite = new URL(made.body.invites[0].url);
    const options = { javaScriptEnabled: javaScript, viewport: { width: 1280, height: 900 } };

    const first = await browser.newContext(options);
    const page = await first.newPage();
    await page.goto(`${base}${invite.pathname}${invite.search}`);
    await page.getByLabel('Your name').fill('Ada Lovelace');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Page 2 of 2').waitFor();
    await page.getByRole('button', { name: 'Save and finish later' }).click();
    await page.getByRole('heading', { name: 'Your answers are saved' }).waitFor();
    const link = new URL(await page.getByLabel('Link to finish later').inputValue());
    const listed = await callTool(app, token, 'list_invites', { publicId });
    expect(listed.body.invites[0].state).toBe('started');

    // Another browser finishes from the link to finish later: the invite goes with the answers.
    const other = await browser.newContext(options);
    const page2 = await other.newPage();
    await page2.goto(`${base}${link.pathname}${link.search}`);
    await page2.getByText('Page 2 of 2').waitFor();
    await look(page2, 'resumed');
    await page2.getByLabel('What went well?').fill('The coffee');
    await page2.getByRole('button', { name: 'Submit' }).click();
    await page2.getByRole('heading', { name: 'Thank you!' }).waitFor();

    const responses = await callTool(app, token, 'list_responses', { publicId });
    expect(responses.body.total).toBe(1);
    expect(responses.body.responses[0].hidden).toEqual({ customer: 'c-42' });
    expect((await callTool(app, token, 'list_invites', { publicId })).body.invites[0]).toMatchObject({
      state: 'completed',
      responseId: responses.body.responses[0].id,
    });

    // The invite link again, in either browser: answered once.
    for (const p of [page, page2]) {
      await p.goto(`${base}${invite.pathname}${invite.search}`);
      await p.getByRole('heading', { name: 'Already answered' }).waitFor();
    }
    await look(page2, 'already-answered');
    // Without an invite: by invitation only, no question shown.
    const stranger = await browser.newContext(options);
    const page3 = await stranger.newPage();
    await page3.goto(`${base}/f/${publicId}`);
    await page3.getByRole('heading', { name: 'This form is by invitation only' }).waitFor();
    expect(await page3.getByLabel('Your name').count()).toBe(0);
    await look(page3, 'invitation-only');
    for (const c of [first, other, stranger]) await c.close();
    expect((await callTool(app, token, 'list_responses', { publicId, status: 'all' })).body.total).toBe(1);
  });
});

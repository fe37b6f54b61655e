/**
 * Save and resume in Chromium (issue 36), with JavaScript on and off: answer page 1, Next, close
 * the browser (its cookies kept, as a browser keeps them), open the form again and land on page 2
 * with page 1's answers; "Save and finish later" gives a link that finishes the form in another
 * browser; the old link then says the response was submitted. axe-core on the pages (JavaScript
 * on: axe runs in the page); screenshots at desktop and phone widths in test-results/.
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdirSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Browser, Page } from 'playwright-core';
import { SessionsService } from '../../src/settings/sessions.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { axeProblems, launchChromium } from '../utils/browser';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

jest.setTimeout(180_000); // a browser on a shared, slow machine
const SHOTS = join(__dirname, '..', '..', 'test-results'); // git-ignored

describe.each([true, false])('save and resume in Chromium (JavaScript on: %s)', (javaScript) => {
  let app: NestFastifyApplication;
  let browser: Browser;
  let base: string;
  let token: string;
  let ws: TestWorkspace;

  beforeAll(async () => {
    app = await createTestApp();
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  /** axe (JavaScript on only: it runs in the page) and screenshots at 1280 and 390 px, nothing wider than the phone. */
  async function look(page: Page, name: string) {
    if (!javaScript) return;
    expect(await axeProblems(page)).toEqual([]);
    await page.screenshot({ path: join(SHOTS, `respondent-resume-${name}-desktop.png`), fullPage: true });
    await page.setViewportSize({ width: 390, height: 800 });
    expect(await page.evaluate('document.documentElement.scrollWidth <= 390')).toBe(true);
    await page.screenshot({ path: join(SHOTS, `respondent-resume-${name}-390.png`), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  it('resumes on page 2 after the browser is closed, finishes from the link in another browser, and the old link then says it was submitted', async () => {
    const created = await callTool(app, token, 'create_form', {
      title: 'Club membership',
      description: 'Three short pages.',
      hiddenFields: ['source'],
      partialResponses: true,
      blocks: [
        { type: 'short_text', title: 'Your name', required: true },
        { type: 'multiple_choice', title: 'Plan', required: true, choices: ['Basic', 'Family'] },
        { type: 'page_break', title: 'About you' },
        { type: 'short_text', title: 'City', required: true },
        { type: 'page_break', title: 'Last page' },
        { type: 'yes_no', title: 'Do you agree to the rules?', required: true },
      ],
    });
    expect(created.status).toBe(200);
    const { publicId } = created.body;
    await callTool(app, token, 'publish_form', { publicId });
    const options = { javaScriptEnabled: javaScript, viewport: { width: 1280, height: 900 } };

    // Page 1, then Next; the browser is closed with its cookies kept.
    const first = await browser.newContext(options);
    let page = await first.newPage();
    await page.goto(`${base}/f/${publicId}?source=poster`);
    await page.getByText('Your answers are saved as you go on this device.').waitFor();
    await look(page, 'first-page');
    await page.getByLabel('Your name').fill('Ada Lovelace');
    await page.getByLabel('Family').check();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Page 2 of 3').waitFor();
    const kept = await first.storageState();
    await first.close();

    // The same browser opened again: page 2, and page 1's answers behind Back.
    const again = await browser.newContext({ ...options, storageState: kept });
    page = await again.newPage();
    await page.goto(`${base}/f/${publicId}`);
    await page.getByText('Page 2 of 3').waitFor();
    await page.getByText('Welcome back').waitFor();
    await look(page, 'welcome-back');
    await page.getByRole('button', { name: 'Back' }).click();
    await page.getByText('Page 1 of 3').waitFor();
    expect(await page.getByLabel('Your name').inputValue()).toBe('Ada Lovelace');
    expect(await page.getByLabel('Family').isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByLabel('City').fill('London');
    await page.getByRole('button', { name: 'Save and finish later' }).click();
    await page.getByRole('heading', { name: 'Your answers are saved' }).waitFor();
    await look(page, 'saved');
    const link = new URL(await page.getByLabel('Link to finish later').inputValue());

    // Another browser finishes from the link.
    const other = await browser.newContext(options);
    const page2 = await other.newPage();
    await page2.goto(`${base}${link.pathname}${link.search}`);
    await page2.getByText('Page 2 of 3').waitFor();
    expect(await page2.getByLabel('City').inputValue()).toBe('London');
    await page2.getByRole('button', { name: 'Next' }).click();
    await page2.getByText('Page 3 of 3').waitFor();
    await page2.getByLabel('Yes').check();
    await page2.getByRole('button', { name: 'Submit' }).click();
    await page2.getByRole('heading', { name: 'Thank you!' }).waitFor();
    await other.close();

    const list = await callTool(app, token, 'list_responses', { publicId });
    expect(list.body.total).toBe(1);
    const [name, plan, , city, , agree] = created.body.blocks.map((b: { id: string }) => b.id);
    expect(list.body.responses[0].answers).toEqual({
      [name]: 'Ada Lovelace',
      [plan]: 'Family',
      [city]: 'London',
      [agree]: true,
    });
    expect(list.body.responses[0].hidden).toEqual({ source: 'poster' });

    // The first browser's cookie, then the old link: submitted, nothing of the answers (the cookie is then forgotten).
    for (const url of [`${base}/f/${publicId}`, `${base}${link.pathname}${link.search}`]) {
      await page.goto(url);
      await page.getByRole('heading', { name: 'Already submitted' }).waitFor();
      expect(await page.content()).not.toContain('Ada Lovelace');
    }
    await look(page, 'already-submitted');
    await again.close();

    // Someone else stops on page 2; the owner's Summary: the counts and the drop-off, chart and table.
    const later = await browser.newContext(options);
    const page3 = await later.newPage();
    await page3.goto(`${base}/f/${publicId}`);
    await page3.getByLabel('Your name').fill('Grace');
    await page3.getByLabel('Basic').check();
    await page3.getByRole('button', { name: 'Next' }).click();
    await page3.getByText('Page 2 of 3').waitFor();
    await later.close();
    const owner = await browser.newContext(options);
    const email = `owner-${javaScript}@example.com`;
    const { user } = await app.get(WorkspacesService).addMember(ws.slug, email, 'viewer');
    const session = await app.get(SessionsService).start(user.id);
    await owner.addCookies([{ name: 'fw_session', value: session, url: base }]);
    const results = await owner.newPage();
    await results.goto(`${base}/settings/w/${ws.slug}/forms/${publicId}`);
    await results.getByText('1 completed · 1 in progress').waitFor();
    const table = results.getByRole('region', { name: 'Drop-off by page' });
    expect(await table.locator('tbody tr').allInnerTexts()).toEqual([
      expect.stringMatching(/^1\. First page\s+2\s+100%\s+1$/),
      expect.stringMatching(/^2\. About you\s+2\s+100%\s+1$/),
      expect.stringMatching(/^3\. Last page\s+1\s+50%\s+1$/),
    ]);
    await look(results, 'results-summary');
    await owner.close();
  });
});

/**
 * The newcomer's journey (issue 45, done-when): a job application of three pages, a required PDF
 * and optional images, answered in Chromium at 390 px with JavaScript on and off. On the way the
 * person picks a file over the limit and a text file renamed .pdf: each refusal is read on the page
 * in the page's words, naming the file (never an upload id or a MIME type), the other answers stay,
 * and a refused file is never kept. Then "Save and finish later", the link opened in another
 * browser, and the submission, holding the good files. Screenshots of every error in
 * test-results/ (git-ignored); axe-core on the page with errors (JavaScript on). Files on disk, the
 * embedded default's store.
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Browser, Page } from 'playwright-core';
import { createToken, createWorkspace } from '../factories';
import { axeProblems, launchChromium } from '../utils/browser';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

jest.setTimeout(120_000); // a browser on a shared, slow machine

const SHOTS = join(__dirname, '..', '..', 'test-results'); // git-ignored
const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(20_000, 0x42)]);
const BIG_PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(1024 * 1024 + 10_000, 0x42)]);
const FAKE_PDF = Buffer.from('Dear hiring team, this is a letter, not a PDF.\n'.repeat(40));
const PNG = Buffer.concat([
  Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex'),
  Buffer.alloc(3000, 7),
]);
/** What a person must never read on the page: an upload id, a MIME type, the tools' wording. */
const API_WORDS = /upl_|application\/|image\/|text\/plain|\bbytes are\b|undefined/;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe('the newcomer’s job application in Chromium at 390 px', () => {
  let app: NestFastifyApplication;
  let browser: Browser;
  let base: string;
  let dataDir: string;
  let token: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'formwork-journey-'));
    // The disk's upload URLs are on PUBLIC_URL, which the browser must reach: the address the app listens on.
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    app = await createTestApp({ DATA_DIR: dataDir, PUBLIC_URL: base });
    await app.listen(port, '127.0.0.1');
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it.each([true, false])('JavaScript %s', async (javaScript) => {
    const mode = javaScript ? 'js' : 'nojs';
    const created = await callTool(app, token, 'create_form', {
      title: 'Job application',
      description: 'Three short pages.',
      partialResponses: true,
      blocks: [
        { ref: 'name', type: 'short_text', title: 'Your name', required: true },
        { ref: 'email', type: 'email', title: 'Email', required: true },
        { ref: 'p2', type: 'page_break', title: 'Your application' },
        { ref: 'cv', type: 'file_upload', title: 'CV', required: true, accept: ['application/pdf'], maxSizeMb: 1 },
        { ref: 'role', type: 'multiple_choice', title: 'Role', required: true, choices: ['Engineer', 'Designer'] },
        {
          ref: 'work',
          type: 'file_upload',
          title: 'Examples of your work',
          accept: ['image/*'],
          maxFiles: 3,
          maxSizeMb: 1,
        },
        { ref: 'p3', type: 'page_break', title: 'Last page' },
        { ref: 'start', type: 'date', title: 'When could you start?' },
        { ref: 'agree', type: 'yes_no', title: 'May we keep your application for a year?', required: true },
      ],
    });
    expect(created.status).toBe(200);
    const { publicId } = created.body;
    const ids = Object.fromEntries(created.body.blocks.map((b: { ref: string; id: string }) => [b.ref, b.id]));
    await callTool(app, token, 'publish_form', { publicId });
    const options = { javaScriptEnabled: javaScript, viewport: { width: 390, height: 844 } };

    /** Nothing wider than the phone, no API words in the page's text, and a screenshot. */
    async function look(page: Page, name: string) {
      expect(await page.evaluate('document.documentElement.scrollWidth <= 390')).toBe(true);
      expect(await page.locator('main').innerText()).not.toMatch(API_WORDS);
      await page.screenshot({ path: join(SHOTS, `respondent-journey-${mode}-${name}-390.png`), fullPage: true });
    }
    const errorAt = (page: Page, block: string) => page.locator(`#e-${block}`);

    const first = await browser.newContext(options);
    const page = await first.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${base}/f/${publicId}`);
    await page.getByLabel('Your name').fill('Ada Lovelace');
    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Page 2 of 3').waitFor();
    expect(await page.locator(`#a-${ids.cv}`).textContent()).toBe('Accepted: PDF files. Up to 1 MB.');
    expect(await page.locator(`#a-${ids.work}`).textContent()).toBe(
      'Accepted: images. Up to 1 MB each; at most 3 files.',
    );
    await look(page, 'page-2');

    const cv = page.locator(`#f-${ids.cv}`);
    const big = { name: 'big_cv.pdf', mimeType: 'application/pdf', buffer: BIG_PDF };
    const fake = { name: 'fake_cv.pdf', mimeType: 'application/pdf', buffer: FAKE_PDF };
    const tooLarge =
      'The file “big_cv.pdf” is too large: this question takes files of at most 1 MB. Choose a smaller file.';
    const notPdf = 'The file “fake_cv.pdf” is not what its name says';
    if (javaScript) {
      // Refused before any byte is sent, then after they arrive: said at once, by the file.
      await page.getByLabel('Engineer').check();
      await cv.setInputFiles(big);
      await page.getByText(tooLarge).waitFor();
      await look(page, 'too-large');
      await cv.setInputFiles(fake);
      await page.getByText(notPdf).waitFor();
      expect(await page.locator('ul.files').first().innerText()).toContain('This question takes PDF files.');
      expect(await page.locator(`input[type=hidden][name="${ids.cv}"]`).count()).toBe(0); // not kept
      expect(await axeProblems(page)).toEqual([]);
      await look(page, 'not-a-pdf');
      await cv.setInputFiles({ name: 'cv.pdf', mimeType: 'application/pdf', buffer: PDF });
      await page.getByText('cv.pdf (sent)').waitFor();
      expect(await page.getByText(notPdf).count()).toBe(0); // the new file replaced the refused one's line
      await page
        .getByLabel('Examples of your work')
        .setInputFiles([{ name: 'bridge.png', mimeType: 'image/png', buffer: PNG }]);
      await page.getByText('bridge.png (sent)').waitFor();
    } else {
      // The form posts the file: over the limit, the same page again with the role kept (chosen after the CV).
      await cv.setInputFiles(big);
      await page.getByLabel('Engineer').check();
      await page.getByRole('button', { name: 'Next' }).click();
      await errorAt(page, ids.cv).waitFor();
      expect(await page.getByText('Page 2 of 3').count()).toBe(1);
      expect(await errorAt(page, ids.cv).innerText()).toContain(tooLarge);
      expect(await page.getByLabel('Engineer').isChecked()).toBe(true);
      await look(page, 'too-large');
      await cv.setInputFiles(fake);
      await page.getByRole('button', { name: 'Next' }).click();
      await page.getByText(notPdf).first().waitFor();
      expect(await errorAt(page, ids.cv).innerText()).toContain(notPdf);
      expect(await page.getByLabel('Engineer').isChecked()).toBe(true);
      expect(await page.getByText('Keep fake_cv.pdf').count()).toBe(0); // never kept
      await look(page, 'not-a-pdf');
      await cv.setInputFiles({ name: 'cv.pdf', mimeType: 'application/pdf', buffer: PDF });
      await page
        .getByLabel('Examples of your work')
        .setInputFiles([{ name: 'bridge.png', mimeType: 'image/png', buffer: PNG }]);
    }
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Page 3 of 3').waitFor();

    // Save and finish later; the link finishes in another browser, the files kept on the way.
    await page.getByRole('button', { name: 'Save and finish later' }).click();
    await page.getByRole('heading', { name: 'Your answers are saved' }).waitFor();
    const link = new URL(await page.getByLabel('Link to finish later').inputValue());
    await first.close();
    const other = await browser.newContext(options);
    const later = await other.newPage();
    later.setDefaultTimeout(15_000);
    await later.goto(`${base}${link.pathname}${link.search}`);
    await later.getByText('Welcome back').waitFor();
    await later.getByText('Page 3 of 3').waitFor();
    await later.getByRole('button', { name: 'Back' }).click();
    await later.getByText('Page 2 of 3').waitFor();
    expect(await later.getByLabel(/Keep cv\.pdf/).isChecked()).toBe(true);
    expect(await later.getByLabel(/Keep bridge\.png/).isChecked()).toBe(true);
    expect(await later.getByLabel('Engineer').isChecked()).toBe(true);
    await look(later, 'resumed');
    await later.getByRole('button', { name: 'Next' }).click();
    await later.getByText('Page 3 of 3').waitFor();
    // Submit without the required answer: the page's own words, then the answer.
    await later.getByRole('button', { name: 'Submit' }).click();
    await later.getByText('This question needs an answer.').first().waitFor();
    await look(later, 'missing-answer');
    await later.getByLabel('Yes').check();
    await later.getByRole('button', { name: 'Submit' }).click();
    await later.getByRole('heading', { name: 'Thank you!' }).waitFor();
    await other.close();

    const list = await callTool(app, token, 'list_responses', { publicId });
    expect(list.body.total).toBe(1);
    const answers = list.body.responses[0].answers;
    expect(answers[ids.name]).toBe('Ada Lovelace');
    expect(answers[ids.agree]).toBe(true);
    expect(answers[ids.cv].map((f: { name: string }) => f.name)).toEqual(['cv.pdf']);
    expect(answers[ids.work].map((f: { name: string }) => f.name)).toEqual(['bridge.png']);
  });
});

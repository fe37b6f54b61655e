/**
 * File questions on the respondent page in Chromium (issue 35, part P): a form with two
 * file_upload blocks on two pages, answered with JavaScript on (the browser PUTs the file straight
 * to the upload target) and off (the form posts multipart), one page with a file and one without;
 * each stored file is byte-identical. On disk (the embedded default), and on the S3-protocol server
 * on the PostgreSQL run. axe-core on the page; screenshots at desktop and phone widths.
 */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { FileStorage } from '../../src/storage/file-storage';
import { createToken, createWorkspace } from '../factories';
import { axeProblems, launchChromium } from '../utils/browser';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';
import { startS3, TestS3 } from '../utils/s3';

const onServer = process.env.FORMWORK_TEST_DATABASE_KIND === 'server';
const kinds = onServer ? (['disk', 's3'] as const) : (['disk'] as const);
const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(40_000, 0x42)]);
const PNG = Buffer.concat([
  Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex'),
  Buffer.alloc(5000, 7),
]);

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

describe.each(kinds)('respondent page files in Chromium, storage on %s', (kind) => {
  let app: NestFastifyApplication;
  let browser: Browser;
  let base: string;
  let dataDir: string;
  let s3: TestS3 | undefined;
  const results = join(__dirname, '..', '..', 'test-results'); // git-ignored

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'formwork-page-files-browser-'));
    s3 = kind === 's3' ? await startS3() : undefined;
    // The disk's upload URLs are on PUBLIC_URL, which the browser must reach: the address the app listens on.
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    app = await createTestApp({ DATA_DIR: dataDir, PUBLIC_URL: base, ...(s3?.env ?? {}) });
    await app.listen(port, '127.0.0.1');
    browser = await launchChromium();
    mkdirSync(results, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await s3?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** No serious or critical axe-core violation on the page. */
  async function axe(page: Page) {
    expect(await axeProblems(page)).toEqual([]);
  }

  async function stored(workspaceId: string, formId: string, uploadId: string): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const c of await app.get(FileStorage).read(`${workspaceId}/${formId}/${uploadId}`))
      chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  it.each([
    [true, 'first'],
    [false, 'second'],
  ] as const)(
    'JavaScript %s: a file on the %s page, none on the other; the file is stored and downloads byte-identical',
    async (javaScript, withFile) => {
      const ws = await createWorkspace(app, 'pro');
      const { token } = await createToken(app, ws, { role: 'admin' });
      const created = await callTool(app, token, 'create_form', {
        title: 'Claim',
        blocks: [
          { ref: 'receipt', type: 'file_upload', title: 'Receipt', accept: ['application/pdf'], maxSizeMb: 2 },
          { ref: 'p2', type: 'page_break', title: 'Photos' },
          { ref: 'photos', type: 'file_upload', title: 'Photos of the damage', accept: ['image/*'], maxFiles: 3 },
        ],
      });
      expect(created.status).toBe(200);
      const { publicId } = created.body;
      const [receipt, , photos] = created.body.blocks.map((b: { id: string }) => b.id);
      await callTool(app, token, 'publish_form', { publicId });

      const context = await browser.newContext({
        javaScriptEnabled: javaScript,
        viewport: { width: 1280, height: 900 },
      });
      const page = await context.newPage();
      await page.goto(`${base}/f/${publicId}`);
      const receiptInput = page.getByLabel('Receipt');
      expect(await receiptInput.getAttribute('type')).toBe('file');
      expect(await page.locator(`#a-${receipt}`).textContent()).toBe('Accepted: PDF files. Up to 2 MB.');
      if (withFile === 'first') {
        await receiptInput.setInputFiles({ name: 'receipt.pdf', mimeType: 'application/pdf', buffer: PDF });
        if (javaScript) await page.getByText('receipt.pdf (sent)').waitFor();
      }
      if (javaScript) {
        await axe(page);
        await page.screenshot({ path: join(results, `respondent-files-${kind}-desktop.png`), fullPage: true });
        await page.setViewportSize({ width: 390, height: 800 });
        expect(await page.evaluate('document.documentElement.scrollWidth <= 390')).toBe(true);
        await page.screenshot({ path: join(results, `respondent-files-${kind}-390.png`), fullPage: true });
      }
      await page.getByRole('button', { name: 'Next' }).click();
      await page.getByText('Page 2 of 2').waitFor();
      if (withFile === 'second')
        await page
          .getByLabel('Photos of the damage')
          .setInputFiles({ name: 'dent.png', mimeType: 'image/png', buffer: PNG });
      // Back shows the first page's file kept; Next again carries it.
      await page.getByRole('button', { name: 'Back' }).click();
      await page.getByText('Page 1 of 2').waitFor();
      if (withFile === 'first') expect(await page.getByLabel(/Keep receipt\.pdf/).isChecked()).toBe(true);
      await page.getByRole('button', { name: 'Next' }).click();
      await page.getByText('Page 2 of 2').waitFor();
      if (withFile === 'second') {
        await page
          .getByLabel('Photos of the damage')
          .setInputFiles({ name: 'dent.png', mimeType: 'image/png', buffer: PNG });
        if (javaScript) await page.getByText('dent.png (sent)').waitFor();
      }
      await page.getByRole('button', { name: 'Submit' }).click();
      await page.getByRole('heading', { name: 'Thank you!' }).waitFor();
      await context.close();

      const list = await callTool(app, token, 'list_responses', { publicId });
      expect(list.body.total).toBe(1);
      const answers = list.body.responses[0].answers as Record<string, unknown>;
      const [file, bytes] = withFile === 'first' ? [receipt, PDF] : [photos, PNG];
      expect(Object.keys(answers)).toEqual([file]);
      // (Without JavaScript the second page's file was chosen twice, before Back and after Next: the answer may name both.)
      const [answer] = answers[file] as Array<{ uploadId: string; url: string }>;
      const [held] = await app
        .get(DataSource)
        .query(
          'SELECT id, form_id AS "formId", response_id AS "responseId" FROM uploads WHERE block_id = $1 AND id = $2',
          [file, answer.uploadId],
        );
      expect(held.responseId).toBe(list.body.responses[0].id ?? list.body.responses[0].responseId);
      expect((await stored(ws.id, held.formId, held.id)).equals(bytes)).toBe(true);
      // And it downloads byte-identical through the answer's link, as an attachment (S3: by redirect).
      const download = await fetch(answer.url);
      expect(download.status).toBe(200);
      expect(download.headers.get('content-disposition')).toMatch(/^attachment/);
      expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
    },
  );
});

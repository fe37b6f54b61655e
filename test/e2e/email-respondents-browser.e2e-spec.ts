import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdirSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Browser, Page } from 'playwright-core';
import { createToken, createWorkspace } from '../factories';
import { axeProblems, launchChromium } from '../utils/browser';
import { waitUntil } from '../utils/cluster';
import { callTool } from '../utils/http';
import { TestSmtpServer } from '../utils/smtp';
import { createAppOn, isolatedDatabaseUrl } from '../utils/webhooks';

const RESULTS = join(__dirname, '..', '..', 'test-results'); // git-ignored

/**
 * "Email me the link" in Chromium, with JavaScript on and off (issue 48, item 5): a person answers
 * their email, saves to finish later, has the link mailed (the address answered filled in), reads
 * it from the SMTP server, and opens it in another browser with the answers there.
 */
describe('the link to finish later, emailed, in a real browser (Debian chromium)', () => {
  let app: NestFastifyApplication;
  let browser: Browser;
  let base: string;
  let smtp: TestSmtpServer;
  let drop: () => Promise<void>;
  let publicId: string;

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    smtp = await TestSmtpServer.start();
    const isolated = await isolatedDatabaseUrl('email_respondents_browser');
    drop = isolated.drop;
    app = await createAppOn(isolated.url, { SMTP_URL: smtp.url, MAIL_RETRY_BASE_MS: '100' });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchChromium();
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'admin' });
    const created = await callTool(app, token, 'create_form', {
      title: 'Grant application',
      partialResponses: true,
      blocks: [
        { ref: 'email', type: 'email', title: 'Your email' },
        { ref: 'next', type: 'page_break', title: 'Project' },
        { ref: 'project', type: 'long_text', title: 'Your project' },
      ],
    });
    publicId = created.body.publicId;
    await callTool(app, token, 'publish_form', { publicId });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await smtp?.down();
    await drop?.();
  }, 30_000);

  /** axe-core runs in the page: only where scripts run (the page is the same without them). */
  async function shot(page: Page, name: string, js: boolean) {
    if (js) expect({ page: name, problems: await axeProblems(page) }).toEqual({ page: name, problems: [] });
    await page.screenshot({ path: join(RESULTS, `resume-email-${name}.png`), fullPage: true });
  }

  it.each([
    ['on', true],
    ['off', false],
  ])(
    'JavaScript %s: saves, mails the link to the address answered, and the link opens the answers',
    async (js, on) => {
      const to = `grant-${js}@example.com`;
      const page = await (await browser.newContext({ javaScriptEnabled: on })).newPage();
      page.setDefaultTimeout(15_000);
      await page.goto(`${base}/f/${publicId}`);
      await page.getByLabel('Your email').fill(to);
      await page.getByRole('button', { name: 'Next' }).click();
      await page.getByLabel('Your project').fill(`A garden (${js})`);
      await page.getByRole('button', { name: 'Save and finish later' }).click();
      await page.getByText('Your answers are saved', { exact: false }).first().waitFor();
      expect(await page.getByLabel('Or email the link to yourself').inputValue()).toBe(to);

      await page.getByRole('button', { name: 'Email me the link' }).click();
      await page.getByText(`We are sending the link to ${to}`).waitFor();
      await shot(page, `sent-js-${js}`, on);

      await waitUntil(async () => smtp.to(to).length === 1, 20_000, 'the link arrives');
      const link = /http\S+\?resume=[\w-]+/.exec(smtp.to(to)[0].text!)![0].replace('http://formwork.test', base);
      const other = await (await browser.newContext({ javaScriptEnabled: on })).newPage();
      other.setDefaultTimeout(15_000);
      await other.goto(link);
      const confirm = other.getByRole('button', { name: /answers here|Open|Continue|Move/i });
      if (await confirm.count()) await confirm.first().click();
      await other.getByLabel('Your project').waitFor();
      expect(await other.getByLabel('Your project').inputValue()).toBe(`A garden (${js})`);
    },
    120_000,
  );
});

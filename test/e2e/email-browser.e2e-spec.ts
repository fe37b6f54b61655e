import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdirSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { OAuthService } from '../../src/oauth/oauth.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createForm, createToken, createWorkspace } from '../factories';
import { axeProblems, launchChromium } from '../utils/browser';
import { waitUntil } from '../utils/cluster';
import { callTool } from '../utils/http';
import { TestSmtpServer } from '../utils/smtp';
import { createAppOn, isolatedDatabaseUrl } from '../utils/webhooks';

const PASSWORD = 'correct horse battery staple';
const RESULTS = join(__dirname, '..', '..', 'test-results'); // git-ignored

/**
 * The Email settings page in Chromium: an admin chooses a notification, sees a
 * message the server refused (550) with its answer, and sends it again; axe-core finds no serious
 * violation, at a desktop width and on a phone.
 */
describe('the Email settings page in a real browser (Debian chromium)', () => {
  let app: NestFastifyApplication;
  let browser: Browser;
  let base: string;
  let smtp: TestSmtpServer;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    smtp = await TestSmtpServer.start();
    const isolated = await isolatedDatabaseUrl('email_browser');
    drop = isolated.drop;
    app = await createAppOn(isolated.url, { SMTP_URL: smtp.url, MAIL_RETRY_BASE_MS: '100' });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await smtp?.down();
    await drop?.();
  }, 30_000);

  async function shot(page: Page, name: string) {
    expect({ page: name, problems: await axeProblems(page) }).toEqual({ page: name, problems: [] });
    await page.screenshot({ path: join(RESULTS, `settings-${name}.png`), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(RESULTS, `settings-${name}-390.png`), fullPage: true });
    const overflow = await page.evaluate(() => Math.max(0, document.documentElement.scrollWidth - window.innerWidth));
    expect({ page: name, overflow }).toEqual({ page: name, overflow: 0 });
  }

  it('an admin chooses each response, sees a refused message with the server answer, and sends it again', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'admin' });
    const form = await createForm(app, ws, {
      title: 'Event sign-up',
      status: 'published',
      blocks: [{ type: 'short_text', title: 'Name' }],
    });
    const email = `admin-${ws.slug}@example.com`;
    await app.get(WorkspacesService).addMember(ws.slug, email, 'admin');
    await app.get(OAuthService).setPassword(email, PASSWORD);

    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${base}/settings/w/${ws.slug}/email`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`**/settings/w/${ws.slug}/email`);
    await page.getByLabel('Notify me of Event sign-up').selectOption('each');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForLoadState();
    expect(await page.content()).toContain('Your email notifications are saved.');
    expect(await page.getByLabel('Notify me of Event sign-up').inputValue()).toBe('each');

    smtp.script('550');
    const created = await callTool(app, token, 'create_response', {
      publicId: form.publicId,
      answers: { [form.blocks[0].id]: 'Ada' },
    });
    expect(created.status).toBe(200);
    const db = app.get(DataSource);
    await waitUntil(
      async () =>
        (await db.query(`SELECT status FROM email_outbox WHERE response_id = $1`, [created.body.id]))[0]?.status ===
        'failed',
      20_000,
      'the refused message is recorded',
    );
    await page.goto(`${base}/settings/w/${ws.slug}/email`);
    expect(await page.getByRole('region', { name: 'Messages' }).textContent()).toContain('No such user here');
    await shot(page, 'email');
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole('button', { name: 'Send again' }).click();
    await page.waitForLoadState();
    await waitUntil(async () => smtp.to(email).length === 1, 20_000, 'the message sent again arrives');
  }, 90_000);
});

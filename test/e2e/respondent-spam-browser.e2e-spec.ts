import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdirSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Browser } from 'playwright-core';
import { DataSource } from 'typeorm';
import { createToken, createWorkspace } from '../factories';
import { launchChromium } from '../utils/browser';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

/** Issue 47, item 5: under spamProtection "always", a person in Chromium passes (the widget, served by Formwork, solves the challenge). */
describe('respondent spam defence in a real browser (Debian chromium)', () => {
  let app: NestFastifyApplication;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    app = await createTestApp({ SPAM_MIN_FILL_MS: '500' });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('a person answers a form that always asks for the challenge: stored as a response, no spam', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'admin' });
    const created = await callTool(app, token, 'create_form', {
      title: 'Newsletter',
      spamProtection: 'always',
      blocks: [{ type: 'short_text', title: 'Your email', required: true }],
    });
    const { publicId } = created.body;
    await callTool(app, token, 'publish_form', { publicId });

    const page = await browser.newPage();
    const refused: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused/i.test(m.text())) refused.push(m.text());
    });
    await page.goto(`${base}/f/${publicId}`);
    await page.getByLabel('Your email').fill('ada@example.com');
    // The widget fetches its challenge and solves it in its worker; its solution lands in the form's "altcha" field.
    await page.waitForFunction(
      () => {
        const f = document.querySelector('form') as HTMLFormElement;
        return !!new FormData(f).get('altcha');
      },
      undefined,
      { timeout: 30_000 },
    );
    const results = join(__dirname, '..', '..', 'test-results'); // git-ignored
    mkdirSync(results, { recursive: true });
    await page.screenshot({ path: join(results, 'respondent-spam-widget.png'), fullPage: true });
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByText('Thank you').first().waitFor();
    await page.screenshot({ path: join(results, 'respondent-spam-thanks.png'), fullPage: true });
    expect(refused).toEqual([]);

    const [row] = await app.get(DataSource).query(
      `SELECT (SELECT count(*)::int FROM responses r WHERE r.form_id = f.id) AS responses,
              (SELECT count(*)::int FROM spam_responses s WHERE s.form_id = f.id) AS spam
         FROM forms f WHERE f.public_id = $1`,
      [publicId],
    );
    expect(row).toEqual({ responses: 1, spam: 0 });
    await page.close();
  });

  it('without JavaScript, a person answers a form under auto (honeypot and time only): stored as a response', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'admin' });
    const created = await callTool(app, token, 'create_form', {
      title: 'Feedback',
      blocks: [{ type: 'short_text', title: 'Your comment', required: true }],
    });
    const { publicId } = created.body;
    await callTool(app, token, 'publish_form', { publicId });

    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(`${base}/f/${publicId}`);
    // The honeypot is there, but not for people: out of the tab order and hidden from assistive technology.
    expect(await page.locator('input[name=comments]').getAttribute('tabindex')).toBe('-1');
    await page.getByLabel('Your comment').fill('Quick and clear.');
    await page.waitForTimeout(600); // a person takes longer than SPAM_MIN_FILL_MS to answer
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByText('Thank you').first().waitFor();
    const [row] = await app.get(DataSource).query(
      `SELECT (SELECT count(*)::int FROM responses r WHERE r.form_id = f.id) AS responses,
              (SELECT count(*)::int FROM spam_responses s WHERE s.form_id = f.id) AS spam
         FROM forms f WHERE f.public_id = $1`,
      [publicId],
    );
    expect(row).toEqual({ responses: 1, spam: 0 });
    await context.close();
  });
});

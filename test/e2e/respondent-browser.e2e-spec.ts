import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdirSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Browser } from 'playwright-core';
import { createToken, createWorkspace } from '../factories';
import { launchChromium } from '../utils/browser';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

describe('respondent page in a real browser (Debian chromium)', () => {
  let app: NestFastifyApplication;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    app = await createTestApp();
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('shows the errors of an empty submission, then takes a filled one that the tools can read back', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'admin' });
    const created = await callTool(app, token, 'create_form', {
      title: 'Team lunch',
      blocks: [
        { type: 'short_text', title: 'Your name', required: true },
        { type: 'multiple_choice', title: 'Main course', required: true, choices: ['Pasta', 'Curry'] },
        { type: 'checkboxes', title: 'Extras', choices: ['Salad', 'Dessert'] },
        { type: 'rating', title: 'Hunger', max: 5 },
        { type: 'yes_no', title: 'Vegetarian' },
        { type: 'date', title: 'Day' },
      ],
    });
    const { publicId } = created.body;
    await callTool(app, token, 'publish_form', { publicId });

    const page = await browser.newPage();
    await page.goto(`${base}/f/${publicId}`);
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.waitForLoadState();
    // The error summary and one message per required field; the page kept its fields.
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('There are 2 problems');
    // The focus moved to the error summary (autofocus: the page's CSP allows no script), so the next Tab reaches its first link.
    expect(await page.evaluate('document.activeElement.id')).toBe('errors');
    const results = join(__dirname, '..', '..', 'test-results'); // git-ignored
    mkdirSync(results, { recursive: true });
    await page.screenshot({ path: join(results, 'respondent-errors.png'), fullPage: true });
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Your name. This question needs an answer.');
    expect(await page.getByLabel('Your name').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('.error').count()).toBe(2);

    await page.getByLabel('Your name').fill('Linus');
    await page.getByLabel('Curry').check();
    await page.getByLabel('Salad').check();
    await page.getByLabel('Dessert').check();
    await page.getByRole('radiogroup', { name: 'Hunger' }).getByLabel('4').check();
    await page.getByRole('radiogroup', { name: 'Vegetarian' }).getByLabel('No').check();
    await page.getByLabel('Day').fill('2026-12-03');
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByRole('heading', { name: 'Thank you!' }).waitFor();
    await page.close();

    const list = await callTool(app, token, 'list_responses', { publicId });
    expect(list.body.total).toBe(1);
    const blockIds = created.body.blocks.map((b: { id: string }) => b.id);
    expect(list.body.responses[0].answers).toEqual({
      [blockIds[0]]: 'Linus',
      [blockIds[1]]: 'Curry',
      [blockIds[2]]: ['Salad', 'Dessert'],
      [blockIds[3]]: 4,
      [blockIds[4]]: false,
      [blockIds[5]]: '2026-12-03',
    });
    const summary = await callTool(app, token, 'summarize_responses', { publicId });
    expect(summary.body.total).toBe(1);
    expect(summary.body.blocks[1].choices).toEqual([
      expect.objectContaining({ label: 'Pasta', count: 0 }),
      expect.objectContaining({ label: 'Curry', count: 1, share: 1 }),
    ]);
    expect(summary.body.blocks[3]).toMatchObject({ min: 4, max: 4, mean: 4 });
  });

  it('lays a 0-10 scale out in one row at desktop width and in even rows on a phone, with errors worded for people', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'admin' });
    const created = await callTool(app, token, 'create_form', {
      title: 'Party',
      blocks: [
        { type: 'linear_scale', title: 'How likely are you to come?', min: 0, max: 10, required: true },
        { type: 'number', title: 'How many guests?', max: 5 },
        { type: 'url', title: 'Your website' },
      ],
    });
    const { publicId } = created.body;
    await callTool(app, token, 'publish_form', { publicId });
    const results = join(__dirname, '..', '..', 'test-results'); // git-ignored
    mkdirSync(results, { recursive: true });

    for (const [width, rows] of [
      [1280, [11]],
      [390, [6, 5]],
    ] as const) {
      const page = await browser.newPage({ viewport: { width, height: 900 } });
      await page.goto(`${base}/f/${publicId}`);
      await page.getByLabel('How many guests?').fill('6');
      await page.getByLabel('Your website').fill('example.com');
      await page.getByRole('button', { name: 'Submit' }).click();
      await page.getByRole('alert').waitFor();
      const summary = (await page.getByRole('alert').textContent()) ?? '';
      expect(summary).toContain('How many guests? Enter a number no greater than 5.');
      expect(summary).toContain('Your website. Enter a web address starting with http:// or https://.');
      expect(summary).not.toMatch(/\?:|must be/);
      // The scale's 11 points: how many sit on each row, and that every cell has the same width.
      const boxes = await page
        .getByRole('radiogroup', { name: 'How likely are you to come?' })
        .locator('label')
        .evaluateAll((labels) =>
          labels.map((l) => l.getBoundingClientRect()).map((r) => ({ top: r.top, width: r.width })),
        );
      expect(boxes).toHaveLength(11);
      const perRow = [...new Set(boxes.map((b) => Math.round(b.top)))].map(
        (top) => boxes.filter((b) => Math.round(b.top) === top).length,
      );
      expect(perRow).toEqual(rows);
      expect(Math.max(...boxes.map((b) => b.width)) - Math.min(...boxes.map((b) => b.width))).toBeLessThan(1);
      await page.screenshot({ path: join(results, `respondent-scale-${width}.png`), fullPage: true });
      await page.close();
    }
  });
  it('walks a three-page form with a same-page condition, a jump to end and Back, with JavaScript off', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'admin' });
    const created = await callTool(app, token, 'create_form', {
      title: 'Summer party',
      hiddenFields: ['source'],
      blocks: [
        { ref: 'attend', type: 'multiple_choice', title: 'Are you coming?', required: true, choices: ['Yes', 'No'] },
        {
          type: 'short_text',
          title: 'What keeps you away?',
          required: true,
          showIf: { block: 'attend', op: 'equals', value: 'No' },
        },
        {
          type: 'page_break',
          title: 'Details',
          jumps: [{ if: { block: 'attend', op: 'equals', value: 'No' }, to: 'end' }],
        },
        { type: 'number', title: 'How many guests?', required: true, min: 0, max: 5 },
        { type: 'page_break', title: 'One more thing' },
        { type: 'linear_scale', title: 'How excited are you?', min: 1, max: 5, minLabel: 'Meh', maxLabel: 'Very' },
      ],
    });
    const { publicId } = created.body;
    await callTool(app, token, 'publish_form', { publicId });
    const results = join(__dirname, '..', '..', 'test-results'); // git-ignored
    mkdirSync(results, { recursive: true });
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 800, height: 900 } });
    const page = await context.newPage();
    const next = () => page.getByRole('button', { name: 'Next' }).click();

    // Yes: three pages, an error on page 2, Back and forward again.
    await page.goto(`${base}/f/${publicId}?source=newsletter&utm_medium=email`);
    expect(await page.title()).toBe('Page 1 of 3: Summer party');
    await page.screenshot({ path: join(results, 'respondent-pages-1.png'), fullPage: true });
    await page.getByLabel('Yes').check();
    await next();
    await page.getByRole('heading', { name: 'Details' }).waitFor();
    expect(await page.title()).toBe('Page 2 of 3: Summer party');
    await next();
    await page.getByRole('alert').waitFor();
    expect(await page.evaluate('document.activeElement.id')).toBe('errors');
    await page.screenshot({ path: join(results, 'respondent-pages-2-errors.png'), fullPage: true });
    await page.getByLabel('How many guests?').fill('2');
    await next();
    await page.getByRole('heading', { name: 'One more thing' }).waitFor();
    expect(await page.locator('#progress').textContent()).toBe('Page 3 of 3');
    const scale = page.getByRole('radiogroup', { name: 'How excited are you?' });
    expect(await scale.getAttribute('aria-describedby')).toMatch(/^l-/);
    await page.screenshot({ path: join(results, 'respondent-pages-3.png'), fullPage: true });
    await page.getByRole('button', { name: 'Back' }).click();
    await page.getByRole('heading', { name: 'Details' }).waitFor();
    expect(await page.getByLabel('How many guests?').inputValue()).toBe('2');
    await next();
    await scale.getByLabel('4').check();
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByRole('heading', { name: 'Thank you!' }).waitFor();

    // No: the question it shows appears on the same page first, then the jump ends the form.
    await page.goto(`${base}/f/${publicId}?source=poster`);
    await page.getByLabel('No').check();
    await next();
    await page.getByLabel('What keeps you away?').waitFor();
    expect(await page.getByRole('status').textContent()).toContain('added questions');
    expect(await page.title()).toBe('Page 1 of 1: Summer party');
    await page.screenshot({ path: join(results, 'respondent-pages-condition.png'), fullPage: true });
    await page.getByLabel('What keeps you away?').fill('Holiday');
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByRole('heading', { name: 'Thank you!' }).waitFor();
    await context.close();

    const list = await callTool(app, token, 'list_responses', { publicId, answersBy: 'ref' });
    expect(list.body.total).toBe(2);
    expect(list.body.responses.map((r: { hidden: unknown }) => r.hidden)).toEqual([
      { source: 'newsletter' },
      { source: 'poster' },
    ]);
    expect(list.body.responses[0].answers.attend).toBe('Yes');
    expect(list.body.responses[1].answers.attend).toBe('No');
  });
});

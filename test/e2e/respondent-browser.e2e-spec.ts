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
  it('with JavaScript off, a No that ends the form is sent by the Next it pressed (issue 34)', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'admin' });
    // The worked example of docs/tools.md.
    const created = await callTool(app, token, 'create_form', {
      title: 'Workshop feedback',
      blocks: [
        { ref: 'came', type: 'yes_no', title: 'Did you come to the workshop?', required: true },
        {
          type: 'page_break',
          title: 'About the workshop',
          jumps: [{ if: { block: 'came', op: 'equals', value: false }, to: 'end' }],
        },
        { ref: 'score', type: 'rating', title: 'How useful was it?', required: true },
      ],
    });
    const { publicId } = created.body;
    await callTool(app, token, 'publish_form', { publicId });
    const results = join(__dirname, '..', '..', 'test-results'); // git-ignored
    mkdirSync(results, { recursive: true });
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 800, height: 700 } });
    const page = await context.newPage();
    await page.goto(`${base}/f/${publicId}`);
    expect(await page.title()).toBe('Page 1 of 2: Workshop feedback');
    await page.getByLabel('No').check();
    await page.screenshot({ path: join(results, 'respondent-nojs-no.png'), fullPage: true });
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('heading', { name: 'Thank you!' }).waitFor();
    await page.screenshot({ path: join(results, 'respondent-nojs-no-sent.png'), fullPage: true });
    await context.close();
    const list = await callTool(app, token, 'list_responses', { publicId, answersBy: 'ref' });
    expect(list.body.responses.map((r: { answers: unknown }) => r.answers)).toEqual([{ came: false }]);
  });
  it('walks the same form with JavaScript on: a same-page question appears at once (focus stays, the change is announced), Next turns into Submit, Back included', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'admin' });
    const created = await callTool(app, token, 'create_form', {
      title: 'Summer party',
      hiddenFields: ['source'],
      blocks: [
        { ref: 'attend', type: 'multiple_choice', title: 'Are you coming?', required: true, choices: ['Yes', 'No'] },
        {
          ref: 'why_not',
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
        { ref: 'guests', type: 'number', title: 'How many guests?', required: true, min: 0, max: 5 },
        {
          ref: 'diet',
          type: 'long_text',
          title: 'Anything we should cook for them?',
          showIf: { block: 'guests', op: 'gt', value: 0 },
        },
        { type: 'page_break', title: 'One more thing' },
        { type: 'linear_scale', title: 'How excited are you?', min: 1, max: 5, minLabel: 'Meh', maxLabel: 'Very' },
      ],
    });
    const { publicId } = created.body;
    await callTool(app, token, 'publish_form', { publicId });
    const results = join(__dirname, '..', '..', 'test-results'); // git-ignored
    mkdirSync(results, { recursive: true });
    const context = await browser.newContext({ viewport: { width: 800, height: 900 } });
    const page = await context.newPage();
    // A script the CSP refused, or one that failed, shows up here.
    const problems: string[] = [];
    page.on('console', (m) => {
      // (A page with errors is answered with 400, which Chromium logs too.)
      if (m.type() === 'error' && !m.text().includes('status of 400')) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    const button = page.locator('button[name="_action"]').first();
    const announced = () => page.locator('#announce').textContent();
    const focused = () =>
      page.evaluate('document.activeElement.getAttribute("aria-label") ?? document.activeElement.id ?? ""');

    // No: "What keeps you away?" appears at once, below, without taking the focus; the button now submits.
    await page.goto(`${base}/f/${publicId}?source=newsletter`);
    expect(await page.title()).toBe('Page 1 of 3: Summer party');
    const whyNot = page.getByLabel('What keeps you away?');
    expect(await whyNot.isVisible()).toBe(false);
    expect(await button.textContent()).toBe('Next');
    await page.getByLabel('No').check();
    expect(await whyNot.isVisible()).toBe(true);
    expect(await page.evaluate('document.activeElement.value')).toBe(await page.getByLabel('No').getAttribute('value'));
    expect(await announced()).toBe(
      'A question was added below: What keeps you away? Your answers end the form on this page: the button now submits them.',
    );
    expect(await button.textContent()).toBe('Submit');
    // The page count follows: this page is now the last (issue 34).
    expect(await page.locator('#progress').textContent()).toBe('Page 1 of 1');
    expect(await page.title()).toBe('Page 1 of 1: Summer party');
    await page.screenshot({ path: join(results, 'respondent-js-shown.png'), fullPage: true });
    // It comes next in tab order.
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.id')).toBe(`f-${created.body.blocks[1].id}`);
    // Yes again: it goes, and the button says Next.
    await page.getByLabel('Yes').check();
    expect(await whyNot.isVisible()).toBe(false);
    expect(await button.textContent()).toBe('Next');
    expect(await announced()).toBe(
      'A question was removed: What keeps you away? The form goes on after this page: the button now says Next.',
    );
    expect(await page.locator('#progress').textContent()).toBe('Page 1 of 3');
    expect(await page.title()).toBe('Page 1 of 3: Summer party');
    await page.screenshot({ path: join(results, 'respondent-js-hidden.png'), fullPage: true });

    // Page 2: a number above 0 shows the next question as it is typed; an error, Back, and on.
    await button.click();
    await page.getByRole('heading', { name: 'Details' }).waitFor();
    expect(await page.title()).toBe('Page 2 of 3: Summer party');
    const diet = page.getByLabel('Anything we should cook for them?');
    expect(await diet.isVisible()).toBe(false);
    await page.getByLabel('How many guests?').fill('2');
    expect(await diet.isVisible()).toBe(true);
    expect(await focused()).toBe(`f-${created.body.blocks[3].id}`);
    await diet.fill('Vegan, please');
    await page.getByLabel('How many guests?').fill('9');
    await button.click();
    // The server checks the page as before: 9 is over the maximum (so not a number the rule sees: the question is not shown).
    await page.getByRole('alert').waitFor();
    expect(await page.evaluate('document.activeElement.id')).toBe('errors');
    expect(await diet.isVisible()).toBe(false);
    await page.screenshot({ path: join(results, 'respondent-js-errors.png'), fullPage: true });
    await page.getByLabel('How many guests?').fill('2');
    expect(await diet.isVisible()).toBe(true);
    expect(await diet.inputValue()).toBe('Vegan, please');
    await button.click();
    await page.getByRole('heading', { name: 'One more thing' }).waitFor();
    expect(await page.locator('#progress').textContent()).toBe('Page 3 of 3');
    expect(await button.textContent()).toBe('Submit');
    await page.getByRole('button', { name: 'Back' }).click();
    await page.getByRole('heading', { name: 'Details' }).waitFor();
    expect(await diet.inputValue()).toBe('Vegan, please');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('radiogroup', { name: 'How excited are you?' }).getByLabel('4').check();
    await page.screenshot({ path: join(results, 'respondent-js-3.png'), fullPage: true });
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByRole('heading', { name: 'Thank you!' }).waitFor();

    // No, answered at once: one Submit stores it (the page is not shown again for a question already seen).
    await page.goto(`${base}/f/${publicId}?source=poster`);
    await page.getByLabel('No').check();
    await whyNot.fill('Holiday');
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByRole('heading', { name: 'Thank you!' }).waitFor();
    await context.close();
    expect(problems).toEqual([]);

    const list = await callTool(app, token, 'list_responses', { publicId, answersBy: 'ref' });
    expect(list.body.total).toBe(2);
    const byTime = list.body.responses as Array<{ answers: Record<string, unknown>; hidden: unknown }>;
    expect(byTime.map((r) => r.hidden)).toEqual([{ source: 'newsletter' }, { source: 'poster' }]);
    expect(byTime[0].answers).toMatchObject({ attend: 'Yes', guests: 2, diet: 'Vegan, please' });
    expect(byTime[1].answers).toEqual({ attend: 'No', why_not: 'Holiday' });
  });
});

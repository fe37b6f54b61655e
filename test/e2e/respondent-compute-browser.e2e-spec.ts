import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdirSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Browser } from 'playwright-core';
import { createToken, createWorkspace } from '../factories';
import { launchChromium } from '../utils/browser';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';
import { handScore, QUIZ } from '../utils/quiz-form';

/**
 * Issue 46's quiz in Chromium, with JavaScript on and off: the score the pages show and the ending
 * reached match a hand calculation, and so do the stored variables.
 */
describe('a quiz on the respondent page in a real browser (issue 46)', () => {
  let app: NestFastifyApplication;
  let browser: Browser;
  let base: string;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp();
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchChromium();
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  for (const javaScriptEnabled of [true, false]) {
    it(`JavaScript ${javaScriptEnabled ? 'on' : 'off'}: the score shown and the ending reached match a hand calculation`, async () => {
      // The pass ending without its redirect: the test stays on the page.
      const endings = QUIZ.endings.map(({ redirectUrl: _, ...e }) => e);
      const made = await callTool(app, token, 'create_form', { ...QUIZ, endings });
      const { publicId, blocks } = made.body as {
        publicId: string;
        blocks: Array<{ id: string; choices?: Array<{ id: string }> }>;
      };
      await callTool(app, token, 'publish_form', { publicId });
      const context = await browser.newContext({ javaScriptEnabled, viewport: { width: 800, height: 900 } });
      const page = await context.newPage();
      const results = join(__dirname, '../../test-results');
      mkdirSync(results, { recursive: true });
      const fill = async (picks: Array<0 | 1 | 2>) => {
        await page.goto(`${base}/f/${publicId}?name=${encodeURIComponent('<Ada>')}`);
        for (const [n, p] of picks.entries())
          await page.locator(`input[name="${blocks[n].id}"][value="${blocks[n].choices![p].id}"]`).check();
        await page.getByRole('button', { name: /Next|Submit/ }).click();
        await page.waitForLoadState();
      };

      // Six right, one near miss, three wrong: 13, below the pass mark.
      const low: Array<0 | 1 | 2> = [1, 1, 1, 1, 1, 1, 2, 0, 0, 0];
      await fill(low);
      const score = handScore(low);
      await page.getByText(`You scored ${score.score}: any comment?`).waitFor();
      await page.getByRole('button', { name: 'Submit' }).click();
      await page.waitForLoadState();
      expect(await page.locator('h1').textContent()).toBe('Not this time, <Ada>');
      expect(await page.getByRole('status').textContent()).toBe(`You scored ${score.score} of 20.`);
      await page.screenshot({ path: join(results, `quiz-fail-js-${javaScriptEnabled ? 'on' : 'off'}.png`) });

      // Eight right: 16, the jump to "pass" after the first page.
      const high: Array<0 | 1 | 2> = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0];
      await fill(high);
      expect(await page.locator('h1').textContent()).toBe('Passed!');
      expect(await page.getByRole('status').textContent()).toBe(
        `You scored ${handScore(high).score} of 20 (${handScore(high).correctCount} right).`,
      );
      await context.close();

      const list = await callTool(app, token, 'list_responses', { publicId });
      expect(list.body.responses.map((r: { variables: unknown; ending: string }) => [r.variables, r.ending])).toEqual(
        [low, high].map((p) => [
          { score: handScore(p).score, correctCount: handScore(p).correctCount },
          handScore(p).ending,
        ]),
      );
    });
  }

  for (const javaScriptEnabled of [true, false]) {
    it(`JavaScript ${javaScriptEnabled ? 'on' : 'off'}: a recall of a block above on the same page is ${javaScriptEnabled ? 'filled in as the person answers, as text' : 'empty'}; on the next page the server fills it in`, async () => {
      const made = await callTool(app, token, 'create_form', {
        title: 'Same page',
        blocks: [
          { ref: 'name', type: 'short_text', title: 'Your name' },
          { ref: 'colour', type: 'checkboxes', title: 'Colours', choices: ['Red', 'Green', 'Blue'] },
          { ref: 'why', type: 'long_text', title: 'Why {{colour}}, {{name}}?', description: 'Tell us, {{name}}.' },
          { type: 'page_break', title: 'Two' },
          { ref: 'last', type: 'short_text', title: 'Last words, {{name}}?' },
        ],
      });
      expect(made.status).toBe(200);
      const { publicId } = made.body;
      await callTool(app, token, 'publish_form', { publicId });
      const context = await browser.newContext({ javaScriptEnabled, viewport: { width: 800, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${base}/f/${publicId}`);
      const name = '<script>alert(1)</script>';
      await page.getByLabel('Your name').fill(name);
      await page.getByLabel('Green').check();
      await page.getByLabel('Blue').check();
      const title = page.locator('label', { hasText: /^Why/ });
      if (javaScriptEnabled) {
        await page.getByText(`Why Green, Blue, ${name}?`, { exact: true }).waitFor();
        await page.getByText(`Tell us, ${name}.`, { exact: true }).waitFor();
        await page.getByLabel('Your name').fill('Ada');
        await page.getByText('Why Green, Blue, Ada?', { exact: true }).waitFor();
        await page.getByLabel('Your name').fill(name);
      } else expect(await title.textContent()).toBe('Why , ?');
      expect(await page.locator('form script').count()).toBe(0);
      await page.screenshot({
        path: join(__dirname, '../../test-results', `recall-same-page-js-${javaScriptEnabled ? 'on' : 'off'}.png`),
      });
      await page.getByRole('button', { name: 'Next' }).click();
      await page.waitForLoadState();
      await page.getByText(`Last words, ${name}?`, { exact: true }).waitFor();
      expect(await page.locator('form script').count()).toBe(0);
      await context.close();
    });
  }
});

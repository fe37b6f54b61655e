import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { browserSuite } from '../utils/browser-suite';
import { callTool } from '../utils/http';

/**
 * Issue 47, item 3 in Chromium, JavaScript on and off: a respondent whose first page matches a
 * full quota is screened out there, to the quota's ending, and nothing is stored; one who does
 * not match goes on to the next page. A form at its cap shows the full page.
 */
describe('quotas and caps on the respondent page in a real browser (issue 47)', () => {
  const s = browserSuite();

  const stored = async (publicId: string) =>
    (
      await s.app
        .get(DataSource)
        .query('SELECT count(*)::int AS n FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1', [
          publicId,
        ])
    )[0].n as number;

  for (const javaScriptEnabled of [true, false]) {
    const js = javaScriptEnabled ? 'on' : 'off';
    it(`JavaScript ${js}: a full quota screens its match out at the first page, to its ending; others go on`, async () => {
      const made = await callTool(s.app, s.token, 'create_form', {
        title: 'Panel',
        blocks: [
          {
            ref: 'country',
            type: 'multiple_choice',
            title: 'Where do you live?',
            required: true,
            choices: ['France', 'Germany'],
          },
          { type: 'page_break', title: 'More' },
          { ref: 'why', type: 'short_text', title: 'What brings you here?' },
        ],
        // The first ending is where a form with endings ends unless a jump (or a quota) says otherwise.
        endings: [
          { ref: 'thanks', title: 'Thanks for your answers' },
          { ref: 'enough', title: 'We have enough answers from France', message: 'Thank you all the same.' },
        ],
        quotas: [
          {
            name: 'France',
            limit: 1,
            when: { block: 'country', op: 'equals', value: 'France' },
            onFull: 'ending:enough',
          },
        ],
        maxResponses: 2,
      });
      expect(made.status).toBe(200);
      const { publicId, blocks } = made.body as { publicId: string; blocks: Array<{ id: string }> };
      await callTool(s.app, s.token, 'publish_form', { publicId });
      expect(
        (await callTool(s.app, s.token, 'create_response', { publicId, answers: { [blocks[0].id]: 'France' } })).status,
      ).toBe(200);

      const context = await s.browser.newContext({ javaScriptEnabled, viewport: { width: 800, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${s.base}/f/${publicId}`);
      await page.getByLabel('France').check();
      await page.getByRole('button', { name: /Next/ }).click();
      await page.waitForLoadState();
      expect(await page.locator('h1').textContent()).toBe('We have enough answers from France');
      await page.screenshot({ path: join(s.results, `quota-screened-out-js-${js}.png`) });
      expect(await stored(publicId)).toBe(1);

      // Germany: the next page, then stored; the cap (2) is then reached and the page says it is full.
      await page.goto(`${s.base}/f/${publicId}`);
      await page.getByLabel('Germany').check();
      await page.getByRole('button', { name: /Next/ }).click();
      await page.getByLabel('What brings you here?').fill('Curiosity');
      await page.getByRole('button', { name: 'Submit' }).click();
      await page.waitForLoadState();
      expect(await page.locator('h1').textContent()).toBe('Thanks for your answers');
      expect(await stored(publicId)).toBe(2);
      await page.goto(`${s.base}/f/${publicId}`);
      expect(await page.locator('h1').textContent()).toBe('This form is full');
      await page.screenshot({ path: join(s.results, `cap-full-js-${js}.png`) });
      await context.close();
    });
  }
});

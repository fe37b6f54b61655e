import { join } from 'node:path';
import { axeProblems } from '../utils/browser';
import { browserSuite } from '../utils/browser-suite';
import { callTool } from '../utils/http';

const ROWS = ['Price', 'Speed', 'Support', 'Design', 'Docs'];
const COLUMNS = ['Poor', 'Fair', 'Good', 'Very good', 'Excellent'];

/**
 * The customer-feedback form of issue 50 (an NPS, a 5x5 matrix and a ranking, built with one
 * create_form call) answered in Chromium with JavaScript on and off, on a desktop and a phone:
 * the matrix is a grid on the desktop and one question per row at 390 px (CSS only, so without
 * script too), axe finds nothing, and the answers stored are the ones given.
 */
describe('the matrix in a real browser (Debian chromium)', () => {
  const s = browserSuite();

  it.each([
    [true, 1280],
    [false, 1280],
    [true, 390],
    [false, 390],
  ])(
    'answers the feedback form with JavaScript %p at %p px: axe clean, grid or one question per row',
    async (js, width) => {
      const created = await callTool(s.app, s.token, 'create_form', {
        title: 'Customer feedback',
        blocks: [
          { type: 'nps', title: 'How likely are you to recommend us?', ref: 'nps', required: true },
          { type: 'matrix', title: 'Rate us on', ref: 'grid', rows: ROWS, columns: COLUMNS, required: true },
          { type: 'ranking', title: 'Rank these', ref: 'rank', choices: ['Value', 'Reliability', 'Friendliness'] },
        ],
      });
      expect(created.status).toBe(200);
      const { publicId } = created.body;
      await callTool(s.app, s.token, 'publish_form', { publicId });
      const context = await s.browser.newContext({ javaScriptEnabled: js, viewport: { width, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${s.base}/f/${publicId}`);
      if (js) expect(await axeProblems(page)).toEqual([]);
      const row = (name: string) => page.getByRole('radiogroup', { name, exact: true });
      // A phone shows each option's column beside it (one question per row); a desktop a header above the grid.
      const header = page.locator('.matrix .mhead');
      expect(await header.isVisible()).toBe(width > 640);
      // (visually hidden on a desktop: a 1 px box, still the radio's name)
      const shown = await row('Price').getByText('Good', { exact: true }).boundingBox();
      expect(shown!.width > 2).toBe(width <= 640);
      const last = await row('Docs').getByRole('radio').last().boundingBox();
      expect(last!.x + last!.width).toBeLessThanOrEqual(width);
      await page
        .getByRole('radiogroup', { name: 'How likely are you to recommend us?' })
        .getByLabel('9', { exact: true })
        .check();
      // One row left out: refused in the page's words, the others kept.
      for (const [i, name] of ROWS.slice(0, 4).entries())
        await row(name).getByLabel(COLUMNS[i], { exact: true }).check();
      await page.getByRole('button', { name: 'Submit' }).click();
      await page.getByText('Answer every row.').first().waitFor();
      if (js) expect(await axeProblems(page)).toEqual([]);
      expect(await row('Support').getByLabel('Good', { exact: true }).isChecked()).toBe(true);
      await row('Docs').getByLabel('Excellent', { exact: true }).check();
      const place = (label: string, n: string) => page.getByLabel(label, { exact: true }).selectOption({ label: n });
      await place('Value', '2');
      await place('Reliability', '1');
      await place('Friendliness', '3');
      await page.screenshot({
        path: join(s.results, `survey-matrix-${js ? 'js' : 'nojs'}-${width}.png`),
        fullPage: true,
      });
      await page.getByRole('button', { name: 'Submit' }).click();
      await page.getByRole('heading', { name: 'Thank you!' }).waitFor();
      await context.close();
      const list = await callTool(s.app, s.token, 'list_responses', { publicId });
      expect(list.body.total).toBe(1);
      const [nps, grid, rank] = created.body.blocks.map((b: { id: string }) => b.id);
      expect(list.body.responses[0].answers).toEqual({
        [nps]: 9,
        [grid]: { Price: 'Poor', Speed: 'Fair', Support: 'Good', Design: 'Very good', Docs: 'Excellent' },
        [rank]: ['Reliability', 'Value', 'Friendliness'],
      });
    },
  );
});

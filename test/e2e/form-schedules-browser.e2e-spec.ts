import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { inWords } from '../../src/forms/schedule';
import { axeProblems } from '../utils/browser';
import { browserSuite } from '../utils/browser-suite';
import { callTool } from '../utils/http';

/**
 * Issue 47, item 1 in Chromium, JavaScript on and off: a scheduled form before opensAt (the page
 * says when it opens), during (it takes an answer) and after closesAt (the closed page). The clock
 * is "moved" by moving opens_at / closes_at in the database, whose clock the schedule goes by.
 */
describe('a scheduled form in a real browser (issue 47)', () => {
  const s = browserSuite();

  const db = () => s.app.get(DataSource);
  const stored = async (publicId: string) =>
    (
      await db().query(
        'SELECT array_agg(r.answers::text) AS a FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1',
        [publicId],
      )
    )[0].a as string[] | null;
  /** Moves a schedule time to a second before the database's now. */
  const movePast = (publicId: string, column: 'opens_at' | 'closes_at') =>
    db().query(
      `UPDATE forms SET ${column} = date_trunc('milliseconds', now()) - interval '1 second' WHERE public_id = $1 RETURNING ${column} AS at`,
      [publicId],
    );

  for (const javaScriptEnabled of [true, false]) {
    const js = javaScriptEnabled ? 'on' : 'off';
    it(`JavaScript ${js}: before opensAt it says when, during it takes an answer, after closesAt it is closed`, async () => {
      const opensAt = new Date(Math.ceil((Date.now() + 3_600_000) / 60_000) * 60_000);
      const made = await callTool(s.app, s.token, 'create_form', {
        title: 'Workshop sign-up',
        blocks: [{ type: 'short_text', title: 'Your name', required: true }],
        opensAt: opensAt.toISOString(),
        closesAt: new Date(opensAt.getTime() + 3_600_000).toISOString(),
      });
      expect(made.status).toBe(200);
      const { publicId } = made.body as { publicId: string };
      expect((await callTool(s.app, s.token, 'publish_form', { publicId })).status).toBe(200);

      const context = await s.browser.newContext({ javaScriptEnabled, viewport: { width: 800, height: 900 } });
      const page = await context.newPage();

      // Before: when it opens, and no field to answer.
      const before = await page.goto(`${s.base}/f/${publicId}`);
      expect(before?.status()).toBe(409);
      expect(await page.locator('h1').textContent()).toBe('This form is not open yet');
      expect(await page.locator('main').textContent()).toContain(`This form opens on ${inWords(opensAt)}.`);
      expect(await page.getByLabel('Your name').count()).toBe(0);
      if (javaScriptEnabled) expect(await axeProblems(page)).toEqual([]); // axe runs in the page's script
      await page.screenshot({ path: join(s.results, `schedule-before-js-${js}.png`) });

      // During: opens_at moved a second into the past; the page takes an answer.
      await movePast(publicId, 'opens_at');
      await page.goto(`${s.base}/f/${publicId}`);
      await page.getByLabel('Your name').fill('Ada');
      await page.screenshot({ path: join(s.results, `schedule-during-js-${js}.png`) });
      await page.getByRole('button', { name: 'Submit' }).click();
      await page.getByRole('heading', { name: 'Thank you!' }).waitFor();
      expect((await stored(publicId))?.join()).toContain('Ada');

      // After: closes_at moved into the past; the closed page with its time, and nothing more stored.
      const [[{ at }]] = await movePast(publicId, 'closes_at');
      const after = await page.goto(`${s.base}/f/${publicId}`);
      expect(after?.status()).toBe(409);
      expect(await page.locator('h1').textContent()).toBe('This form is closed');
      expect(await page.locator('main').textContent()).toContain(`This form closed on ${inWords(at as Date)}`);
      expect(await page.getByLabel('Your name').count()).toBe(0);
      if (javaScriptEnabled) expect(await axeProblems(page)).toEqual([]); // axe runs in the page's script
      await page.screenshot({ path: join(s.results, `schedule-after-js-${js}.png`) });
      expect(await stored(publicId)).toHaveLength(1);
      await context.close();
    }, 60_000);
  }
});

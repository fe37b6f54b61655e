import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { axeProblems } from '../utils/browser';
import { browserSuite } from '../utils/browser-suite';
import { callTool } from '../utils/http';

/**
 * Issue 51 in Chromium, JavaScript on and off: a form in English, French and Arabic answered in
 * French (chosen by ?lang=) and in Arabic (chosen by the browser's Accept-Language), each with the
 * page's own words in that language, Arabic right to left; the answers stored by choice id alike.
 */
describe('a form in three languages in a real browser (issue 51)', () => {
  const s = browserSuite();

  const stored = async (publicId: string) =>
    (await s.app
      .get(DataSource)
      .query(
        'SELECT r.answers FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1 ORDER BY r.submitted_at',
        [publicId],
      )) as Array<{ answers: Record<string, unknown> }>;

  for (const javaScriptEnabled of [true, false]) {
    const js = javaScriptEnabled ? 'on' : 'off';
    it(`JavaScript ${js}: answered in French by ?lang= and in Arabic by Accept-Language, in their words and direction`, async () => {
      const made = await callTool(s.app, s.token, 'create_form', {
        title: 'Team lunch',
        languages: ['en', 'fr', 'ar'],
        blocks: [
          { type: 'short_text', title: 'Your name', required: true },
          { type: 'multiple_choice', title: 'Main course', choices: ['Fish', 'Pasta'] },
        ],
      });
      const { publicId } = made.body as { publicId: string };
      const [name, dish] = made.body.blocks.map((b: { id: string }) => b.id);
      const [fish, pasta] = made.body.blocks[1].choices.map((c: { id: string }) => c.id);
      for (const [language, texts] of [
        [
          'fr',
          { title: 'Déjeuner d’équipe', name: 'Votre nom', dish: 'Plat principal', fish: 'Poisson', pasta: 'Pâtes' },
        ],
        ['ar', { title: 'غداء الفريق', name: 'اسمك', dish: 'الطبق الرئيسي', fish: 'سمك', pasta: 'معكرونة' }],
      ] as const) {
        const set = await callTool(s.app, s.token, 'set_translation', {
          publicId,
          language,
          texts: {
            title: texts.title,
            [`blocks/${name}/title`]: texts.name,
            [`blocks/${dish}/title`]: texts.dish,
            [`blocks/${dish}/choices/${fish}`]: texts.fish,
            [`blocks/${dish}/choices/${pasta}`]: texts.pasta,
          },
        });
        expect(set.body.missingTexts).toEqual([]);
      }
      await callTool(s.app, s.token, 'publish_form', { publicId });

      // French, by ?lang=: the page's words in French; a refusal in French; then sent.
      const fr = await s.browser.newContext({ javaScriptEnabled, viewport: { width: 800, height: 900 } });
      const page = await fr.newPage();
      await page.goto(`${s.base}/f/${publicId}?lang=fr`);
      expect(await page.getAttribute('html', 'lang')).toBe('fr');
      expect(await page.locator('h1').textContent()).toBe('Déjeuner d’équipe');
      await page.getByRole('button', { name: 'Envoyer' }).click();
      expect(await page.getByRole('alert').textContent()).toContain('Vos réponses comportent 1 problème');
      expect(await page.locator('main').textContent()).toContain('Cette question demande une réponse.');
      if (javaScriptEnabled) expect(await axeProblems(page)).toEqual([]);
      await page.getByLabel('Votre nom').fill('Amélie');
      await page.getByRole('radio', { name: 'Pâtes', exact: true }).check();
      await page.screenshot({ path: join(s.results, `languages-fr-js-${js}.png`), fullPage: true });
      await page.getByRole('button', { name: 'Envoyer' }).click();
      await page.getByRole('heading', { name: 'Merci !' }).waitFor();
      await fr.close();

      // Arabic, by the browser's language: right to left, the page's words in Arabic.
      const ar = await s.browser.newContext({
        javaScriptEnabled,
        locale: 'ar-EG',
        viewport: { width: 800, height: 900 },
      });
      const arPage = await ar.newPage();
      await arPage.goto(`${s.base}/f/${publicId}`);
      expect(await arPage.getAttribute('html', 'lang')).toBe('ar');
      expect(await arPage.getAttribute('html', 'dir')).toBe('rtl');
      expect(await arPage.locator('h1').textContent()).toBe('غداء الفريق');
      // Right to left: the heading's text starts at the right of the column.
      const box = await arPage.locator('h1').evaluate((h) => getComputedStyle(h).direction);
      expect(box).toBe('rtl');
      // Nothing spills sideways (the honeypot sits off-screen on the inline start, whichever side that is).
      expect(await arPage.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(800);
      if (javaScriptEnabled) expect(await axeProblems(arPage)).toEqual([]);
      await arPage.getByLabel('اسمك').fill('ليلى');
      await arPage.getByRole('radio', { name: 'سمك', exact: true }).check();
      await arPage.screenshot({ path: join(s.results, `languages-ar-js-${js}.png`), fullPage: true });
      await arPage.getByRole('button', { name: 'إرسال' }).click();
      await arPage.getByRole('heading', { name: 'شكرًا لك!' }).waitFor();
      await ar.close();

      // Stored by choice id whatever the language.
      expect((await stored(publicId)).map((r) => r.answers)).toEqual([
        { [name]: 'Amélie', [dish]: pasta },
        { [name]: 'ليلى', [dish]: fish },
      ]);
    }, 90_000);
  }
});

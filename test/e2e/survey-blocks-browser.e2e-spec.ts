import { join } from 'node:path';
import { axeProblems } from '../utils/browser';
import { browserSuite } from '../utils/browser-suite';
import { callTool } from '../utils/http';

/** The survey blocks (issue 50) answered in Chromium, with JavaScript on and off, on a desktop and a phone. */
describe('survey blocks in a real browser (Debian chromium)', () => {
  const s = browserSuite();

  it.each([
    [true, 1280],
    [false, 1280],
    [true, 390],
    [false, 390],
  ])('answers an nps with JavaScript %p at %p px: axe clean, the 0-10 points fit the width', async (js, width) => {
    const created = await callTool(s.app, s.token, 'create_form', {
      title: 'Customer feedback',
      blocks: [
        {
          type: 'nps',
          title: 'How likely are you to recommend us?',
          ref: 'nps',
          required: true,
          minLabel: 'Not at all likely',
          maxLabel: 'Extremely likely',
        },
        { type: 'long_text', title: 'What would you change?', showIf: { block: 'nps', op: 'lte', value: 6 } },
      ],
    });
    expect(created.status).toBe(200);
    const { publicId } = created.body;
    await callTool(s.app, s.token, 'publish_form', { publicId });
    const context = await s.browser.newContext({ javaScriptEnabled: js, viewport: { width, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${s.base}/f/${publicId}`);
    // axe runs inside the page: with JavaScript on (the markup is the same without).
    if (js) expect(await axeProblems(page)).toEqual([]);
    const group = page.getByRole('radiogroup', { name: 'How likely are you to recommend us?' });
    expect(await group.getByRole('radio').count()).toBe(11);
    // No sideways scrolling on a phone: the eleven points wrap within the page.
    const last = await group.getByRole('radio').last().boundingBox();
    expect(last!.x + last!.width).toBeLessThanOrEqual(width);
    await group.getByLabel('3', { exact: true }).check();
    if (!js) {
      // Without JavaScript, the server shows the follow-up the answer (a detractor's) calls for.
      await page.getByRole('button', { name: 'Submit' }).click();
      await page.getByText('Your answers added questions to this page.').waitFor();
    }
    await page.getByLabel('What would you change?').fill('Faster replies');
    await page.screenshot({ path: join(s.results, `survey-nps-${js ? 'js' : 'nojs'}-${width}.png`), fullPage: true });
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByRole('heading', { name: 'Thank you!' }).waitFor();
    await context.close();
    const list = await callTool(s.app, s.token, 'list_responses', { publicId });
    expect(list.body.total).toBe(1);
    expect(list.body.responses[0].answers).toEqual({
      [created.body.blocks[0].id]: 3,
      [created.body.blocks[1].id]: 'Faster replies',
    });
  });

  it.each([
    [true, 1280],
    [false, 390],
    [true, 390],
  ])('ranks with JavaScript %p at %p px: a place per option, a duplicate refused, axe clean', async (js, width) => {
    const created = await callTool(s.app, s.token, 'create_form', {
      title: 'What matters',
      blocks: [
        {
          type: 'ranking',
          title: 'Rank what matters',
          ref: 'rank',
          required: true,
          choices: ['Price', 'Speed', 'Support'],
        },
        { type: 'short_text', title: 'Why price?', showIf: { block: 'rank', choice: 'Price', op: 'lte', value: 1 } },
      ],
    });
    expect(created.status).toBe(200);
    const { publicId } = created.body;
    await callTool(s.app, s.token, 'publish_form', { publicId });
    const context = await s.browser.newContext({ javaScriptEnabled: js, viewport: { width, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${s.base}/f/${publicId}`);
    if (js) expect(await axeProblems(page)).toEqual([]);
    const place = (label: string, n: string) => page.getByLabel(label, { exact: true }).selectOption({ label: n });
    await place('Price', '1');
    await place('Speed', '1');
    await place('Support', '2');
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByText('Give each option its own place.').first().waitFor();
    await page.screenshot({
      path: join(s.results, `survey-ranking-error-${js ? 'js' : 'nojs'}-${width}.png`),
      fullPage: true,
    });
    if (js) expect(await axeProblems(page)).toEqual([]);
    await place('Speed', '3');
    await place('Support', '2');
    if (!js) {
      await page.getByRole('button', { name: 'Submit' }).click();
      await page.getByText('Your answers added questions to this page.').waitFor();
    }
    await page.getByLabel('Why price?').fill('Budget');
    await page.screenshot({
      path: join(s.results, `survey-ranking-${js ? 'js' : 'nojs'}-${width}.png`),
      fullPage: true,
    });
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByRole('heading', { name: 'Thank you!' }).waitFor();
    await context.close();
    const list = await callTool(s.app, s.token, 'list_responses', { publicId });
    expect(list.body.responses[0].answers).toEqual({
      [created.body.blocks[0].id]: ['Price', 'Support', 'Speed'],
      [created.body.blocks[1].id]: 'Budget',
    });
  });
});

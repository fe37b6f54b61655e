/** The results pages' test form and escaping check, shared by results.e2e-spec and results-browser.e2e-spec. */
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { FormsService } from '../../src/forms/forms.service';
import { ResponsesService } from '../../src/responses/responses.service';
import { TestWorkspace } from '../factories';

/** Markup and a script URL: every results page must show them as text. */
export const XSS = `<script>alert(1)</script> "><img src=x onerror=alert(2)> javascript:alert(3)`;

/** What a page holding XSS must not contain (the markup as markup), and must (it as text). */
export function expectEscaped(html: string) {
  expect(html).not.toContain('<script>alert');
  expect(html).not.toContain('<img src=x');
  expect(html).not.toMatch(/href="\s*javascript:/i);
  expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
}

/** The results pages' test form: every kind of chart, XSS in its title, a block title and a choice label. */
export async function resultsForm(app: NestFastifyApplication, ws: TestWorkspace, n: number) {
  const form = await app.get(FormsService).create(ws.id, {
    title: `Survey ${XSS}`,
    hiddenFields: ['source'],
    blocks: [
      { type: 'short_text', title: `Name ${XSS}` },
      { type: 'multiple_choice', title: 'Colour', choices: [XSS, 'Green', 'Blue'] },
      { type: 'rating', title: 'Rating', max: 5 },
      { type: 'linear_scale', title: 'Scale', min: 0, max: 10 },
      { type: 'number', title: 'Age' },
      { type: 'yes_no', title: 'Subscribe?' },
      { type: 'checkboxes', title: 'Pets', choices: ['Cat', 'Dog'] },
    ],
  });
  await app.get(FormsService).setStatus(form.id, 'published');
  const published = await app.get(FormsService).get(ws.id, form.publicId);
  const [name, colour, rating, scale, age, yes, pets] = form.blocks.map((b) => b.id);
  const answers = (i: number) => ({
    [name]: i === 0 ? XSS : `Person ${i}`,
    [colour]: [XSS, 'Green', 'Blue'][i % 3],
    [rating]: 1 + (i % 5),
    [scale]: i % 11,
    [age]: 20 + (i % 50),
    [yes]: i % 2 === 0,
    ...(i % 4 ? { [pets]: i % 3 ? ['Cat'] : ['Cat', 'Dog'] } : {}),
  });
  for (let i = 0; i < n; i++)
    await app.get(ResponsesService).create(published, answers(i), {
      source: 'import',
      submittedAt: new Date(Date.UTC(2026, 0, 1) + i * 6 * 3600_000),
      hidden: { source: i % 2 ? 'newsletter' : XSS },
    });
  return { form: await app.get(FormsService).get(ws.id, form.publicId), answers };
}

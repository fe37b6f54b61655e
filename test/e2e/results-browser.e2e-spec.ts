import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { parse } from 'csv-parse/sync';
import { mkdirSync, readFileSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Browser, Locator, Page } from 'playwright-core';
import { Role } from '../../src/common/access/roles';
import { FormRecord } from '../../src/forms/forms.service';
import { OAuthService } from '../../src/oauth/oauth.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { axeProblems, launchChromium } from '../utils/browser';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';
import { resultsForm, XSS } from './results.fixture';

jest.setTimeout(240_000); // a browser on a shared, slow machine
const PASSWORD = 'correct horse battery staple';
const SHOTS = join(__dirname, '..', '..', 'test-results'); // git-ignored

describe('results pages in a real browser (Debian chromium), with JavaScript on and off', () => {
  let app: NestFastifyApplication;
  let browser: Browser;
  let base: string;
  let ws: TestWorkspace;
  let other: FormRecord;
  let form: FormRecord;
  let token: string;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    app = await createTestApp();
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchChromium();
    ws = await createWorkspace(app, 'pro');
    ({ form } = await resultsForm(app, ws, 60));
    other = await createForm(app, await createWorkspace(app, 'pro'), { title: 'Theirs' });
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  /** What must never happen on a page: a dialog (script from the data ran), a CSP violation. */
  const problems: string[] = [];
  afterEach(() => expect(problems.splice(0)).toEqual([]));
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  async function signIn(role: Role, javaScript: boolean): Promise<Page> {
    const email = `${role}-${randomBytes(4).toString('hex')}@example.com`;
    await app.get(WorkspacesService).addMember(ws.slug, email, role);
    await app.get(OAuthService).setPassword(email, PASSWORD);
    const context = await browser.newContext({ javaScriptEnabled: javaScript, acceptDownloads: true });
    if (javaScript) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    const page = await context.newPage();
    // Nothing on these pages may run script from the data, nor break the CSP.
    page.on('dialog', (d) => {
      problems.push(`a dialog opened: ${d.message()}`);
      void d.dismiss();
    });
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
    });
    await page.goto(`${base}/settings/w/${ws.slug}/forms`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Forms', level: 1 }).waitFor();
    return page;
  }

  /** No serious or critical axe-core violation on the page. */
  async function axe(page: Page) {
    expect(await axeProblems(page)).toEqual([]);
  }

  /** The page shows the XSS strings as text, runs none of them, and (JS on) passes axe; screenshots at two widths. */
  async function check(page: Page, name: string, js: boolean, opts: { xss?: boolean; shots?: boolean } = {}) {
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    expect(await page.locator('a[href^="javascript:"]').count()).toBe(0);
    if (opts.xss !== false) expect(await page.locator('body').innerText()).toContain('<script>alert(1)</script>');
    if (js) await axe(page);
    if (opts.shots) {
      await page.screenshot({ path: join(SHOTS, `results-${name}-desktop.png`), fullPage: true });
      await onPhone(page, async () => {
        await page.screenshot({ path: join(SHOTS, `results-${name}-phone.png`), fullPage: true });
        expect({ name, ...(await overflow(page)) }).toEqual({ name, page: 0, regions: [] });
      });
    }
  }

  /** Runs `fn` with the page 390 px wide (a phone), then gives the page its width back. */
  async function onPhone(page: Page, fn: () => Promise<void>) {
    const size = page.viewportSize()!;
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await fn();
    } finally {
      await page.setViewportSize(size);
    }
  }

  /** How far the page scrolls sideways, and which scrolling regions (tables) have more than they show. */
  function overflow(page: Page) {
    return page.evaluate(() => ({
      page: Math.max(0, document.documentElement.scrollWidth - window.innerWidth),
      regions: Array.from(document.querySelectorAll('.scroll'))
        .filter((e) => e.scrollWidth > e.clientWidth)
        .map((e) => e.getAttribute('aria-label')),
    }));
  }

  /** Whether the element is wholly inside the 390 px wide viewport, left to right. */
  async function inView(locator: Locator) {
    const box = (await locator.boundingBox())!;
    return box.width > 0 && box.x >= 0 && box.x + box.width <= 390;
  }

  /** forms -> results -> responses -> one response -> filter -> download -> share, as one person. */
  async function walk(role: Role, js: boolean) {
    const shots = role === 'admin' && js;
    const page = await signIn(role, js);
    // Forms: the form, its count, its share link in a read-only field (Copy only with JavaScript).
    const row = page.locator('tr', { has: page.getByRole('link', { name: /^Survey/ }) });
    expect(await row.locator('td').nth(2).innerText()).toBe('60');
    const share = page.getByLabel(`Share link of ${form.title}`);
    expect(await share.inputValue()).toBe(`http://formwork.test/f/${form.publicId}`);
    expect(await share.getAttribute('readonly')).not.toBeNull();
    expect(await row.getByRole('button', { name: /Copy/ }).isVisible()).toBe(js);
    await check(page, 'forms', js, { shots });
    // On a phone each form is a card: its response count is on screen, named, nothing scrolls sideways.
    await onPhone(page, async () => {
      expect(await overflow(page)).toEqual({ page: 0, regions: [] });
      expect(await inView(row.locator('td').nth(2))).toBe(true);
      expect(await inView(share)).toBe(true);
      expect(
        await row
          .locator('td')
          .nth(2)
          .evaluate((td) => getComputedStyle(td, '::before').content),
      ).toBe('"Responses"');
    });

    // Summary.
    await page.getByRole('link', { name: /^Survey/ }).click();
    await page.getByRole('heading', { name: 'Summary' }).waitFor();
    expect(await page.locator('svg').count()).toBeGreaterThanOrEqual(9);
    expect(await page.getByRole('table', { name: 'Answers to Rating per value' }).count()).toBe(1);
    const actions = await page.getByRole('navigation', { name: 'Form actions' }).count();
    const links = actions ? await page.getByRole('navigation', { name: 'Form actions' }).innerText() : '';
    if (role === 'viewer') expect(actions).toBe(0);
    if (role === 'editor') expect(links).toMatch(/Close form/);
    expect(links.includes('Delete form')).toBe(role === 'admin');
    await check(page, 'summary', js, { shots });

    // Responses: newest first, 50 of 60.
    await page.getByRole('link', { name: 'Responses', exact: true }).click();
    await page.getByRole('heading', { name: 'Responses', level: 2 }).waitFor();
    expect(await page.getByRole('status').innerText()).toContain('60 responses; 1 to 50 shown');
    expect(await page.locator('tbody tr').count()).toBe(50);
    await check(page, 'responses', js, { shots, xss: true });
    await onPhone(page, async () => {
      expect(await overflow(page)).toEqual({ page: 0, regions: [] });
      expect(await inView(page.locator('tbody tr').first().getByRole('link', { name: /View/ }))).toBe(true);
    });
    await page.getByRole('link', { name: 'Older' }).click();
    expect(await page.locator('tbody tr').count()).toBe(10);
    // One response in full: the oldest, whose name and hidden field hold the XSS.
    await page.locator('tbody tr').last().getByRole('link', { name: /View/ }).click();
    await page.getByRole('heading', { name: /Response of 2026-01-01 00:00 UTC/ }).waitFor();
    expect(await page.getByText('Delete this response').count()).toBe(role === 'viewer' ? 0 : 1);
    await check(page, 'response', js, { shots });
    await page.getByRole('link', { name: 'Back to the responses' }).click();

    // Filter: rating at least 4, from Jan 3 to Jan 12.
    await page.getByLabel('Question').selectOption({ label: 'Rating' });
    await page.getByLabel('Condition').selectOption('gte');
    await page.getByLabel('Value').fill('4');
    await page.getByLabel('From (UTC)').fill('2026-01-03');
    await page.getByLabel('To (UTC, included)').fill('2026-01-12');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('Clear the filter').waitFor();
    const rating = form.blocks[2].id;
    const where = { block: rating, op: 'gte', value: 4 };
    const range = { since: '2026-01-03T00:00:00.000Z', until: '2026-01-13T00:00:00.000Z' };
    const listed = await callTool(app, token, 'list_responses', {
      publicId: form.publicId,
      limit: 200,
      where,
      ...range,
    });
    expect(listed.body.total).toBeGreaterThan(0);
    expect(await page.getByRole('status').innerText()).toContain(`${listed.body.total} responses match`);
    await check(page, 'filtered', js, { shots, xss: false });

    // Download the CSV of what the filter shows; compare it with list_responses.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download CSV' }).click(),
    ]);
    const records: string[][] = parse(readFileSync((await download.path())!), { bom: true });
    expect(records[0].slice(0, 2)).toEqual(['id', 'submittedAt']);
    expect(records.slice(1).map((r) => [r[0], r[1], r[4]])).toEqual(
      listed.body.responses.map((r: { id: string; submittedAt: string; answers: Record<string, number> }) => [
        r.id,
        r.submittedAt,
        String(r.answers[rating]),
      ]),
    );

    // Share: the link (hidden field filled), the embed snippet; Copy with JavaScript copies the field.
    await page.getByRole('link', { name: 'Share', exact: true }).click();
    await page.getByLabel('source').fill('news letter');
    await page.getByRole('button', { name: 'Update the link' }).click();
    const link = page.getByLabel('Public link');
    expect(await link.inputValue()).toBe(`http://formwork.test/f/${form.publicId}?source=news+letter`);
    expect(await page.getByLabel('Embed snippet').inputValue()).toContain('<iframe src="http://formwork.test/f/');
    if (js) {
      await page.getByRole('button', { name: 'Copy Public link' }).click();
      await page.getByRole('button', { name: 'Copied Public link' }).waitFor();
      expect(await page.evaluate('navigator.clipboard.readText()')).toBe(await link.inputValue());
    } else {
      expect(await page.locator('button[data-copy-field]').count()).toBe(2);
      expect(await page.locator('button[data-copy-field]').first().isVisible()).toBe(false);
    }
    await check(page, 'share', js, { shots });

    // Another workspace's form: 404.
    const res = await page.goto(`${base}/settings/w/${ws.slug}/forms/${other.publicId}`);
    expect(res!.status()).toBe(404);
    if (js) await axe(page);
    return page;
  }

  for (const js of [true, false])
    for (const role of ['viewer', 'editor', 'admin'] as const)
      it(`${role}, JavaScript ${js ? 'on' : 'off'}: forms → summary → responses → one → filter → download → share`, async () => {
        await walk(role, js);
      });

  it('an editor closes the form and deletes one response, each asked first; an admin is asked before deleting the form', async () => {
    const f = await createForm(app, ws, { title: `Close me ${XSS}`, status: 'published' });
    const page = await signIn('editor', true);
    await page.goto(`${base}/settings/w/${ws.slug}/forms/${f.publicId}`);
    await page.getByRole('link', { name: 'Close form', exact: true }).click();
    await page.getByRole('heading', { name: 'Close this form?' }).waitFor();
    await check(page, 'close-confirm', true, { shots: true });
    await page.getByRole('button', { name: 'Close form', exact: true }).click();
    await page.getByText('Form closed: it takes no more responses.').waitFor();
    await check(page, 'forms-notice', true, { xss: true });

    await page.goto(`${base}/settings/w/${ws.slug}/forms/${form.publicId}/responses`);
    await page.locator('tbody tr').first().getByRole('link', { name: /View/ }).click();
    await page.getByRole('link', { name: 'Delete this response' }).click();
    await page.getByRole('heading', { name: 'Delete this response?' }).waitFor();
    await check(page, 'response-delete-confirm', true, { xss: false, shots: true });
    await page.getByRole('button', { name: 'Delete response' }).click();
    await page.getByText('Response deleted.').waitFor();
    expect(await page.getByRole('status').last().innerText()).toContain('59 responses');

    const admin = await signIn('admin', false);
    await admin.goto(`${base}/settings/w/${ws.slug}/forms/${f.publicId}`);
    await admin.getByRole('link', { name: 'Delete form' }).click();
    await admin.getByRole('heading', { name: 'Delete this form?' }).waitFor();
    await admin.getByRole('link', { name: 'Cancel' }).click();
    await admin.getByRole('heading', { name: /^Close me/ }).waitFor();
  });

  for (const js of [true, false]) {
    it(`an editor changes a form's settings on its Settings tab, a refusal shown at its field (JavaScript ${js ? 'on' : 'off'}; issue 47)`, async () => {
      const f = await createForm(app, ws, { title: `Settings ${XSS}`, status: 'published' });
      const page = await signIn('editor', js);
      await page.goto(`${base}/settings/w/${ws.slug}/forms/${f.publicId}`);
      await page.getByRole('link', { name: 'Settings', exact: true }).click();
      await page.getByRole('heading', { name: 'Who may answer, how many and when' }).waitFor();
      await page.getByLabel('Opens at').fill('2030-03-01 09:00');
      await page.getByLabel('Closes at').fill('2030-02-01 09:00');
      await page.getByRole('button', { name: 'Save settings' }).click();
      await page.getByRole('heading', { name: 'There is a problem' }).waitFor();
      expect(await page.getByLabel('Closes at').getAttribute('aria-invalid')).toBe('true');
      await check(page, `settings-refused-js-${js ? 'on' : 'off'}`, js, { shots: true });

      await page.getByLabel('Closes at').fill('2030-04-01 09:00');
      await page.getByLabel('Most responses').fill('100');
      await page.getByLabel('Who may answer').selectOption('invite');
      await page.getByRole('button', { name: 'Save settings' }).click();
      await page.getByText('Settings saved.').waitFor();
      expect(await page.getByLabel('Most responses').inputValue()).toBe('100');
      await check(page, `settings-saved-js-${js ? 'on' : 'off'}`, js, { shots: js });
      expect((await callTool(app, token, 'get_form', { publicId: f.publicId })).body).toMatchObject({
        opensAt: '2030-03-01T09:00:00.000Z',
        closesAt: '2030-04-01T09:00:00.000Z',
        maxResponses: 100,
        access: 'invite',
      });
    });
  }

  it('the filter: conditions and value follow the question (JavaScript on), a mismatch is refused in words (off); a hidden field filters Responses and Summary', async () => {
    // How many match, as list_responses counts (an earlier test deletes a response).
    const matching = async (where: Record<string, unknown>) =>
      (await callTool(app, token, 'list_responses', { publicId: form.publicId, limit: 1, where })).body.total;
    const greens = await matching({ block: form.blocks[1].id, op: 'equals', value: 'Green' });
    const newsletters = await matching({ hidden: 'source', op: 'equals', value: 'newsletter' });
    for (const js of [true, false]) {
      const page = await signIn('viewer', js);
      const responses = `${base}/settings/w/${ws.slug}/forms/${form.publicId}/responses`;
      await page.goto(responses);
      const question = page.getByLabel('Question');
      const condition = page.getByLabel('Condition');
      const value = page.getByLabel('Value');
      const choiceOps = ['is', 'is not', 'is answered', 'is not answered'];
      await question.selectOption({ label: 'Colour' });
      if (js) {
        // The script: Colour's conditions, and its choices as a select; Rating back to a text field.
        expect(await condition.locator('option').allInnerTexts()).toEqual(choiceOps);
        expect(await value.evaluate((e) => e.tagName)).toBe('SELECT');
        expect(await value.locator('option').allInnerTexts()).toEqual([XSS, 'Green', 'Blue']);
        await question.selectOption({ label: 'Rating' });
        expect(await condition.locator('option').allInnerTexts()).toContain('is more than');
        expect(await value.evaluate((e) => e.tagName)).toBe('INPUT');
        await question.selectOption({ label: 'Colour' });
        await value.selectOption('Green');
        await page.getByRole('button', { name: 'Filter' }).click();
        await page.getByText('Clear the filter').waitFor();
        expect(await page.getByRole('status').innerText()).toContain(`${greens} responses match`);
        await check(page, 'filter-choice', js, { xss: false, shots: true });
      } else {
        // Without it: "is more than" on a choice is refused in the page's words, which then offers Colour's.
        await condition.selectOption('gt');
        await value.fill('3');
        await page.getByRole('button', { name: 'Filter' }).click();
        await page.getByText('There is a problem').waitFor();
        expect(await page.locator('#errors').innerText()).toContain(
          '“Colour” takes these conditions: is, is not, is answered or is not answered.',
        );
        expect(await page.getByText(/responses match/).count()).toBe(0);
        expect(await condition.locator('option').allInnerTexts()).toEqual(choiceOps);
        expect(await value.evaluate((e) => e.tagName)).toBe('SELECT');
        await page.goto(responses);
      }
      // A hidden field: its own group in Question, a column in the table.
      await question.selectOption({ label: 'source' });
      await condition.selectOption({ label: 'is' });
      await value.fill('newsletter');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.getByText('Clear the filter').waitFor();
      expect(await page.getByRole('status').innerText()).toContain(`${newsletters} responses match`);
      expect(await page.locator('thead th').allInnerTexts()).toContain('source');
      expect(await page.locator('tbody tr').first().innerText()).toContain('newsletter');
      await check(page, 'filter-hidden', js, { xss: false, shots: js });
      // The Summary tab keeps the filter, and counts what it shows.
      await page.getByRole('link', { name: 'Summary', exact: true }).click();
      await page.getByRole('heading', { name: 'Summary' }).waitFor();
      expect(await page.getByRole('status').innerText()).toContain(`${newsletters} responses match`);
      expect(await question.inputValue()).toBe('hidden:source');
      await check(page, 'summary-filtered', js, { xss: false, shots: js });
      await page.context().close();
    }
  });
});

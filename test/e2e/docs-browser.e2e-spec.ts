import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Browser } from 'playwright-core';
import { createForm, createToken, createWorkspace } from '../factories';
import { freePort } from '../utils/cluster';
import { launchChromium } from '../utils/browser';
import { createTestApp } from '../utils/create-test-app';

/** /docs (Swagger UI) as a newcomer uses it: under its Content-Security-Policy, authorize, try list_forms. */
describe('/docs in a real browser (Debian chromium)', () => {
  let app: NestFastifyApplication;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    // The document's server is PUBLIC_URL: make it this listener, so that "Try it out" reaches it.
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    app = await createTestApp({ PUBLIC_URL: base });
    await app.listen(port, '127.0.0.1');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('renders under its CSP with no violation, shows the Bearer header, and runs list_forms as given on every form', async () => {
    const ws = await createWorkspace(app, 'pro');
    const { token } = await createToken(app, ws, { role: 'viewer' });
    const draft = await createForm(app, ws, { title: 'Draft form' });
    const published = await createForm(app, ws, { title: 'Published form', status: 'published' });

    const page = await browser.newPage();
    // A step that never happens fails with its name, before jest's own timeout (60 s). 20 s, not 10:
    // under CI's parallel workers Chromium once took over 10 s to parse Swagger UI's bundle.
    page.setDefaultTimeout(20_000);
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    await page.exposeFunction('reportViolation', (v: string) => violations.push(v));
    // Runs in the page (a string: this project's TypeScript has no DOM types).
    await page.addInitScript(
      "document.addEventListener('securitypolicyviolation', (e) => window.reportViolation(e.violatedDirective + ' ' + e.blockedURI))",
    );
    const answer = await page.goto(`${base}/docs`);
    expect(answer?.headers()['content-security-policy']).toContain("script-src 'self'");

    await page.locator('.swagger-ui .info .title').getByText('Formwork tools API').waitFor();
    expect(await page.locator('.swagger-ui .info .description').textContent()).toContain(
      'Authorization: Bearer fw_...',
    );

    await page.getByRole('button', { name: 'Authorize' }).first().click();
    const dialog = page.locator('.modal-ux');
    expect(await dialog.textContent()).toContain('Workspace API token');
    // Beside the bearer token: OAuth through the built-in server, with its built-in client filled in.
    expect(await dialog.textContent()).toContain('/oauth/authorize');
    expect(
      await dialog
        .locator('input')
        .evaluateAll((inputs) => inputs.map((i) => (i as unknown as { value: string }).value)),
    ).toContain('formwork-api-docs');
    await dialog.locator('input').first().fill(token);
    await dialog.getByRole('button', { name: 'Apply credentials' }).click();
    await dialog.locator('.auth-btn-wrapper button.btn-done').first().click();

    await page.locator('.opblock-summary-path', { hasText: '/api/v1/tools/list_forms' }).click();
    const op = page.locator('.opblock.is-open');
    await op.getByRole('button', { name: 'Try it out' }).click();
    expect(JSON.parse(await op.locator('textarea.body-param__text').inputValue())).toEqual({});
    await op.getByRole('button', { name: 'Execute' }).click();
    const body = op.locator('.live-responses-table .response-col_description pre').first();
    await body.waitFor();
    const forms = JSON.parse((await body.textContent()) ?? '{}').forms as Array<{ publicId: string }>;
    expect(forms.map((f) => f.publicId).sort()).toEqual([draft.publicId, published.publicId].sort());
    expect(violations).toEqual([]);
    await page.close();
  });
});

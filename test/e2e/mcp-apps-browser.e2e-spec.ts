import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Browser, Frame, Locator, Page } from 'playwright-core';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { loadAppBridge } from '../utils/app-bridge';
import { axeProblems, launchChromium } from '../utils/browser';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';
import { APPLICATION_FORM, BRANCHING_FORM } from './apps.fixture';
import { QUIZ, quizAnswers } from '../utils/quiz-form';

/**
 * Issue 39 in Chromium: a minimal MCP Apps host. The page holds the view in a sandboxed iframe
 * (allow-scripts only: an opaque origin), its document the text of resources/read; the SDK's own
 * AppBridge (host side, run here in Node: the package is ESM and unbundled) talks to the view's
 * App over postMessage, which the page relays, and forwards the view's tools/call to Formwork
 * through a real MCP client of each revision, with the person's token. Publishing asks the
 * person: the host records the request and approves. Screenshots land in test-results/.
 */
const SHOTS = join(__dirname, '..', '..', 'test-results'); // git-ignored
const PREVIEW = 'ui://formwork/form-preview';
const RESULTS = 'ui://formwork/results';
const { AppBridge } = loadAppBridge();

const HOST_HTML = `<!doctype html><html lang="en"><head><title>Test host</title></head><body style="margin:0">
<iframe id="view" title="Formwork view" sandbox="allow-scripts" style="width:100%;height:1400px;border:0"></iframe>
<script>
const frame = document.getElementById('view');
window.addEventListener('message', (e) => { if (e.source === frame.contentWindow) window.toBridge(e.data); });
window.toView = (m) => frame.contentWindow.postMessage(m, '*');
</script></body></html>`;

type McpClient = Pick<Client, 'callTool' | 'readResource'>;

interface View {
  page: Page;
  frame: Frame;
  bridge: InstanceType<typeof AppBridge>;
  /** The tool calls the host asked the person about (publish_form), as approved. */
  asked: Array<{ name: string; arguments?: unknown }>;
  opened: string[];
  /** Settles when the view asked the host to open a link. */
  linkOpened: Promise<void>;
  requests: string[];
  /** Script errors of the page and the view. */
  errors: string[];
}

describe('MCP Apps views in Chromium through a test host (issue 39)', () => {
  let app: NestFastifyApplication;
  let base: string;
  let browser: Browser;
  let token: string;
  let otherWs: TestWorkspace;
  const clients: Record<string, McpClient> = {};
  const closers: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    app = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '1000', PUBLIC_URL: 'http://formwork.test' });
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    otherWs = await createWorkspace(app, 'pro');
    browser = await launchChromium();
    const url = new URL(`${base}/mcp`);
    const requestInit = { headers: { Authorization: `Bearer ${token}` } };
    const legacy = new ClientV1({ name: 'host-v1', version: '1' });
    await legacy.connect(new TransportV1(url, { requestInit }));
    const modern = new Client(
      { name: 'host-v2', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await modern.connect(new StreamableHTTPClientTransport(url, { requestInit }));
    clients['2025-11-25'] = legacy as unknown as McpClient;
    clients['2026-07-28'] = modern;
    closers.push(
      () => legacy.close(),
      () => modern.close(),
    );
  }, 60_000);
  afterAll(async () => {
    for (const close of closers) await close();
    await browser?.close();
    await app?.close();
  });

  /** The host opens a view: reads it, connects the bridge, loads the iframe, and hands it the tool's input and result. */
  async function openView(
    client: McpClient,
    uri: string,
    call: { arguments: Record<string, unknown>; result: CallToolResult },
    opts: { theme: 'light' | 'dark'; width: number },
  ): Promise<View> {
    const context = await browser.newContext({
      viewport: { width: opts.width, height: 1400 },
      colorScheme: opts.theme,
    });
    closers.push(() => context.close());
    const page = await context.newPage();
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.setContent(HOST_HTML);
    const { contents } = await client.readResource({ uri });
    const html = (contents[0] as { text: string }).text;
    const bridge = new AppBridge(
      null,
      { name: 'formwork-test-host', version: '1.0.0' },
      { openLinks: {}, serverTools: {} },
      { hostContext: { theme: opts.theme, displayMode: 'inline' } },
    );
    const view = { page, bridge, asked: [], opened: [], requests, errors } as unknown as View;
    bridge.oncalltool = async (params) => {
      // The host asks the person before a tool that changes data (publish_form); this one approves.
      if (params.name === 'publish_form') view.asked.push({ name: params.name, arguments: params.arguments });
      return (await client.callTool(params)) as CallToolResult;
    };
    let opened: () => void;
    view.linkOpened = new Promise<void>((resolve) => (opened = resolve));
    bridge.onopenlink = async ({ url }) => {
      view.opened.push(url);
      opened();
      return {};
    };
    const initialized = new Promise<void>((resolve) => (bridge.oninitialized = () => resolve()));
    const transport = {
      onmessage: undefined as undefined | ((m: unknown) => void),
      start: async () => {},
      close: async () => {},
      send: async (message: unknown) => {
        await page.evaluate((m) => (window as unknown as { toView(m: unknown): void }).toView(m), message);
      },
    };
    await page.exposeFunction('toBridge', (m: unknown) => transport.onmessage?.(m));
    await bridge.connect(transport as never);
    await page.evaluate((doc) => ((document.getElementById('view') as HTMLIFrameElement).srcdoc = doc), html);
    await initialized;
    await bridge.sendToolInput({ arguments: call.arguments });
    await bridge.sendToolResult(call.result);
    view.frame = page.frames().find((f) => f !== page.mainFrame())!;
    return view;
  }

  /** The words of the view's text drawn across two lines or more (a word broken mid-way). */
  function brokenWords(frame: Frame): Promise<string[]> {
    return frame.evaluate(() => {
      const out: string[] = [];
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (node.parentElement?.closest('script, style, option, [hidden]')) continue;
        for (const m of (node.textContent ?? '').matchAll(/\S+/g)) {
          const range = document.createRange();
          range.setStart(node, m.index!);
          range.setEnd(node, m.index! + m[0].length);
          if (range.getClientRects().length > 1) out.push(m[0]);
        }
      }
      return out;
    });
  }

  /**
   * A person's press on a control, from the keyboard (Space checks a radio, presses a button):
   * Playwright's mouse click never settles in the sandboxed srcdoc frame here.
   */
  async function press(control: Locator) {
    await control.focus();
    await control.press('Space');
  }

  async function checkView(view: View, name: string) {
    expect(await axeProblems(view.frame as unknown as Page)).toEqual([]);
    expect(view.errors).toEqual([]);
    // The sandboxed frame paints in a process of its own: two of its frames, and no full-page resize,
    // before the shot (a resize right before it shot blank frames).
    await view.frame.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
    await view.page.screenshot({ path: join(SHOTS, `mcp-app-${name}.png`) });
  }

  /** The view's CSP lets it reach nothing, Formwork included, and it asked nothing of the network itself. */
  async function expectNoNetwork(view: View) {
    const reached = await view.frame.evaluate(
      (url) =>
        fetch(url).then(
          () => 'reached',
          () => 'blocked',
        ),
      `${base}/healthz`,
    );
    expect(reached).toBe('blocked');
    expect(view.requests.filter((u) => u.startsWith(base))).toEqual([]);
  }

  it.each(['2025-11-25', '2026-07-28'])(
    'on %s: a branching form is previewed, the dry run follows the jump to the end, publish asks and publishes, the results show a response stored after it',
    async (revision) => {
      const client = clients[revision];
      const created = (await client.callTool({ name: 'create_form', arguments: BRANCHING_FORM })) as CallToolResult;
      const form = created.structuredContent as { publicId: string };
      const tag = revision.slice(0, 4);

      // The preview: a draft, the title as text, page 1.
      const preview = await openView(
        client,
        PREVIEW,
        { arguments: BRANCHING_FORM, result: created },
        { theme: 'light', width: 1280 },
      );
      const f = preview.frame;
      await f.getByRole('heading', { name: 'Team lunch <b>&amp;</b>' }).waitFor();
      await f.getByText('This form is a draft').waitFor();
      // "No": check_response says a jump ends the form here, and the answers would be taken.
      await press(f.getByLabel('No', { exact: true }));
      await f.getByText('A jump on these answers ends the form after this page.').waitFor();
      await press(f.getByRole('button', { name: 'Check answers' }));
      await f.getByText('These answers would be taken. Nothing was stored.').waitFor();
      await checkView(preview, `preview-${tag}-desktop`);
      // "Yes": page 2 follows; its hostile title and choice are text; an empty required answer is refused.
      await press(f.getByLabel('Yes', { exact: true }));
      await press(f.getByRole('button', { name: 'Next' }));
      await f.getByRole('heading', { name: 'Food' }).waitFor();
      await f.getByText('Dish <img src=x onerror=alert(1)> *').waitFor();
      await f.getByLabel('<i>Salad</i>').waitFor();
      expect(await f.locator('img, i, b').count()).toBe(0);
      await press(f.getByRole('button', { name: 'Check answers' }));
      await f.getByText('create_response would refuse these answers:').waitFor();
      await expectNoNetwork(preview);
      // Publish: the host asks (recorded, approved), then the form is published.
      await press(f.getByRole('button', { name: 'Publish' }));
      await f.getByText('Published. Share link:').waitFor();
      expect(preview.asked).toEqual([{ name: 'publish_form', arguments: { publicId: form.publicId } }]);
      expect((await callTool(app, token, 'get_form', { publicId: form.publicId })).body.status).toBe('published');
      // The results view shows a response stored after it.
      const stored = await callTool(app, token, 'create_response', {
        publicId: form.publicId,
        answers: { coming: true, dish: 'Pasta', notes: '<script>alert(1)</script>' },
      });
      expect(stored.status).toBe(200);
      const summary = (await client.callTool({
        name: 'summarize_responses',
        arguments: { publicId: form.publicId },
      })) as CallToolResult;
      const results = await openView(
        client,
        RESULTS,
        { arguments: { publicId: form.publicId }, result: summary },
        { theme: 'light', width: 1280 },
      );
      const r = results.frame;
      await r.getByRole('cell', { name: '<script>alert(1)</script>' }).waitFor();
      await r.getByRole('cell', { name: 'Yes', exact: true }).waitFor(); // yes/no in words, as the pages say it
      await r.getByText('1 response', { exact: true }).waitFor();
      await r.getByText('1 (100%)').first().waitFor();
      await checkView(results, `results-${tag}-desktop`);
      // The filter: only "<i>Salad</i>" answers, none so far.
      await r.getByLabel('Filter', { exact: true }).selectOption({ label: 'Dish <img src=x onerror=alert(1)>' });
      await r.getByLabel('is', { exact: true }).selectOption({ label: '<i>Salad</i>' });
      await press(r.getByRole('button', { name: 'Apply' }));
      await r.getByText('0 responses match the filter').waitFor();
      // Download: the host is asked to open export_responses' link.
      await press(r.getByRole('button', { name: 'Download CSV' }));
      await results.linkOpened;
      expect(results.opened[0]).toMatch(/^http:\/\/formwork\.test\/.+/);
      await expectNoNetwork(results);
    },
    120_000,
  );

  it('issues 45 and 49 at 390 px: the preview shows end labels and file limits and a required file is answered in the preview; the results show the funnel, in progress, numbers, whole words, one "Newest responses"', async () => {
    const client = clients['2026-07-28'];
    const phone = { theme: 'light' as const, width: 390 };
    const created = (await client.callTool({ name: 'create_form', arguments: APPLICATION_FORM })) as CallToolResult;
    expect(created.isError).toBeFalsy();
    const { publicId } = created.structuredContent as { publicId: string };

    const preview = await openView(client, PREVIEW, { arguments: APPLICATION_FORM, result: created }, phone);
    const f = preview.frame;
    await f.getByText('1: Poor, 5: Great').waitFor();
    await f.getByText('0: Not at all, 10: Certainly').waitFor();
    await f.getByLabel('Name *').fill('Ada');
    // Next goes on once the check of the name typed is back (until then it says the name is missing).
    const cv = f.getByRole('heading', { name: 'Your CV' });
    for (let tries = 0; !(await cv.isVisible()) && tries < 20; tries++) {
      await press(f.getByRole('button', { name: 'Next' }));
      await cv.waitFor({ timeout: 500 }).catch(() => undefined);
    }
    await cv.waitFor();
    await f.getByText('Accepted: PDF or images. Up to 5 MB each; at most 2 files.').waitFor();
    // Issue 49: the required file is answered in the preview from the start, so the check passes on the rest.
    await f.getByText('Required: answered in the preview, which sends no files.').waitFor();
    expect(await f.getByLabel('Files are chosen').isChecked()).toBe(true);
    await press(f.getByRole('button', { name: 'Check answers' }));
    await f.getByText('These answers would be taken (with the files marked as chosen). Nothing was stored.').waitFor();
    // Unmarked, the required file is what create_response would refuse.
    await press(f.getByLabel('Files are chosen'));
    await f.getByText('create_response would refuse these answers:').waitFor();
    await press(f.getByLabel('Files are chosen'));
    await f.getByText('These answers would be taken (with the files marked as chosen). Nothing was stored.').waitFor();
    expect(await brokenWords(f)).toEqual([]);
    expect(await f.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await checkView(preview, 'preview-files-phone');

    // Results: three completed (years 2, 5 and 11), two in progress, long words in the table.
    const form = {
      ...APPLICATION_FORM,
      title: 'Applications',
      blocks: APPLICATION_FORM.blocks.map((b) => ({ ...b, required: false })),
    };
    const results = ((await client.callTool({ name: 'create_form', arguments: form })) as CallToolResult)
      .structuredContent as { publicId: string };
    await callTool(app, token, 'publish_form', { publicId: results.publicId });
    for (const [name, years, stars] of [
      ['Internationalization', 2, 4],
      ['Incomprehensibilities', 5, 5],
      ['Bob', 11, 3],
    ] as const) {
      const res = await callTool(app, token, 'create_response', {
        publicId: results.publicId,
        answers: { name, years, stars, scale: 7 },
      });
      expect(res.status).toBe(200);
    }
    for (const name of ['Cleo Counterrevolutionary', 'Dan']) {
      const res = await callTool(app, token, 'create_response', {
        publicId: results.publicId,
        answers: { name },
        partial: true,
      });
      expect(res.status).toBe(200);
    }
    const summary = (await client.callTool({
      name: 'summarize_responses',
      arguments: { publicId: results.publicId },
    })) as CallToolResult;
    const view = await openView(client, RESULTS, { arguments: { publicId: results.publicId }, result: summary }, phone);
    const r = view.frame;
    await r.getByText('3 completed responses · 2 in progress').waitFor();
    await r.getByRole('heading', { name: 'Drop-off by page' }).waitFor();
    await r.getByText('Page 1').waitFor();
    await r.getByText('Mean 6 · min 2 · max 11').waitFor();
    await r.getByText('Mean 4 · min 3 · max 5').waitFor();
    await r.getByRole('heading', { name: 'In progress' }).waitFor();
    await r.getByRole('cell', { name: 'Cleo Counterrevolutionary' }).waitFor();
    expect(await r.getByText('Newest responses', { exact: true }).count()).toBe(1);
    expect(await r.getByRole('table', { name: 'Newest responses' }).count()).toBe(1);
    // No word is broken across lines (tables, headings, bars' labels): each word's text sits on one line box.
    const broken = await brokenWords(r);
    expect(broken).toEqual([]);
    expect(await r.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await checkView(view, 'results-issue45-phone');
    await r.getByRole('heading', { name: 'Newest responses' }).scrollIntoViewIfNeeded();
    await checkView(view, 'results-issue45-phone-tables');
    expect(publicId).toBeTruthy();
  }, 120_000);

  it('issue 46: the preview shows what the answers compute (score of the maximum, ending); the results show the endings reached and the variables', async () => {
    const client = clients['2026-07-28'];
    const created = (await client.callTool({ name: 'create_form', arguments: QUIZ })) as CallToolResult;
    expect(created.isError).toBeFalsy();
    const { publicId } = created.structuredContent as { publicId: string };
    const desktop = { theme: 'light' as const, width: 1280 };
    const preview = await openView(client, PREVIEW, { arguments: QUIZ, result: created }, desktop);
    const f = preview.frame;
    await f.getByRole('heading', { name: 'What these answers compute' }).waitFor();
    await f.getByText('score: 0 of 20').waitFor();
    await f.getByText('Ending: Not this time, {{hidden:name}} (fail). Endings: fail, pass.').waitFor();
    // Question 1 right (2 points), question 2 a near miss (1 point).
    await press(f.getByRole('group', { name: /^Question 1:/ }).getByLabel('1', { exact: true }));
    await press(f.getByRole('group', { name: /^Question 2:/ }).getByLabel('3', { exact: true }));
    await f.getByText('score: 3 of 20').waitFor();
    await f.getByText('correctCount: 1').waitFor();
    await f.getByRole('heading', { name: 'What these answers compute' }).scrollIntoViewIfNeeded();
    await checkView(preview, 'preview-quiz-desktop');

    await callTool(app, token, 'publish_form', { publicId });
    for (const picks of [Array(10).fill(1), Array(10).fill(0)] as Array<Array<0 | 1>>) {
      const res = await callTool(app, token, 'create_response', { publicId, answers: quizAnswers(picks) });
      expect([res.status, res.body.ending]).toEqual([200, picks[0] ? 'pass' : 'fail']);
    }
    const summary = (await client.callTool({ name: 'summarize_responses', arguments: { publicId } })) as CallToolResult;
    const results = await openView(client, RESULTS, { arguments: { publicId }, result: summary }, desktop);
    const r = results.frame;
    await r.getByRole('heading', { name: 'Endings reached' }).waitFor();
    await r.getByRole('heading', { name: 'Variable score' }).waitFor();
    await r.getByText('Mean 10 · min 0 · max 20').waitFor();
    await r.getByText('Mean 5 · min 0 · max 10').waitFor(); // correctCount
    expect(await r.getByText('1 (50%)').count()).toBeGreaterThanOrEqual(2); // each ending, each score
    await r.getByRole('heading', { name: 'Endings reached' }).scrollIntoViewIfNeeded();
    await checkView(results, 'results-quiz-desktop');
  });

  it('issue 50 at 390 px: the preview takes an nps and a ranking (a place per option), and checks them as create_response would', async () => {
    const client = clients['2026-07-28'];
    const survey = {
      title: 'Survey',
      blocks: [
        { ref: 'nps', type: 'nps', title: 'Recommend us?', required: true, minLabel: 'Never', maxLabel: 'Surely' },
        { ref: 'rank', type: 'ranking', title: 'Rank these', required: true, choices: ['Price', 'Speed', 'Care'] },
      ],
    };
    const created = (await client.callTool({ name: 'create_form', arguments: survey })) as CallToolResult;
    expect(created.isError).toBeFalsy();
    const preview = await openView(
      client,
      PREVIEW,
      { arguments: survey, result: created },
      { theme: 'light', width: 390 },
    );
    const f = preview.frame;
    await f.getByText('0: Never, 10: Surely').waitFor();
    await press(f.getByLabel('9', { exact: true }));
    await f.getByLabel('Price', { exact: true }).selectOption('1');
    await f.getByLabel('Speed', { exact: true }).selectOption('1');
    await f.getByLabel('Care', { exact: true }).selectOption('2');
    await press(f.getByRole('button', { name: 'Check answers' }));
    await f.getByText('create_response would refuse these answers:').waitFor();
    await f.getByLabel('Speed', { exact: true }).selectOption('3');
    await press(f.getByRole('button', { name: 'Check answers' }));
    await f.getByText('These answers would be taken. Nothing was stored.').waitFor();
    expect(await f.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await checkView(preview, 'preview-survey-phone');
  }, 120_000);

  it('issue 50 at 390 px: the preview takes a matrix one row at a time, and checks it as create_response would', async () => {
    const client = clients['2026-07-28'];
    const survey = {
      title: 'Grid',
      blocks: [
        {
          ref: 'grid',
          type: 'matrix',
          title: 'Rate us',
          required: true,
          rows: ['Price', 'Care'],
          columns: ['Poor', 'Good'],
        },
      ],
    };
    const created = (await client.callTool({ name: 'create_form', arguments: survey })) as CallToolResult;
    expect(created.isError).toBeFalsy();
    const preview = await openView(
      client,
      PREVIEW,
      { arguments: survey, result: created },
      { theme: 'light', width: 390 },
    );
    const f = preview.frame;
    const row = (name: string) => f.getByRole('group', { name, exact: true });
    await press(row('Price').getByLabel('Good', { exact: true }));
    await press(f.getByRole('button', { name: 'Check answers' }));
    await f.getByText('create_response would refuse these answers:').waitFor();
    await press(row('Care').getByLabel('Poor', { exact: true }));
    await press(f.getByRole('button', { name: 'Check answers' }));
    await f.getByText('These answers would be taken. Nothing was stored.').waitFor();
    expect(await f.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await checkView(preview, 'preview-matrix-phone');
  }, 120_000);

  it("at 390 px in the dark theme, both views fit and pass axe; a form of another workspace shows get_form's not_found", async () => {
    const client = clients['2026-07-28'];
    const created = (await client.callTool({ name: 'create_form', arguments: BRANCHING_FORM })) as CallToolResult;
    const { publicId } = created.structuredContent as { publicId: string };
    const phone = { theme: 'dark' as const, width: 390 };
    const preview = await openView(client, PREVIEW, { arguments: { publicId }, result: created }, phone);
    await press(preview.frame.getByLabel('Yes', { exact: true }));
    await preview.frame.getByRole('button', { name: 'Next' }).waitFor();
    expect(await preview.frame.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    expect(await preview.frame.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await checkView(preview, 'preview-phone-dark');
    const summary = (await client.callTool({ name: 'summarize_responses', arguments: { publicId } })) as CallToolResult;
    const results = await openView(client, RESULTS, { arguments: { publicId }, result: summary }, phone);
    await results.frame.getByText('No responses yet.').waitFor();
    expect(await results.frame.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await checkView(results, 'results-phone-dark');

    const foreign = await createForm(app, otherWs);
    const refused = (await client.callTool({
      name: 'get_form',
      arguments: { publicId: foreign.publicId },
    })) as CallToolResult;
    expect(refused.isError).toBe(true);
    const lost = await openView(client, PREVIEW, { arguments: { publicId: foreign.publicId }, result: refused }, phone);
    await lost.frame
      .getByRole('alert')
      .getByText(`No form with the publicId "${foreign.publicId}"`, { exact: false })
      .waitFor();
    await checkView(lost, 'preview-not-found');
  }, 120_000);

  it('the preview says when a form is invite-only (issue 47)', async () => {
    const client = clients['2026-07-28'];
    const args = { ...BRANCHING_FORM, access: 'invite' };
    const created = (await client.callTool({ name: 'create_form', arguments: args })) as CallToolResult;
    const preview = await openView(
      client,
      PREVIEW,
      { arguments: args, result: created },
      { theme: 'light', width: 1280 },
    );
    await preview.frame
      .getByText('Invite-only: people answer only from create_invites links', { exact: false })
      .waitFor();
    await checkView(preview, 'preview-invite-only');
  }, 120_000);

  it('the preview says when a form is not open yet, and when it is full (issue 47)', async () => {
    const client = clients['2026-07-28'];
    const opensAt = '2099-01-01T09:00:00.000Z';
    const args = { ...BRANCHING_FORM, opensAt };
    const created = (await client.callTool({ name: 'create_form', arguments: args })) as CallToolResult;
    const preview = await openView(
      client,
      PREVIEW,
      { arguments: args, result: created },
      { theme: 'light', width: 390 },
    );
    await preview.frame
      .getByText('Not open yet: it opens on Thu, 01 Jan 2099 09:00:00 UTC', { exact: false })
      .waitFor();
    await checkView(preview, 'preview-not-open-yet');

    // A cap of 1 reached: the form closes, and the preview says it is full (not closed by hand).
    const capped = { title: 'One seat', blocks: [{ type: 'short_text', title: 'Name' }], maxResponses: 1 };
    const made = (await client.callTool({ name: 'create_form', arguments: capped })) as CallToolResult;
    const { publicId, blocks } = made.structuredContent as { publicId: string; blocks: Array<{ id: string }> };
    await client.callTool({ name: 'publish_form', arguments: { publicId } });
    const answered = (await client.callTool({
      name: 'create_response',
      arguments: { publicId, answers: { [blocks[0].id]: 'Ada' } },
    })) as CallToolResult;
    expect(answered.isError).toBeFalsy();
    const got = (await client.callTool({ name: 'get_form', arguments: { publicId } })) as CallToolResult;
    const full = await openView(
      client,
      PREVIEW,
      { arguments: { publicId }, result: got },
      { theme: 'dark', width: 390 },
    );
    await full.frame.getByText('Full: it took its 1 response (maxResponses)', { exact: false }).waitFor();
    expect(await full.frame.getByText('Closed by hand').count()).toBe(0);
    await checkView(full, 'preview-full');
  }, 120_000);
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, FormworkError } from '../../clients/typescript/src';
import { retryDelayMs } from '../../clients/typescript/src/retry';
import { bulkLoadResponses, createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { freePort } from '../utils/cluster';
import { createTestApp } from '../utils/create-test-app';

/** A small valid PDF: its bytes are checked against the declared type. */
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');

/** What the client sent and got, attempt by attempt. */
interface Sent {
  tool: string;
  key: string | null;
  status: number | 'dropped';
}

/**
 * The client (clients/typescript, imported from its source) against the service listening on a
 * port, as a script uses it: typed tool calls, a write retried with its Idempotency-Key, the page
 * iterators, the upload helper, and the rate budgets honoured.
 */
describe('the TypeScript client', () => {
  let app: NestFastifyApplication;
  let baseUrl: string;
  let ws: TestWorkspace;
  let token: string;
  let dataDir: string;

  beforeAll(async () => {
    // PUBLIC_URL is this listener, so that the upload and download URLs the service answers reach it.
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    dataDir = mkdtempSync(join(tmpdir(), 'formwork-client-'));
    app = await createTestApp({ PUBLIC_URL: baseUrl, DATA_DIR: dataDir });
    await app.listen(port, '127.0.0.1');
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'editor' })).token;
  });
  afterAll(async () => {
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A fetch that records each tool call, and loses the answers of the calls `drop` picks (sent, but no answer arrives). */
  function recordingFetch(sent: Sent[], drop: (tool: string) => boolean = () => false) {
    return async (request: Request) => {
      const tool = new URL(request.url).pathname.split('/').pop() ?? '';
      const key = request.headers.get('idempotency-key');
      const response = await fetch(request);
      if (drop(tool)) {
        sent.push({ tool, key, status: 'dropped' });
        throw new TypeError('fetch failed'); // the connection dropped after the service stored the write
      }
      sent.push({ tool, key, status: response.status });
      return response;
    };
  }

  it('creates a form, uploads a file, and submits with a retry that replays the stored answer', async () => {
    const sent: Sent[] = [];
    let dropped = 0;
    const waits: number[] = [];
    const fw = createClient({
      baseUrl,
      token,
      fetch: recordingFetch(sent, (tool) => tool === 'create_response' && dropped++ === 0),
      sleep: async (ms) => void waits.push(ms),
    });

    const form = await fw.call('create_form', {
      title: 'Applications',
      blocks: [
        { type: 'short_text', title: 'Name', ref: 'name', required: true },
        { type: 'file_upload', title: 'CV', ref: 'cv', accept: ['application/pdf'] },
      ],
    });
    expect(form.status).toBe('draft');
    await fw.call('publish_form', { publicId: form.publicId });
    const [name, cv] = form.blocks.map((b) => b.id);

    const answer = await fw.upload({
      publicId: form.publicId,
      block: 'cv',
      filename: 'cv.pdf',
      contentType: 'application/pdf',
      data: PDF,
    });
    expect(answer).toMatch(/^upl_/);

    const submitted = await fw.request('create_response', {
      publicId: form.publicId,
      answers: { [name]: 'Ada', [cv]: answer },
    });
    // The first attempt was stored but its answer lost; the retry sent the same key and got the stored answer.
    const submits = sent.filter((s) => s.tool === 'create_response');
    expect(submits.map((s) => s.status)).toEqual(['dropped', 200]);
    expect(submits[0].key).toMatch(/^[0-9a-f-]{36}$/);
    expect(submits[1].key).toBe(submits[0].key);
    expect(submitted).toMatchObject({ attempts: 2, replayed: true, idempotencyKey: submits[0].key });
    expect(waits).toHaveLength(1);
    // Every write had a key of its own (the PUT of the bytes goes to the upload URL, with its own headers).
    const writes = sent.filter((s) => ['create_form', 'publish_form', 'create_upload'].includes(s.tool));
    expect(writes).toHaveLength(3);
    expect(new Set(writes.map((s) => s.key)).size).toBe(writes.length);
    expect(writes.every((s) => s.key)).toBe(true);

    const listed = await fw.call('list_responses', { publicId: form.publicId });
    expect(listed.total).toBe(1); // stored once
    expect(listed.responses[0].id).toBe(submitted.data.id);
    const files = listed.responses[0].answers[cv] as Array<{
      uploadId: string;
      name: string;
      size: number;
      url: string;
    }>;
    expect(files).toMatchObject([{ uploadId: answer, name: 'cv.pdf', size: PDF.length }]);
    const download = await fetch(files[0].url);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(PDF)).toBe(true);
    expect(sent.filter((s) => s.tool === 'list_responses').map((s) => s.key)).toEqual([null]);
  });

  it('throws a FormworkError with code, message, hint, details, status and request id, without retrying a 400', async () => {
    const sent: Sent[] = [];
    const fw = createClient({ baseUrl, token, fetch: recordingFetch(sent) });
    const refused = await fw.call('create_form', { title: '', blocks: [] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FormworkError);
    const error = refused as FormworkError;
    expect(error).toMatchObject({ name: 'FormworkError', code: 'invalid_arguments', status: 400 });
    expect(error.message.length).toBeGreaterThan(0);
    expect(error.hint.length).toBeGreaterThan(0);
    expect(error.details.some((d) => d.path === '/title')).toBe(true);
    expect(error.requestId).toMatch(/.+/);
    expect(sent).toHaveLength(1);

    const missing = await fw.call('get_form', { publicId: 'nope' }).catch((e: FormworkError) => e);
    expect(missing).toMatchObject({ code: 'not_found', status: 404 });
    // @ts-expect-error get_form needs publicId: a type error, and a 400 for a script without types
    const noArgs = await fw.call('get_form').catch((e: FormworkError) => e);
    expect(noArgs).toMatchObject({ code: 'invalid_arguments', status: 400 });
  });

  it('retries a 503 after its Retry-After with the same key, and gives up after maxRetries', async () => {
    const waits: number[] = [];
    const keys: Array<string | null> = [];
    let unavailable = 1;
    const fw = createClient({
      baseUrl,
      token,
      sleep: async (ms) => void waits.push(ms),
      fetch: async (request) => {
        keys.push(request.headers.get('idempotency-key'));
        if (unavailable-- > 0)
          return Response.json(
            { error: { code: 'service_unavailable', message: 'The database timed out.', hint: 'Retry.' } },
            { status: 503, headers: { 'Retry-After': '2' } },
          );
        return fetch(request);
      },
    });
    const form = await fw.request('create_form', { title: 'Retried', blocks: [{ type: 'short_text', title: 'Q' }] });
    expect(form).toMatchObject({ attempts: 2, replayed: false });
    expect(waits).toEqual([2000]);
    expect(keys).toEqual([form.idempotencyKey, form.idempotencyKey]);

    unavailable = 10;
    waits.length = 0;
    const gaveUp = await fw.call('list_forms', {}, { maxRetries: 2 }).catch((e: FormworkError) => e);
    expect(gaveUp).toMatchObject({ code: 'service_unavailable', status: 503 });
    expect(waits).toEqual([2000, 2000]); // three attempts, two waits

    // Aborting stops the retries: the wait is cut short by the abort, and nothing more is sent.
    const controller = new AbortController();
    const aborting = createClient({
      baseUrl,
      token,
      sleep: async () => controller.abort(),
      fetch: async (request) => {
        keys.push(request.signal.aborted ? 'sent aborted' : 'sent');
        return fetch(request).then(() => Response.json({}, { status: 503 }));
      },
    });
    keys.length = 0;
    const aborted = await aborting.call('list_forms', {}, { signal: controller.signal }).catch((e: Error) => e);
    expect(aborted).toMatchObject({ name: 'AbortError' });
    expect(keys).toEqual(['sent']);
  });

  it('walks 10,000 responses and every form with for await, a page at a time', async () => {
    const form = await createForm(app, ws, { status: 'published' });
    await bulkLoadResponses(app, form, 10_000);
    const sent: Sent[] = [];
    const fw = createClient({ baseUrl, token, fetch: recordingFetch(sent) });

    const ids = new Set<string>();
    let previous = '';
    for await (const response of fw.paginate('list_responses', { publicId: form.publicId, limit: 200 })) {
      const at = response.submittedAt ?? '';
      expect(at >= previous).toBe(true); // oldest first, in order across pages
      previous = at;
      ids.add(response.id);
    }
    expect(ids.size).toBe(10_000);
    expect(sent).toHaveLength(50);

    const own = await createWorkspace(app, 'pro');
    const ownToken = (await createToken(app, own)).token;
    const titles = ['a', 'b', 'c', 'd', 'e'];
    for (const title of titles) await createForm(app, own, { title });
    const listed: string[] = [];
    for await (const f of createClient({ baseUrl, token: ownToken }).paginate('list_forms', { limit: 2 }))
      listed.push(f.title);
    expect(listed).toEqual(titles);
  });

  it('waits what the answer asks: Retry-After in seconds or as a date, else the spent budget of RateLimit, else a bounded backoff', () => {
    const now = Date.UTC(2026, 0, 1);
    const wait = (headers: Record<string, string>, attempt = 1) => retryDelayMs(new Headers(headers), attempt, now);
    expect(wait({ 'Retry-After': '7' })).toBe(7000);
    expect(wait({ 'Retry-After': new Date(now + 3000).toUTCString() })).toBe(3000);
    // Every budget in RateLimit: the longest reset among the spent ones; an unspent one is not waited for.
    expect(wait({ RateLimit: '"ip";r=0;t=12, "cred";r=0;t=40', 'RateLimit-Reset': '12' })).toBe(40_000);
    expect(wait({ RateLimit: '"ip";r=5;t=50, "cred";r=0;t=9' })).toBe(9000);
    expect(wait({ 'RateLimit-Remaining': '0', 'RateLimit-Reset': '4' })).toBe(4000);
    for (const attempt of [1, 2, 3, 10]) {
      const backoff = wait({ RateLimit: '"ip";r=5;t=50' }, attempt);
      const ceiling = Math.min(8000, 500 * 2 ** (attempt - 1));
      expect(backoff).toBeGreaterThanOrEqual(ceiling / 2);
      expect(backoff).toBeLessThanOrEqual(ceiling);
    }
  });

  describe('rate budgets (3 requests a minute per credential, the clock moved by the client sleep)', () => {
    let tight: NestFastifyApplication;
    let tightUrl: string;
    let shift = 0;

    beforeAll(async () => {
      const port = await freePort();
      tightUrl = `http://127.0.0.1:${port}`;
      tight = await createTestApp({ PUBLIC_URL: tightUrl, RATE_LIMIT_CREDENTIAL_PER_MIN: '3' });
      await tight.listen(port, '127.0.0.1');
      // The budgets' windows follow Date.now: a client's sleep moves it on instead of waiting.
      const now = Date.now.bind(Date);
      jest.spyOn(Date, 'now').mockImplementation(() => now() + shift);
    });
    afterAll(async () => {
      jest.restoreAllMocks();
      await tight?.close();
    });

    const clock = (waits: number[]) => async (ms: number) => {
      waits.push(ms);
      shift += ms;
    };

    it('hits the limit (429), waits what Retry-After says, and recovers', async () => {
      const { token: t } = await createToken(tight, ws);
      // Another script spends the credential's budget.
      for (let i = 0; i < 3; i++) await createClient({ baseUrl: tightUrl, token: t }).call('list_forms');
      const statuses: Array<{ status: number; retryAfter: string | null }> = [];
      const waits: number[] = [];
      const fw = createClient({
        baseUrl: tightUrl,
        token: t,
        sleep: clock(waits),
        fetch: async (request) => {
          const res = await fetch(request);
          statuses.push({ status: res.status, retryAfter: res.headers.get('retry-after') });
          return res;
        },
      });
      const page = await fw.request('list_forms');
      expect(statuses.map((s) => s.status)).toEqual([429, 200]);
      expect(Number(statuses[0].retryAfter)).toBeGreaterThan(0);
      expect(waits).toEqual([Number(statuses[0].retryAfter) * 1000]);
      expect(page.attempts).toBe(2);
      expect(page.response.headers.get('ratelimit-remaining')).toBe('2');
    });

    it('waits for the reset before sending once an answer says the budget is spent (no 429)', async () => {
      const { token: t } = await createToken(tight, ws);
      const statuses: number[] = [];
      const waits: number[] = [];
      const fw = createClient({
        baseUrl: tightUrl,
        token: t,
        sleep: clock(waits),
        fetch: async (request) => {
          const res = await fetch(request);
          statuses.push(res.status);
          return res;
        },
      });
      let last: Response | undefined;
      for (let i = 0; i < 3; i++) last = (await fw.request('list_forms')).response;
      expect(last?.headers.get('ratelimit-remaining')).toBe('0');
      expect(waits).toEqual([]);
      await fw.call('list_forms');
      expect(statuses).toEqual([200, 200, 200, 200]);
      // Until the reset the spent answer named (counted from when it arrived).
      const reset = Number(last?.headers.get('ratelimit-reset')) * 1000;
      expect(waits).toHaveLength(1);
      expect(waits[0]).toBeGreaterThan(reset - 1000);
      expect(waits[0]).toBeLessThanOrEqual(reset);
    });

    it('does not wait longer than maxRetryDelayMs: the 429 is thrown at once', async () => {
      const { token: t } = await createToken(tight, ws);
      for (let i = 0; i < 3; i++) await createClient({ baseUrl: tightUrl, token: t }).call('list_forms');
      const waits: number[] = [];
      const fw = createClient({ baseUrl: tightUrl, token: t, sleep: clock(waits), maxRetryDelayMs: 1000 });
      const refused = await fw.call('list_forms').catch((e: FormworkError) => e);
      expect(refused).toMatchObject({ code: 'rate_limited', status: 429 });
      expect(waits).toEqual([]);
    });
  });
});

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';
import { formWithPartials, post2026, TASKS } from './jobs.fixture';

/**
 * Issue 49, item 7: long calls as jobs. REST: `Prefer: respond-async` answers 202 with the job,
 * polled with get_job. MCP 2026-07-28: a client declaring the tasks extension gets a task handle,
 * polled with tasks/get. Without the consent (or on 2025-11-25) the call answers as before.
 * (Cancelling, with the slot given back: jobs-cancel.e2e-spec.ts, on PostgreSQL.)
 */
describe('long calls as jobs: REST 202 + get_job, MCP tasks (issue 49)', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let token: string;
  let publicId: string;
  let summary: unknown;

  beforeAll(async () => {
    app = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_MIN: '1000' });
    await app.listen(0, '127.0.0.1');
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    publicId = await formWithPartials(app, token);
    const sync = await callTool(app, token, 'summarize_responses', { publicId, status: 'all' });
    expect(sync.status).toBe(200);
    expect(sync.body.total).toBe(4);
    summary = sync.body;
  });
  afterAll(async () => {
    await app?.close();
  });

  /** get_job until the job is no longer working (each poll a real call; the job reads 4 rows). */
  async function settled(jobId: string) {
    for (;;) {
      const res = await callTool(app, token, 'get_job', { jobId });
      expect(res.status).toBe(200);
      if (res.body.status !== 'working') return res.body;
    }
  }

  it('REST: Prefer: respond-async answers 202 and the job; get_job polls it to the answer the call gives', async () => {
    const res = await callTool(
      app,
      token,
      'summarize_responses',
      { publicId, status: 'all' },
      { Prefer: 'respond-async' },
    );
    expect(res.status).toBe(202);
    expect(res.headers['preference-applied']).toBe('respond-async');
    expect(res.body).toMatchObject({ tool: 'summarize_responses', status: 'working', pollIntervalMs: 1000 });
    expect(res.body.jobId).toMatch(/^job_[0-9a-f]{32}$/);
    expect(res.body.result).toBeUndefined();
    const done = await settled(res.body.jobId);
    expect(done.status).toBe('completed');
    expect(done.result).toEqual(summary);
    // Cancelling a finished job changes nothing.
    const again = await callTool(app, token, 'get_job', { jobId: res.body.jobId, cancel: true });
    expect(again.body.status).toBe('completed');
  });

  it("REST: a call not worth a job, or without the preference, answers 200 as before; a refusal is the job's error", async () => {
    const quick = await callTool(app, token, 'summarize_responses', { publicId }, { Prefer: 'respond-async' });
    expect(quick.status).toBe(200);
    expect(quick.headers['preference-applied']).toBeUndefined();
    const plain = await callTool(app, token, 'summarize_responses', { publicId, status: 'partial' });
    expect(plain.status).toBe(200);
    expect(plain.body.total).toBe(2);
    // A form that is no more: the job fails with the call's own refusal.
    const gone = (await callTool(app, token, 'create_form', { title: 'Gone', blocks: [] })).body.publicId;
    expect((await callTool(app, token, 'delete_form', { publicId: gone })).status).toBe(200);
    const started = await callTool(
      app,
      token,
      'summarize_responses',
      { publicId: gone, status: 'all' },
      { Prefer: 'respond-async' },
    );
    expect(started.status).toBe(202);
    const failed = await settled(started.body.jobId);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ code: 'not_found', hint: expect.any(String) });
    expect(failed.result).toBeUndefined();
  });

  it("get_job: an unknown job, or another workspace's, is 404 not_found; a malformed id is 400", async () => {
    const started = await callTool(
      app,
      token,
      'summarize_responses',
      { publicId, status: 'all' },
      { Prefer: 'respond-async' },
    );
    const other = await createWorkspace(app, 'pro');
    const stranger = (await createToken(app, other, { role: 'admin' })).token;
    expectError(await callTool(app, stranger, 'get_job', { jobId: started.body.jobId }), 404, 'not_found');
    expectError(await callTool(app, token, 'get_job', { jobId: `job_${'0'.repeat(32)}` }), 404, 'not_found');
    expectError(await callTool(app, token, 'get_job', { jobId: 'nope' }), 400, 'invalid_arguments');
    await settled(started.body.jobId);
  });

  it('MCP 2026-07-28 with the tasks extension: a task handle, tasks/get to the tool result; without it, the result as before', async () => {
    const created = await post2026(app, token, 'tools/call', {
      name: 'summarize_responses',
      arguments: { publicId, status: 'all' },
    });
    expect(created.status).toBe(200);
    const handle = created.body.result;
    expect(handle).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 3_600_000, pollIntervalMs: 1000 });
    expect(handle.taskId).toMatch(/^job_/);
    let polled;
    do {
      polled = (await post2026(app, token, 'tasks/get', { taskId: handle.taskId })).body.result;
      expect(polled.resultType).toBe('complete');
    } while (polled.status === 'working');
    expect(polled.status).toBe('completed');
    expect(polled.result.structuredContent).toEqual(summary);
    expect(JSON.parse(polled.result.content[0].text)).toEqual(summary);

    // No consent: the call answers its result, and tasks/get is -32021 naming the extension.
    const plain = await post2026(
      app,
      token,
      'tools/call',
      { name: 'summarize_responses', arguments: { publicId, status: 'all' } },
      false,
    );
    expect(plain.body.result.structuredContent).toEqual(summary);
    expect(plain.body.result.resultType).toBe('complete');
    const refused = await post2026(app, token, 'tasks/get', { taskId: handle.taskId }, false);
    expect(refused.body.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { [TASKS]: {} } } },
    });
    // A call not worth a task answers at once, even with consent; an unknown task is -32602.
    const quick = await post2026(app, token, 'tools/call', { name: 'summarize_responses', arguments: { publicId } });
    expect(quick.body.result.structuredContent.total).toBe(2);
    const unknown = await post2026(app, token, 'tasks/get', { taskId: `job_${'0'.repeat(32)}` });
    expect(unknown.body.error.code).toBe(-32602);
    // server/discover declares the extension.
    const discover = await post2026(app, token, 'server/discover', {});
    expect(discover.body.result.capabilities.extensions[TASKS]).toEqual({});
  });

  it('MCP 2025-11-25 (no tasks extension there): the same call answers its result as before', async () => {
    const client = new ClientV1({ name: 'v1', version: '1' });
    await client.connect(
      new TransportV1(new URL(`${await app.getUrl()}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    const result = await client.callTool({ name: 'summarize_responses', arguments: { publicId, status: 'all' } });
    expect(result.structuredContent).toEqual(summary);
    await client.close();
  });
});

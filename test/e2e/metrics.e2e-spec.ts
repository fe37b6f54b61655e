import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

/** Every series of a Prometheus text exposition: its name and labels. */
function series(text: string): Array<{ name: string; labels: Record<string, string> }> {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line);
      if (!m) throw new Error(`not a series line: ${line}`);
      const labels: Record<string, string> = {};
      for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
      return { name: m[1], labels };
    });
}

/** The value of one series (labels given exactly, in any order), or 0 when absent. */
function valueOf(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const s = series(line)[0];
    const keys = Object.keys(labels);
    if (keys.length === Object.keys(s.labels).length && keys.every((k) => s.labels[k] === labels[k]))
      return Number(line.split(' ').pop());
  }
  return 0;
}

describe('GET /metrics on the public port', () => {
  it('is refused with what to set when neither METRICS_PORT nor METRICS_TOKEN is set', async () => {
    const app = await createTestApp();
    try {
      const res = await request(app.getHttpServer()).get('/metrics');
      const error = expectError(res, 404, 'not_found');
      expect(error.hint).toMatch(/METRICS_PORT/);
      expect(error.hint).toMatch(/METRICS_TOKEN/);
    } finally {
      await app.close();
    }
  });

  it('is not there with METRICS_PORT set, even to the token (it is served on that port)', async () => {
    const app = await createTestApp({ METRICS_PORT: '9464', METRICS_TOKEN });
    try {
      const res = await request(app.getHttpServer()).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
      expectError(res, 404, 'not_found');
      expect(res.text).not.toContain('formwork_tool_calls_total');
    } finally {
      await app.close();
    }
  });

  describe('with METRICS_TOKEN', () => {
    let app: NestFastifyApplication;
    let ws: TestWorkspace;
    let token: string;
    let publicId: string;
    const scrape = () => request(app.getHttpServer()).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);

    beforeAll(async () => {
      app = await createTestApp({ METRICS_TOKEN });
      ws = await createWorkspace(app, 'pro');
      token = (await createToken(app, ws, { role: 'admin' })).token;
      publicId = (await createForm(app, ws, { status: 'published' })).publicId;
    });
    afterAll(() => app.close());

    it('refuses a request without the token, or with another, as 401 with a challenge', async () => {
      for (const auth of [undefined, 'Bearer nope-nope-nope-nope', `Bearer ${token}`, `Basic ${METRICS_TOKEN}`]) {
        let req = request(app.getHttpServer()).get('/metrics');
        if (auth) req = req.set('Authorization', auth);
        const res = await req;
        expectError(res, 401, 'unauthorized');
        expect(res.headers['www-authenticate']).toMatch(/^Bearer /);
        expect(res.text).not.toContain('formwork_');
      }
    });

    it('counts tool calls by tool, transport and code, and the respondent page by method and status', async () => {
      const before = (await scrape()).text;
      await callTool(app, token, 'get_form', { publicId });
      await callTool(app, token, 'get_form', { publicId });
      await callTool(app, token, 'get_form', { publicId: 'nope' });
      await callTool(app, token, 'get_form', { wrong: 1 });
      await callTool(app, token, `no_such_tool_${ws.id}`, {});
      await request(app.getHttpServer()).get(`/f/${publicId}`);
      // The same over MCP (a refusal there is a result with isError, or a JSON-RPC error for an unknown tool).
      const mcp = (name: string, args: unknown) =>
        request(app.getHttpServer())
          .post('/mcp')
          .set('Accept', 'application/json, text/event-stream')
          .set('Content-Type', 'application/json')
          .set('Authorization', `Bearer ${token}`)
          .send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }));
      expect((await mcp('get_form', { publicId })).body.result.isError).toBeFalsy();
      expect((await mcp('get_form', { publicId: 'nope' })).body.result.isError).toBe(true);
      expect((await mcp('no_such_tool', {})).body.error).toBeDefined();
      const res = await scrape();
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
      const delta = (name: string, labels: Record<string, string>) =>
        valueOf(res.text, name, labels) - valueOf(before, name, labels);
      const tool = (t: string, code: string, transport = 'rest') =>
        delta('formwork_tool_calls_total', { tool: t, transport, code });
      expect(tool('get_form', 'ok')).toBe(2);
      expect(tool('get_form', 'not_found')).toBe(1);
      expect(tool('get_form', 'invalid_arguments')).toBe(1);
      expect(tool('unknown', 'not_found')).toBe(1);
      expect(tool('get_form', 'ok', 'mcp')).toBe(1);
      expect(tool('get_form', 'not_found', 'mcp')).toBe(1);
      expect(tool('unknown', 'not_found', 'mcp')).toBe(1);
      expect(delta('formwork_tool_call_duration_seconds_count', { tool: 'get_form', transport: 'mcp' })).toBe(2);
      expect(delta('formwork_tool_call_duration_seconds_count', { tool: 'get_form', transport: 'rest' })).toBe(4);
      expect(delta('formwork_respondent_requests_total', { method: 'GET', status: '200' })).toBe(1);
      // Node's default process metrics, and the pool read at scrape time.
      expect(res.text).toMatch(/^process_cpu_user_seconds_total /m);
      expect(res.text).toMatch(/^formwork_db_pool_connections\{state="in_use"\} \d+/m);
      expect(res.text).toMatch(/^formwork_webhook_outbox_pending \d+/m);
      // The email outbox (issue 48), read at scrape time like the webhooks'.
      expect(res.text).toMatch(/^formwork_email_outbox_pending \d+/m);
      expect(res.text).toMatch(/^formwork_email_outbox_oldest_age_seconds \d+/m);
    });

    it('holds no id, token, address or other unbounded value in any label of any series', async () => {
      // Calls that put ids, tokens and addresses within reach of a label: paths, names, bodies.
      await callTool(app, token, `tool_${publicId}`, {});
      await callTool(app, 'fw_not_a_token', 'list_forms', {});
      await request(app.getHttpServer()).get(`/f/${publicId}`).set('X-Forwarded-For', '203.0.113.9');
      await request(app.getHttpServer()).post(`/f/${publicId}`).type('form').send({});
      await request(app.getHttpServer()).get(`/f/${ws.id}`);
      await request(app.getHttpServer()).get(`/no/such/path/${ws.id}`);
      const all = series((await scrape()).text);
      expect(all.length).toBeGreaterThan(50);
      const secrets = [token, ws.id, publicId, METRICS_TOKEN, 'fw_not_a_token', '203.0.113.9', '127.0.0.1'];
      const allowedLabels = new Set([
        'tool',
        'transport',
        'code',
        'route',
        'method',
        'status',
        'budget',
        'operation',
        'outcome',
        'state',
        'le',
        'quantile',
        // Node's default metrics
        'version',
        'major',
        'minor',
        'patch',
        'kind',
        'space',
        'type',
      ]);
      for (const s of all) {
        for (const [label, value] of Object.entries(s.labels)) {
          expect({ series: s.name, label, allowed: allowedLabels.has(label) }).toEqual({
            series: s.name,
            label,
            allowed: true,
          });
          for (const secret of secrets) expect(`${s.name}{${label}="${value}"}`).not.toContain(secret);
          // No uuid, no long random id, no IP address.
          expect(value).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/i);
          expect(value).not.toMatch(/[A-Za-z0-9]{20,}/);
          expect(value).not.toMatch(/\b\d{1,3}(\.\d{1,3}){3}\b|::ffff/);
        }
      }
      const routes = new Set(all.filter((s) => s.labels.route).map((s) => s.labels.route));
      expect(routes).toContain('/f/:publicId');
      expect(routes).toContain('unmatched');
    });
  });
});

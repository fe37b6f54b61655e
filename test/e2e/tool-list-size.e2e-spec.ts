import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';

/**
 * What an agent pays before its first call: the tool list, as characters of JSON (about four to a
 * token). Held under a budget for the full list (an admin of a Pro workspace), for a read-only
 * credential's list (viewer, the :read scopes) and for each tool, on GET /api/v1/tools and on MCP
 * tools/list of both eras. The sizes are printed, so a change that grows them shows in the log.
 */
const FULL_BUDGET = 45_000;
const READ_ONLY_BUDGET = 25_000;
const TOOL_BUDGET = 7_000;

const jsonLength = (value: unknown) => JSON.stringify(value).length;

describe('the size of the tool list', () => {
  let app: NestFastifyApplication;
  const tokens: Record<'full' | 'read-only', string> = { full: '', 'read-only': '' };

  beforeAll(async () => {
    app = await createTestApp();
    const ws = await createWorkspace(app, 'pro');
    tokens.full = (await createToken(app, ws, { role: 'admin' })).token;
    tokens['read-only'] = (
      await createToken(app, ws, { role: 'viewer', scopes: ['forms:read', 'responses:read', 'webhooks:read'] })
    ).token;
  });
  afterAll(() => app.close());

  /** One tools/list over MCP, as a client of that revision posts it (2025-11-25 needs no session here). */
  async function mcpToolList(version: '2025-11-25' | '2026-07-28', token: string): Promise<Array<{ name: string }>> {
    const params =
      version === '2026-07-28'
        ? {
            _meta: {
              'io.modelcontextprotocol/protocolVersion': version,
              'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          }
        : {};
    const res = await request(app.getHttpServer())
      .post('/mcp')
      .set('Accept', 'application/json, text/event-stream')
      .set('Content-Type', 'application/json')
      .set('Authorization', `Bearer ${token}`)
      .set('MCP-Protocol-Version', version)
      .set(version === '2026-07-28' ? { 'Mcp-Method': 'tools/list' } : {})
      .send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params }));
    expect(res.status).toBe(200);
    return res.body.result.tools;
  }

  const restToolList = async (token: string) =>
    (await request(app.getHttpServer()).get('/api/v1/tools').set('Authorization', `Bearer ${token}`)).body.tools;

  describe.each([
    ['full', FULL_BUDGET],
    ['read-only', READ_ONLY_BUDGET],
  ] as const)('the %s list', (who, budget) => {
    it.each([
      ['GET /api/v1/tools', restToolList],
      ['MCP tools/list on 2025-11-25', (token: string) => mcpToolList('2025-11-25', token)],
      ['MCP tools/list on 2026-07-28', (token: string) => mcpToolList('2026-07-28', token)],
    ])(
      `%s: at most ${budget} characters in all, ${TOOL_BUDGET} per tool`,
      async (where, list: (token: string) => Promise<Array<{ name: string }>>) => {
        const tools = await list(tokens[who]);
        expect(tools.length).toBeGreaterThan(who === 'full' ? 20 : 5);
        const sizes = Object.fromEntries(tools.map((t) => [t.name, jsonLength(t)]));
        const total = jsonLength(tools);
        const [largest, largestSize] = Object.entries(sizes).sort(([, a], [, b]) => b - a)[0];
        console.log(
          `${where}, ${who} (${tools.length} tools): ${total} characters; largest ${largest} ${largestSize}\n` +
            Object.entries(sizes)
              .sort(([, a], [, b]) => b - a)
              .map(([name, size]) => `  ${name.padEnd(24)} ${size}`)
              .join('\n'),
        );
        expect(Object.entries(sizes).filter(([, size]) => size > TOOL_BUDGET)).toEqual([]);
        expect(total).toBeLessThanOrEqual(budget);
      },
    );
  });
});

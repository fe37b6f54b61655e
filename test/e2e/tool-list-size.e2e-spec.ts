import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';

/**
 * What an agent pays before its first call: the tool list, as characters of JSON (about four to a
 * token). Held under a budget for the whole list and for each tool, on GET /api/v1/tools and on
 * MCP tools/list of both eras. The sizes are printed, so a change that grows them shows in the log.
 */
const TOTAL_BUDGET = 60_000;
const TOOL_BUDGET = 12_000;

const jsonLength = (value: unknown) => JSON.stringify(value).length;

describe('the size of the tool list', () => {
  let app: NestFastifyApplication;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp();
    token = (await createToken(app, await createWorkspace(app, 'pro'), { role: 'admin' })).token;
  });
  afterAll(() => app.close());

  /** One tools/list over MCP, as a client of that revision posts it (2025-11-25 needs no session here). */
  async function mcpToolList(version: '2025-11-25' | '2026-07-28'): Promise<Array<{ name: string }>> {
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

  it.each([
    ['GET /api/v1/tools', async () => (await request(app.getHttpServer()).get('/api/v1/tools')).body.tools],
    ['MCP tools/list on 2025-11-25', () => mcpToolList('2025-11-25')],
    ['MCP tools/list on 2026-07-28', () => mcpToolList('2026-07-28')],
  ])(
    `%s: at most ${TOTAL_BUDGET} characters in all, ${TOOL_BUDGET} per tool`,
    async (where, list: () => Promise<Array<{ name: string }>>) => {
      const tools = await list();
      expect(tools.length).toBeGreaterThan(20);
      const sizes = Object.fromEntries(tools.map((t) => [t.name, jsonLength(t)]));
      const total = jsonLength(tools);
      console.log(
        `${where}: ${total} characters\n` +
          Object.entries(sizes)
            .sort(([, a], [, b]) => b - a)
            .map(([name, size]) => `  ${name.padEnd(24)} ${size}`)
            .join('\n'),
      );
      expect(Object.entries(sizes).filter(([, size]) => size > TOOL_BUDGET)).toEqual([]);
      expect(total).toBeLessThanOrEqual(TOTAL_BUDGET);
    },
  );
});

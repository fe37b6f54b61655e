import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { callTool } from '../utils/http';

const MODERN = '2026-07-28';
export const TASKS = 'io.modelcontextprotocol/tasks';

/** A 2026-07-28 request, declaring the tasks extension in its capabilities when `tasks` is set. */
export function post2026(
  app: NestFastifyApplication,
  token: string,
  method: string,
  params: Record<string, unknown>,
  tasks = true,
) {
  const name = typeof params.name === 'string' ? params.name : (params.taskId as string | undefined);
  const _meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': tasks ? { extensions: { [TASKS]: {} } } : {},
  };
  let req = request(app.getHttpServer())
    .post('/mcp')
    .set('Authorization', `Bearer ${token}`)
    .set('Accept', 'application/json, text/event-stream')
    .set('Content-Type', 'application/json')
    .set('MCP-Protocol-Version', MODERN)
    .set('Mcp-Method', method);
  if (name) req = req.set('Mcp-Name', name);
  return req.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta } }));
}

/** A form with partial responses saved, two completed and two in progress. */
export async function formWithPartials(app: NestFastifyApplication, token: string): Promise<string> {
  const ok = async (name: string, args: unknown) => {
    const res = await callTool(app, token, name, args);
    expect(res.status).toBe(200);
    return res.body;
  };
  const { publicId } = await ok('create_form', {
    title: 'Jobs',
    partialResponses: true,
    blocks: [
      { ref: 'name', type: 'short_text', title: 'Name', required: true },
      { ref: 'p2', type: 'page_break', title: 'Role' },
      { ref: 'role', type: 'short_text', title: 'Role' },
    ],
  });
  await ok('publish_form', { publicId });
  await ok('create_response', { publicId, answers: { name: 'Ada', role: 'Engineer' } });
  await ok('create_response', { publicId, answers: { name: 'Bob' } });
  await ok('create_response', { publicId, answers: { name: 'Cleo' }, partial: true });
  await ok('create_response', { publicId, answers: { name: 'Dan' }, partial: true });
  return publicId;
}

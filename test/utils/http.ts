import { INestApplication } from '@nestjs/common';
import request from 'supertest';

/** POST /api/v1/tools/{name} as a client would send it. */
export function callTool(
  app: INestApplication,
  token: string | undefined,
  name: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  let req = request(app.getHttpServer()).post(`/api/v1/tools/${name}`);
  if (token !== undefined) req = req.set('Authorization', `Bearer ${token}`);
  for (const [k, v] of Object.entries(headers)) req = req.set(k, v);
  return body === undefined ? req : req.send(body as object);
}

/** The error envelope every failure must have. */
export function expectError(res: request.Response, status: number, code: string) {
  if (res.status !== status || res.body?.error?.code !== code) {
    throw new Error(`expected ${status} ${code}, got ${res.status} ${JSON.stringify(res.body)}`);
  }
  const { error } = res.body;
  for (const key of ['message', 'hint', 'requestId']) {
    if (typeof error[key] !== 'string' || error[key].length === 0)
      throw new Error(`error.${key} missing in ${JSON.stringify(res.body)}`);
  }
  if (!/application\/json/.test(res.headers['content-type'] ?? ''))
    throw new Error(`error is not JSON: ${res.headers['content-type']}`);
  if (JSON.stringify(res.body).includes('    at ')) throw new Error('a stack trace leaked into the error body');
  return error as { code: string; message: string; hint: string; details?: Array<{ path: string; message: string }> };
}

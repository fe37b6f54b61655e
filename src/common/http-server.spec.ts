import http from 'node:http';
import net from 'node:net';
import { clientErrorResponse, configureServer, isUploadRequest, RequestBounds } from './http-server';

/** A raw connection; `closed` resolves when the server closes it, with everything it sent. */
async function connect(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.on('connect', resolve));
  let received = '';
  socket.on('data', (chunk) => (received += chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  return { socket, closed };
}

/** A plain Node server as the service configures it; `checkEveryMs` stands in for Node's 30 s headers check. */
async function serve(handler: http.RequestListener, checkEveryMs = 30_000, bounds?: RequestBounds) {
  const server = http.createServer({ connectionsCheckingInterval: checkEveryMs }, handler);
  const connections = configureServer(server, bounds);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, connections, port: (server.address() as net.AddressInfo).port };
}

/** Reads the body, then answers after `delayMs`. */
const slowAnswer =
  (delayMs: number): http.RequestListener =>
  (req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => res.end('done'), delayMs));
  };

describe('configureServer', () => {
  it('answers a request that does not arrive in time with a 408 request_timeout envelope, and closes the connection', async () => {
    const { server, port } = await serve(slowAnswer(0), 50, { requestMs: 200, uploadMs: 60_000 });
    try {
      const slow = await connect(port);
      slow.socket.write(
        'POST /api/v1/tools/list_forms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
      );
      const answer = await slow.closed;
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(answer).toContain('X-Content-Type-Options: nosniff');
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
      expect(body.error).toMatchObject({
        code: 'request_timeout',
        hint: expect.stringContaining('within 0.2 seconds'),
      });
    } finally {
      server.close();
    }
  });

  it('gives an upload its own bound: a trickling upload past the request bound is received, then cut past its own', async () => {
    const { server, port } = await serve(slowAnswer(0), 30_000, { requestMs: 200, uploadMs: 1_000 });
    /** Sends one byte every 100 ms, `count` of them. */
    const trickle = (socket: net.Socket, count: number) => {
      const timer = setInterval(() => {
        if (socket.writable && count-- > 0) socket.write('x');
      }, 100);
      socket.on('close', () => clearInterval(timer));
    };
    try {
      const steady = await connect(port);
      steady.socket.write('PUT /api/v1/uploads/a/b/c?sig=x HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\n');
      trickle(steady.socket, 6);
      const endless = await connect(port);
      endless.socket.write('PUT /api/v1/uploads/a/b/d?sig=x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n');
      trickle(endless.socket, 1000);
      const plain = await connect(port);
      plain.socket.write('POST /api/v1/tools/list_forms HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n');
      trickle(plain.socket, 1000);

      // Not an upload: cut at its 200 ms bound (checked every 50 ms).
      expect(await plain.closed).toMatch(/^HTTP\/1\.1 408 /);
      // 6 bytes over 600 ms, three times the request bound: answered.
      await new Promise((resolve) => setTimeout(resolve, 800));
      steady.socket.end();
      expect(await steady.closed).toMatch(/^HTTP\/1\.1 200 [\s\S]*done$/);
      // Still sending at its own bound: 408 with that bound in the hint.
      const answer = await endless.closed;
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
      expect(body.error).toMatchObject({ code: 'request_timeout', hint: expect.stringContaining('within 1 seconds') });
    } finally {
      server.close();
    }
  });

  it('drains: answers a request that arrived whole, closes idle, half-sent and trickling connections, then resolves', async () => {
    const { server, connections, port } = await serve(slowAnswer(400));
    const busy = await connect(port);
    busy.socket.write('GET /busy HTTP/1.1\r\nHost: x\r\n\r\n');
    const trickle = await connect(port);
    trickle.socket.write('POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab');
    const halfHeaders = await connect(port);
    halfHeaders.socket.write('GET / HTTP/1.1\r\nHost:');
    const idle = await connect(port);
    await new Promise((resolve) => setTimeout(resolve, 50));

    // A receive grace shorter than the busy request's answer: the answer must still be sent.
    await connections.drain(100);
    expect(await busy.closed).toMatch(/^HTTP\/1\.1 200 [\s\S]*done$/);
    expect(await trickle.closed).toBe('');
    expect(await halfHeaders.closed).toBe('');
    expect(await idle.closed).toBe('');
    expect(server.listening).toBe(false);
  });
});

describe('configureServer, draining behind a load balancer', () => {
  it('leaves an idle keep-alive connection to its client during the grace: a request on it is answered, with Connection: close', async () => {
    const { server, connections, port } = await serve(slowAnswer(0));
    const kept = await connect(port);
    kept.socket.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const drained = connections.drain(1_000);
    // The load balancer sends its next request on the connection it kept, after the drain began.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.listening).toBe(false);
    kept.socket.write('POST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok');
    const received = await kept.closed;
    const answers = received.split(/(?=HTTP\/1\.1 )/);
    expect(answers).toHaveLength(2);
    expect(answers[1]).toMatch(/^HTTP\/1\.1 200 [\s\S]*Connection: close[\s\S]*done$/i);
    await drained;
  });
});

describe('isUploadRequest', () => {
  const req = (method: string, url: string, type?: string) =>
    ({ method, url, headers: type ? { 'content-type': type } : {} }) as http.IncomingMessage;
  it("is the disk upload URL and the respondent page's multipart post, nothing else", () => {
    expect(isUploadRequest(req('PUT', '/api/v1/uploads/w/f/upl_1?sig=x'))).toBe(true);
    expect(isUploadRequest(req('POST', '/f/abc', 'multipart/form-data; boundary=x'))).toBe(true);
    expect(isUploadRequest(req('POST', '/f/abc', 'application/x-www-form-urlencoded'))).toBe(false);
    expect(isUploadRequest(req('POST', '/api/v1/tools/create_upload', 'multipart/form-data; boundary=x'))).toBe(false);
    expect(isUploadRequest(req('PUT', '/api/v1/tools/create_form'))).toBe(false);
  });
});

describe('clientErrorResponse', () => {
  it("keeps Node's own answers to malformed requests", () => {
    expect(clientErrorResponse(Object.assign(new Error('x'), { code: 'HPE_INVALID_METHOD' }))).toBe(
      'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n',
    );
    expect(clientErrorResponse(Object.assign(new Error('x'), { code: 'HPE_HEADER_OVERFLOW' }))).toMatch(
      /^HTTP\/1\.1 431 /,
    );
  });
});

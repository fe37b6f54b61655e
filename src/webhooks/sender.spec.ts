import http from 'node:http';
import { AddressInfo } from 'node:net';
import { RESPONSE_BODY_LIMIT, storableText, WebhookSender } from './sender';

/** What one attempt comes to, against a local receiver that answers as each path says. */
describe('WebhookSender', () => {
  let server: http.Server;
  let base: string;
  const seen: Array<{ url?: string; headers: http.IncomingHttpHeaders; body: string }> = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        seen.push({ url: req.url, headers: req.headers, body });
        if (req.url === '/big') res.end('x'.repeat(5 * RESPONSE_BODY_LIMIT));
        else if (req.url === '/nul')
          // NUL, a byte that is never UTF-8, and an encoded lone surrogate (U+D800).
          res.end(Buffer.concat([Buffer.from('ok\0 '), Buffer.from([0xff, 0x20, 0xed, 0xa0, 0x80])]));
        else if (req.url === '/stream') {
          // An answer that never ends.
          res.writeHead(200);
          const timer = setInterval(() => res.write('y'.repeat(512)), 5);
          res.on('close', () => clearInterval(timer));
        } else if (req.url === '/busy') res.writeHead(503, { 'Retry-After': '120' }).end('later');
        else if (req.url === '/silent')
          return; // never answers
        else if (req.url === '/hangup') req.socket.destroy();
        else res.end('ok');
      });
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('posts the body as JSON with the given headers, and keeps the answer', async () => {
    const sender = new WebhookSender(true);
    try {
      const result = await sender.send(`${base}/hook?x=1`, { 'webhook-id': 'msg_1' }, '{"a":1}');
      expect(result).toMatchObject({ statusCode: 200, responseBody: 'ok', error: null, retryAfter: undefined });
      expect(result.durationMs).toBeGreaterThanOrEqual(0);
      const last = seen[seen.length - 1];
      expect(last).toMatchObject({ url: '/hook?x=1', body: '{"a":1}' });
      expect(last.headers).toMatchObject({
        'content-type': 'application/json',
        'user-agent': 'Formwork-Webhooks/1',
        'webhook-id': 'msg_1',
      });
    } finally {
      await sender.close();
    }
  });

  it('keeps only the first 2 KB of an answer', async () => {
    const sender = new WebhookSender(true);
    try {
      const result = await sender.send(`${base}/big`, {}, '{}');
      expect(result.statusCode).toBe(200);
      expect(result.responseBody).toBe('x'.repeat(RESPONSE_BODY_LIMIT));
      // The rest was not read (its connection was closed): the next attempt goes on another.
      expect(await sender.send(`${base}/hook`, {}, '{}')).toMatchObject({ statusCode: 200, responseBody: 'ok' });
    } finally {
      await sender.close();
    }
  });

  it('stops reading an answer once its first 2 KB are in, so an endless one ends the attempt at once', async () => {
    // A minute's limit: without the early stop the attempt would outlast the test.
    const sender = new WebhookSender(true, 60_000);
    try {
      const result = await sender.send(`${base}/stream`, {}, '{}');
      expect(result).toMatchObject({ statusCode: 200, error: null, responseBody: 'y'.repeat(RESPONSE_BODY_LIMIT) });
    } finally {
      await sender.close();
    }
  });

  it('keeps an answer as PostgreSQL can store it: no NUL, no invalid UTF-8, no lone surrogate', async () => {
    const sender = new WebhookSender(true);
    try {
      const result = await sender.send(`${base}/nul`, {}, '{}');
      expect(result.statusCode).toBe(200);
      expect(result.responseBody).toBe('ok\ufffd \ufffd \ufffd\ufffd\ufffd');
      expect(result.responseBody!.isWellFormed()).toBe(true);
    } finally {
      await sender.close();
    }
    expect(storableText('a\0b\ud800c')).toBe('a\ufffdb\ufffdc');
  });

  it('reports a failing answer with its Retry-After, and a connection that ends without one', async () => {
    const sender = new WebhookSender(true);
    try {
      expect(await sender.send(`${base}/busy`, {}, '{}')).toMatchObject({
        statusCode: 503,
        responseBody: 'later',
        error: 'the endpoint answered 503',
        retryAfter: '120',
      });
      expect(await sender.send(`${base}/hangup`, {}, '{}')).toMatchObject({
        statusCode: null,
        responseBody: null,
        error: 'the endpoint closed the connection without answering',
      });
    } finally {
      await sender.close();
    }
  });

  it('gives up on an endpoint that does not answer within the timeout', async () => {
    const sender = new WebhookSender(true, 300);
    try {
      const result = await sender.send(`${base}/silent`, {}, '{}');
      expect(result).toMatchObject({ statusCode: null, error: 'no answer within 0.3 s' });
      expect(result.durationMs).toBeGreaterThanOrEqual(290);
      expect(result.durationMs).toBeLessThan(5000);
    } finally {
      await sender.close();
    }
  });

  it('ends an attempt still waiting for a connection within its own limit too', async () => {
    const sender = new WebhookSender(true, 300, 1);
    try {
      // One connection, held by the first attempt: the second never reaches the receiver.
      const results = await Promise.all([1, 2].map(() => sender.send(`${base}/silent`, {}, '{}')));
      for (const result of results) {
        expect(result).toMatchObject({ statusCode: null, error: 'no answer within 0.3 s', retryAfter: undefined });
        expect(result.durationMs).toBeLessThan(5000);
      }
    } finally {
      await sender.close();
    }
  });

  it('sends as many attempts to one receiver at once as it has connections for, each within its own limit', async () => {
    const sender = new WebhookSender(true, 500, 4);
    try {
      // Four answers that take 300 ms each, on four connections: none waits for another.
      const results = await Promise.all([1, 2, 3, 4].map(() => sender.send(`${base}/slow`, {}, '{}')));
      expect(results.map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
    } finally {
      await sender.close();
    }
  });

  it('ends the attempts under way when the instance stops', async () => {
    const sender = new WebhookSender(true);
    try {
      const pending = sender.send(`${base}/silent`, {}, '{}');
      await new Promise((resolve) => setTimeout(resolve, 100));
      sender.abortAll();
      expect(await pending).toMatchObject({ statusCode: null, error: 'the instance stopped during the attempt' });
    } finally {
      await sender.close();
    }
  });

  it('says why when nothing can be sent: connection refused, a URL that is not valid', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', () => resolve()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const sender = new WebhookSender(true);
    try {
      expect(await sender.send(`http://127.0.0.1:${port}/x`, {}, '{}')).toMatchObject({
        statusCode: null,
        error: 'connection refused',
      });
      expect(await sender.send('not a url', {}, '{}')).toMatchObject({
        statusCode: null,
        error: 'the URL is not valid',
      });
    } finally {
      await sender.close();
    }
  });
});

import http from 'node:http';
import { AddressInfo } from 'node:net';
import { hostProblem, isBlockedAddress, urlProblem } from './url-safety';
import { WebhookSender } from './sender';

describe('webhook URL safety', () => {
  it('blocks loopback, private, link-local, metadata and reserved addresses, in both families', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.31.255.255',
      '192.168.0.1',
      '169.254.169.254',
      '100.100.100.200',
      '0.0.0.0',
      '::1',
      '::',
      'fd00:ec2::254',
      'fe80::1',
      '::ffff:127.0.0.1',
      '::ffff:a00:1',
      '64:ff9b::a00:1',
      'ff02::1',
    ]) {
      expect({ a, blocked: isBlockedAddress(a) }).toEqual({ a, blocked: true });
    }
    for (const a of ['93.184.215.14', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:93.184.215.14']) {
      expect({ a, blocked: isBlockedAddress(a) }).toEqual({ a, blocked: false });
    }
  });

  it('takes https only, without credentials or fragment; http too when private URLs are allowed', () => {
    expect(urlProblem('https://hooks.example.com/x?y=1', false)).toHaveProperty('url');
    expect(urlProblem('http://hooks.example.com/x', false)).toEqual({ problem: 'must be an https:// URL' });
    expect(urlProblem('http://hooks.example.com/x', true)).toHaveProperty('url');
    expect(urlProblem('https://a:b@hooks.example.com/', false)).toHaveProperty('problem');
    expect(urlProblem('https://hooks.example.com/#x', false)).toHaveProperty('problem');
    expect(urlProblem('hooks.example.com', false)).toHaveProperty('problem');
  });

  it('checks what a name resolves to', async () => {
    expect(await hostProblem('localhost', false)).toMatch(/resolves to (127\.0\.0\.1|::1)/);
    expect(await hostProblem('localhost', true)).toBeNull();
    expect(await hostProblem('93.184.215.14', false)).toBeNull();
  });

  describe('at delivery', () => {
    let server: http.Server;
    let port: number;
    let hits = 0;
    beforeAll(async () => {
      server = http.createServer((req, res) => {
        hits++;
        if (req.url === '/moved') res.writeHead(302, { Location: '/x' }).end();
        else res.end('ok');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
      port = (server.address() as AddressInfo).port;
    });
    afterAll(() => new Promise((resolve) => server.close(resolve)));

    it('refuses to connect to a name that resolves to a blocked address, or to a blocked literal', async () => {
      const sender = new WebhookSender(false);
      try {
        const byName = await sender.send(`http://localhost:${port}/x`, {}, '{}');
        expect(byName).toMatchObject({
          statusCode: null,
          error: expect.stringMatching(/localhost resolves to .*not sent/),
        });
        const byLiteral = await sender.send(`http://127.0.0.1:${port}/x`, {}, '{}');
        expect(byLiteral).toMatchObject({
          statusCode: null,
          error: expect.stringMatching(/127\.0\.0\.1 is a loopback/),
        });
        expect(hits).toBe(0);
      } finally {
        await sender.close();
      }
    });

    it('sends when private addresses are allowed, and follows no redirect', async () => {
      const sender = new WebhookSender(true);
      try {
        expect(await sender.send(`http://localhost:${port}/x`, {}, '{}')).toMatchObject({
          statusCode: 200,
          error: null,
          responseBody: 'ok',
        });
        expect(hits).toBe(1);
        const moved = await sender.send(`http://localhost:${port}/moved`, {}, '{}');
        expect(moved).toMatchObject({ statusCode: 302, error: 'redirect not followed (302 to /x)' });
        expect(hits).toBe(2);
      } finally {
        await sender.close();
      }
    });
  });
});

import http from 'node:http';
import { AddressInfo } from 'node:net';
import { hostOf, hostProblem, isBlockedAddress, urlProblem } from './url-safety';
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

  it('blocks the reserved IPv6 forms that carry an IPv4 address, and every special-purpose range of the IANA registries', () => {
    // The URLs of issue 23 (§3.7), as URL.hostname writes them: each reached 169.254.169.254 or 127.0.0.1.
    const fromUrls = [
      'https://[64:ff9b:1::a9fe:a9fe]/', // local-use NAT64, 64:ff9b:1::/48
      'https://[::169.254.169.254]/', // IPv4-compatible, ::/96
      'https://[::127.0.0.1]/',
      'https://[::ffff:0:169.254.169.254]/', // IPv4-translated, ::ffff:0:0:0/96
    ].map((u) => hostOf(new URL(u)));
    const blocked = [
      ...fromUrls,
      '::a9fe:a9fe',
      '::ffff:169.254.169.254', // mapped
      '64:ff9b::7f00:1', // well-known NAT64 of 127.0.0.1
      '64:ff9b::808:808', // well-known NAT64, public IPv4 (the range itself is refused)
      '2002:a9fe:a9fe::1', // 6to4 of 169.254.169.254
      '2001:0:4136:e378:8000:63bf:5601:5601', // Teredo (client 169.254.169.254 inverted)
      // IANA IPv4 Special-Purpose Address Registry
      ...['0.1.2.3', '10.0.0.1', '100.64.0.1', '127.0.0.1', '169.254.1.1', '172.16.0.1', '192.0.0.9', '192.0.0.170'],
      ...['192.0.2.1', '192.31.196.1', '192.52.193.1', '192.88.99.1', '192.168.1.1', '192.175.48.1'],
      ...['198.18.0.1', '198.51.100.1', '203.0.113.1', '240.0.0.1', '255.255.255.255', '224.0.0.1'],
      // IANA IPv6 Special-Purpose Address Registry
      ...['::', '::1', '::ffff:10.0.0.1', '64:ff9b::a00:1', '64:ff9b:1::1', '100::1', '100:0:0:1::1', '2001::1'],
      ...['2001:1::1', '2001:1::2', '2001:1::3', '2001:2::1', '2001:3::1', '2001:4:112::1', '2001:10::1'],
      ...['2001:20::1', '2001:30::1', '2001:db8::1', '2002::1', '2620:4f:8000::1', '3fff::1', '5f00::1'],
      ...['fc00::1', 'fd00:ec2::254', 'fe80::1', 'fec0::1', 'ff02::1'],
      // Outside 2000::/3 (reserved by the IETF)
      ...['4000::1', '8000::1', '1::1'],
    ];
    for (const a of blocked) expect({ a, blocked: isBlockedAddress(a) }).toEqual({ a, blocked: true });
    for (const a of ['1.1.1.1', '9.9.9.9', '2a00:1450:4001:80b::200e', '2001:4860:4860::8888', '::ffff:1.1.1.1']) {
      expect({ a, blocked: isBlockedAddress(a) }).toEqual({ a, blocked: false });
    }
  });

  it('refuses the reserved IPv6 forms as webhook hosts, and at delivery', async () => {
    for (const host of [
      '[64:ff9b:1::a9fe:a9fe]',
      '[::169.254.169.254]',
      '[::127.0.0.1]',
      '[::ffff:0:169.254.169.254]',
    ]) {
      const checked = urlProblem(`https://${host}/hook`, false);
      expect(checked).toHaveProperty('url');
      const url = (checked as { url: URL }).url;
      expect(await hostProblem(hostOf(url), false)).toMatch(/reserved address/);
      const sender = new WebhookSender(false);
      try {
        expect(await sender.send(url.href, {}, '{}')).toMatchObject({
          statusCode: null,
          error: expect.stringMatching(/reserved address: not sent/),
        });
      } finally {
        await sender.close();
      }
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

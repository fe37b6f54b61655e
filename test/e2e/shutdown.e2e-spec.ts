import net from 'node:net';
import { destroyAgents, ensureBuilt, Instance, randomLoopbackAddress, sleep } from '../utils/cluster';
import { testDatabaseUrl } from '../utils/create-test-app';

/** A raw connection to the instance, from an address of its own; `closed` resolves when the service closes it. */
async function connect(port: number): Promise<{ socket: net.Socket; closed: Promise<void>; received: () => string }> {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress: randomLoopbackAddress() });
  await new Promise((resolve) => socket.on('connect', resolve));
  let received = '';
  socket.on('data', (chunk) => (received += chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  return { socket, closed, received: () => received };
}

/** The built service stopping on SIGTERM while clients hold connections open. */
describe('SIGTERM with slow and idle clients', () => {
  let instance: Instance | undefined;

  beforeAll(() => ensureBuilt(), 120_000);
  afterAll(async () => {
    destroyAgents();
    await instance?.stop(1_000);
  });

  it('exits 0 although a client trickles a request body, another sends half its headers and a third idles', async () => {
    instance = await Instance.start('slow', {
      DATABASE_URL: testDatabaseUrl(),
      NODE_ENV: 'production',
      BOOTSTRAP_DEMO: 'false',
      PUBLIC_URL: 'http://formwork.test',
      DATABASE_POOL_SIZE: '2',
      LOG_LEVEL: 'info',
    });
    const port = instance.port;

    // Announces 1000 bytes, then sends one a second.
    const trickle = await connect(port);
    trickle.socket.write(
      'POST /api/v1/tools/list_forms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n',
    );
    const drip = setInterval(() => trickle.socket.writable && trickle.socket.write(' '), 1_000);
    // Headers that never end.
    const halfHeaders = await connect(port);
    halfHeaders.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    // A keep-alive connection between requests.
    const idle = await connect(port);
    idle.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await sleep(1_500);
    expect(idle.received()).toMatch(/^HTTP\/1\.1 200 /);

    instance.signal('SIGTERM');
    try {
      expect(await instance.exited).toBe(0);
    } finally {
      clearInterval(drip);
    }
    // Every connection was closed by the service, none left to the client.
    await Promise.all([trickle.closed, halfHeaders.closed, idle.closed]);
    const messages = instance.lines.map((l) => JSON.parse(l).msg);
    expect(messages).toEqual(expect.arrayContaining([expect.stringContaining('SIGTERM'), 'stopped']));
    expect(messages.join('\n')).not.toContain('did not finish');
  }, 60_000);
});

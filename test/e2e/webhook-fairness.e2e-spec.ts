import http from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { MAX_IN_FLIGHT_PER_ENDPOINT, MAX_IN_FLIGHT_PER_WORKSPACE } from '../../src/webhooks/delivery-loop';
import { createToken, createWorkspace } from '../factories';
import { waitUntil } from '../utils/cluster';
import { callTool } from '../utils/http';
import { createAppOn, isolatedDatabaseUrl, WebhookReceiver } from '../utils/webhooks';

/**
 * One workspace's receivers that never answer must not delay another workspace's events (issue
 * 23: 20 such endpoints and 600 events held all 128 delivery slots for 10 s each, and the other
 * workspace's event left after 39.5 s). The app runs on a schema of its own, so that no other
 * instance claims these deliveries.
 */
describe('webhook delivery is fair between endpoints and workspaces', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let drop: () => Promise<void>;
  let receiver: WebhookReceiver;
  let hanging: http.Server;
  let hangingUrl: string;
  const sockets = new Set<Socket>();
  /** Requests the hanging receiver holds, by path (each one an attempt in flight). */
  const held = new Map<string, number>();
  let mostHeld = 0;
  const heldNow = () => [...held.values()].reduce((a, b) => a + b, 0);

  beforeAll(async () => {
    const isolated = await isolatedDatabaseUrl('fair');
    drop = isolated.drop;
    app = await createAppOn(isolated.url, { WEBHOOKS_ALLOW_PRIVATE_URLS: 'true' });
    await app.init();
    db = app.get(DataSource);
    receiver = await WebhookReceiver.start();
    // Takes every request and never answers it.
    hanging = http.createServer((req, res) => {
      const path = req.url ?? '/';
      held.set(path, (held.get(path) ?? 0) + 1);
      mostHeld = Math.max(mostHeld, heldNow());
      // The answer's close: the connection ended (the attempt gave up), as no answer is ever sent.
      res.on('close', () => held.set(path, held.get(path)! - 1));
      req.resume();
    });
    hanging.on('connection', (s: Socket) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', () => resolve()));
    hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => hanging?.close(resolve));
    await receiver?.down();
    await drop?.();
  }, 30_000);

  it("delivers another workspace's event while one workspace's 20 endpoints hang on 600 events", async () => {
    const a = await createWorkspace(app, 'pro');
    const aAdmin = (await createToken(app, a, { role: 'admin' })).token;
    const b = await createWorkspace(app, 'pro');
    const bAdmin = (await createToken(app, b, { role: 'admin' })).token;
    const endpoints: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await callTool(app, aAdmin, 'create_webhook', {
        url: `${hangingUrl}/hang/${i}`,
        events: ['response.created'],
      });
      expect(res.status).toBe(200);
      endpoints.push(res.body.id);
    }
    const healthy = await callTool(app, bAdmin, 'create_webhook', {
      url: receiver.url('/b'),
      events: ['form.created'],
    });
    expect(healthy.status).toBe(200);
    receiver.setSecrets('/b', [healthy.body.secret]);

    // 600 events, 30 per endpoint, as the outbox writes them, all due before B's.
    await db.query(
      `INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
       SELECT $1, e.id, 'msg_hang_' || e.n || '_' || g, 'response.created', '{"type":"response.created"}',
              now() - interval '1 minute' + g * interval '1 ms'
         FROM unnest($2::uuid[]) WITH ORDINALITY AS e(id, n), generate_series(1, 30) g`,
      [a.id, endpoints],
    );
    // A's attempts are under way (the loop polls every half second).
    await waitUntil(async () => heldNow() > 0, 10_000, "A's first attempts reach the hanging receiver");

    // B's event: a form created in B (form.created), written by the tool's own transaction.
    const started = Date.now();
    expect((await callTool(app, bAdmin, 'create_form', { title: 'Fair' })).status).toBe(200);
    await waitUntil(async () => receiver.for('/b').length === 1, 9_000, "B's event reaches B's receiver");
    const tookMs = Date.now() - started;
    console.log(`B's event reached its receiver ${tookMs} ms after it was written, beside 600 hanging ones`);

    // Delivered while A's attempts still hang: none of them has ended (each takes 10 s) or been recorded.
    expect(heldNow()).toBeGreaterThan(0);
    const [{ attempts }] = await db.query(
      `SELECT count(*)::int AS attempts FROM webhook_attempts t JOIN webhook_deliveries d ON d.id = t.delivery_id
        WHERE d.workspace_id = $1`,
      [a.id],
    );
    expect(attempts).toBe(0);
    // A holds at most its workspace's cap of slots, and each endpoint at most its own.
    expect(mostHeld).toBeLessThanOrEqual(MAX_IN_FLIGHT_PER_WORKSPACE);
    expect(Math.max(...held.values())).toBeLessThanOrEqual(MAX_IN_FLIGHT_PER_ENDPOINT);
    expect(receiver.unverified).toEqual([]);
  }, 60_000);
});

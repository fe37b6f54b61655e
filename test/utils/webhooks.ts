import http from 'node:http';
import { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source';
import { runMigrations } from '../../src/database/migrate';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createTestApp, testDatabaseUrl } from './create-test-app';

/** One request the receiver got, with which of the path's secrets verified its signature. */
export interface Received {
  path: string;
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  payload: { type: string; timestamp: string; test?: boolean; data: any }; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The secrets (of those set for the path) that verify it, by the standard's own library. */
  verifiedBy: string[];
  answered: number;
}

/**
 * A local webhook receiver, as a user would write one: every request is verified with the
 * `standardwebhooks` package against the secrets set for its path. A test scripts the answers
 * (status codes, headers) per path; by default 200.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  readonly unverified: Array<{ path: string; reason: string }> = [];
  /** Requests that arrived, answered or not yet (a held answer). */
  arrived = 0;
  private readonly secrets = new Map<string, string[]>();
  private readonly scripts = new Map<
    string,
    Array<{ status: number; headers?: Record<string, string>; hold?: Promise<void>; body?: string | Buffer }>
  >();
  private server?: http.Server;

  private constructor(public port: number) {}

  static async start(port = 0): Promise<WebhookReceiver> {
    const r = new WebhookReceiver(port);
    await r.up();
    return r;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  setSecrets(path: string, secrets: string[]): void {
    this.secrets.set(path, secrets);
  }

  /** The next answers for a path, in order (then 200). `hold` delays an answer until it resolves; `body` replaces "ok" / "not now". */
  script(
    path: string,
    ...answers: Array<{
      status: number;
      headers?: Record<string, string>;
      hold?: Promise<void>;
      body?: string | Buffer;
    }>
  ): void {
    this.scripts.set(path, [...(this.scripts.get(path) ?? []), ...answers]);
  }

  for(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  up(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        this.arrived++;
        const path = req.url ?? '/';
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = {
          'webhook-id': String(req.headers['webhook-id']),
          'webhook-timestamp': String(req.headers['webhook-timestamp']),
          'webhook-signature': String(req.headers['webhook-signature']),
        };
        const verifiedBy: string[] = [];
        let reason = 'no secret set for this path';
        for (const secret of this.secrets.get(path) ?? []) {
          try {
            new Webhook(secret).verify(body, headers);
            verifiedBy.push(secret);
          } catch (err) {
            reason = (err as Error).message;
          }
        }
        if (verifiedBy.length === 0) this.unverified.push({ path, reason });
        const answer = this.scripts.get(path)?.shift() ?? { status: 200 };
        if (answer.hold) await answer.hold;
        this.received.push({
          path,
          id: headers['webhook-id'],
          timestamp: headers['webhook-timestamp'],
          signature: headers['webhook-signature'],
          body,
          payload: JSON.parse(body),
          verifiedBy,
          answered: answer.status,
        });
        res
          .writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers })
          .end(answer.body ?? (answer.status < 300 ? 'ok' : 'not now'));
      });
    });
    return new Promise((resolve) =>
      this.server!.listen(this.port, '127.0.0.1', () => {
        this.port = (this.server!.address() as AddressInfo).port;
        resolve();
      }),
    );
  }

  down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }
}

/**
 * A schema of its own in the run's test database, migrated, for tests whose delivery loops must
 * not meet the other test files' instances (those refuse the loopback receivers). On the embedded
 * database (one schema only), the shared one.
 */
export async function isolatedDatabaseUrl(prefix: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = testDatabaseUrl();
  if (process.env.FORMWORK_TEST_DATABASE_KIND !== 'server') return { url: base, drop: async () => undefined };
  const schema = `${prefix}_${Date.now().toString(36)}_${process.pid}`;
  const admin = new Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const u = new URL(base);
  u.searchParams.set('options', `-c search_path=${schema}`);
  const url = u.toString();
  const ds = await new DataSource(dataSourceOptions(url, 1, false)).initialize();
  await runMigrations(ds, url);
  await ds.destroy();
  return {
    url,
    drop: async () => {
      const c = new Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP SCHEMA ${schema} CASCADE`);
      await c.end();
    },
  };
}

/** The full app as createTestApp builds it, on another database URL (an isolated schema). */
export function createAppOn(url: string, env: Record<string, string> = {}): Promise<NestFastifyApplication> {
  return createTestApp(env, url);
}

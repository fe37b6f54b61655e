import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Helpers for tests that run the BUILT service (dist/) as separate processes behind nginx, with
 * Redis: what runs in production, on loopback. Missing tools fail the test with what to install.
 */

export const ROOT = join(__dirname, '..', '..');
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Fails unless Redis answers PING at REDIS_URL. */
export async function requireRedis(url = REDIS_URL): Promise<void> {
  const { hostname, port } = new URL(url);
  const answer = await new Promise<string>((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port || 6379) });
    let data = '';
    const done = (v: string) => {
      socket.destroy();
      resolve(v);
    };
    socket.setTimeout(2000, () => done('timeout'));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (c) => {
      data += c;
      if (data.includes('\r\n')) done(data.trim());
    });
    socket.on('error', (err) => done(err.message));
  });
  if (answer !== '+PONG') {
    throw new Error(
      `Redis does not answer at ${url} (${answer}). These tests need it: install and start it ` +
        '(apt-get install -y redis-server && redis-server --daemonize yes), or point TEST_REDIS_URL at one.',
    );
  }
}

/** The nginx binary, or a failure saying how to install it. */
export function requireNginx(): string {
  for (const candidate of [process.env.TEST_NGINX, '/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx']) {
    if (candidate && existsSync(candidate)) return candidate;
  }
  try {
    return execFileSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(
      'nginx is not installed. These tests run it as the load balancer: apt-get update && apt-get install -y nginx (.ci/run does), or set TEST_NGINX to its path.',
    );
  }
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds dist/ when it is missing or older than the sources (CI builds before testing, so this is for local runs). */
export function ensureBuilt(): void {
  const main = join(ROOT, 'dist', 'src', 'main.js');
  const built = existsSync(main) ? statSync(main).mtimeMs : 0;
  const sources = Math.max(newestMtime(join(ROOT, 'src')), newestMtime(join(ROOT, 'migrations')));
  if (built >= sources) return;
  try {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      { cwd: ROOT, stdio: 'pipe' },
    );
  } catch (err) {
    const e = err as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(
      `dist/ is older than src/ and \`npm run build\` failed:\n${e.stdout?.toString() ?? ''}${e.stderr?.toString() ?? ''}`,
      { cause: err },
    );
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** A random loopback address other than 127.0.0.1: a client IP of its own for one test (Linux routes all of 127/8 to lo). */
export function randomLoopbackAddress(): string {
  const b = () => 1 + Math.floor(Math.random() * 254);
  return `127.${b()}.${b()}.${b()}`;
}

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/**
 * The source address of requests that do not pick one: chosen once per test run, so that this run's
 * IP budget in the shared Redis is not the one a run a minute ago spent.
 */
export const DEFAULT_SOURCE = randomLoopbackAddress();

const agents = new Map<string, http.Agent>();
/** Keep-alive agents per source address, so that a burst does not open a connection per request. */
function agentFor(localAddress = DEFAULT_SOURCE): http.Agent {
  let agent = agents.get(localAddress);
  if (!agent) {
    agent = new http.Agent({ keepAlive: true, maxSockets: 16, localAddress });
    agents.set(localAddress, agent);
  }
  return agent;
}

export function destroyAgents(): void {
  for (const agent of agents.values()) agent.destroy();
  agents.clear();
}

/** One HTTP request; `from` picks the client's source address (loopback only; DEFAULT_SOURCE otherwise). */
export function httpRequest(
  port: number,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: unknown; from?: string } = {},
): Promise<HttpAnswer> {
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: opts.method ?? (body ? 'POST' : 'GET'),
        agent: agentFor(opts.from),
        headers: {
          ...(body ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

export function callToolAt(
  port: number,
  token: string,
  tool: string,
  body: unknown,
  opts: { headers?: Record<string, string>; from?: string } = {},
) {
  return httpRequest(port, `/api/v1/tools/${tool}`, {
    body,
    from: opts.from,
    headers: { Authorization: `Bearer ${token}`, ...opts.headers },
  });
}

/** The webhook secret key of every test instance started in production (which refuses to start without one). */
export const TEST_WEBHOOK_SECRET_KEY = Buffer.alloc(32, 'formwork test key').toString('base64');

/** A built instance of the service (node dist/src/main.js), its output kept. */
export class Instance {
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;
  private readonly child: ChildProcess;

  private constructor(
    readonly name: string,
    readonly port: number,
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        ...(env.NODE_ENV === 'production' ? { WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY } : {}),
        ...env,
        PORT: String(port),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let partial = '';
    const keep = (chunk: Buffer) => {
      const text = partial + chunk.toString();
      const parts = text.split('\n');
      partial = parts.pop() ?? '';
      this.lines.push(...parts.filter((l) => l.length > 0));
    };
    this.child.stdout!.on('data', keep);
    this.child.stderr!.on('data', keep);
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  /** Starts one and waits until /readyz answers 200 (an embedded database takes longer to boot: give it `readyWithinMs`). */
  static async start(name: string, env: Record<string, string>, readyWithinMs = 45_000): Promise<Instance> {
    const instance = new Instance(name, await freePort(), env);
    try {
      await instance.waitReady(readyWithinMs);
    } catch (err) {
      await instance.stop(1_000);
      throw err;
    }
    return instance;
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  private async waitReady(timeoutMs = 45_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (!this.running) throw new Error(`instance ${this.name} exited during start-up:\n${this.lines.join('\n')}`);
      const ok = await httpRequest(this.port, '/readyz').then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return;
      await sleep(100);
    }
    throw new Error(`instance ${this.name} was not ready within ${timeoutMs} ms:\n${this.lines.join('\n')}`);
  }

  signal(sig: NodeJS.Signals): void {
    if (this.running) this.child.kill(sig);
  }

  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 10_000): Promise<number | null> {
    if (!this.running) return this.exited;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** nginx in the foreground with a config of the test's own, in a temporary prefix. */
export class Nginx {
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly port: number,
  ) {}

  /** `httpConf` is the content of the http block (upstreams and servers). */
  static async start(binary: string, port: number, httpConf: string): Promise<Nginx> {
    const dir = mkdtempSync(join(tmpdir(), 'formwork-nginx-'));
    // Workers may run as an unprivileged user: let them write their temporary files.
    chmodSync(dir, 0o777);
    const conf = join(dir, 'nginx.conf');
    writeFileSync(
      conf,
      [
        'daemon off;',
        'worker_processes 1;',
        `pid ${join(dir, 'nginx.pid')};`,
        `error_log ${join(dir, 'error.log')} warn;`,
        'events { worker_connections 1024; }',
        'http {',
        `  access_log ${join(dir, 'access.log')};`,
        ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(dir, t)};`),
        httpConf,
        '}',
      ].join('\n'),
    );
    const output: string[] = [];
    const child = spawn(binary, ['-p', dir, '-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (c) => output.push(String(c)));
    child.stderr!.on('data', (c) => output.push(String(c)));
    const nginx = new Nginx(child, dir, port);
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      if (child.exitCode !== null) break;
      const up = await new Promise<boolean>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
        s.on('error', () => resolve(false));
      });
      if (up) return nginx;
      await sleep(50);
    }
    const log = existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : '';
    await nginx.stop();
    throw new Error(`nginx did not start:\n${output.join('')}\n${log}`);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.on('exit', resolve));
      this.child.kill('SIGTERM'); // fast shutdown of master and workers
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A TCP relay to a real server that a test can cut and restore (a network outage on demand). */
export class TcpRelay {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();

  constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(target: { host: string; port: number }): Promise<TcpRelay> {
    const relay = new TcpRelay(await freePort(), target);
    await relay.up();
    return relay;
  }

  up(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => this.sockets.delete(s));
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    return new Promise((resolve) => this.server!.listen(this.port, '127.0.0.1', () => resolve()));
  }

  down(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    const server = this.server;
    this.server = undefined;
    return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await sleep(50);
  }
  return Date.now() - start;
}

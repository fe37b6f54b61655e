'use strict';
/**
 * What rate limits (counted in Redis) and Idempotency-Key cost, each measured as a throughput
 * ratio in one run:
 *
 *   limiter       get_form, limits counted in Redis (both budgets, every request)
 *                 vs the same call with RATE_LIMIT_ENABLED=false               target: cost <= 1.3x
 *   limiter+key   the same, every call carrying a fresh Idempotency-Key         target: cost <= 1.3x
 *   key (write)   create_response with a fresh Idempotency-Key vs without one,
 *                 on the server with the limiter on                            target: cost <= 1.5x
 *
 * "cost" is throughput without / throughput with (1.25 means 25% fewer requests per second).
 * Usage: npm run bench:limits   (builds first; needs PostgreSQL and Redis on this machine)
 * Settings: BENCH_DURATION (10 s), BENCH_ROUNDS (2), BENCH_CONNECTIONS (50), BENCH_WARMUP (5 s),
 * BENCH_ADMIN_URL, BENCH_REDIS_URL, BENCH_ONLY=limiter,limiter+key,key (a subset).
 *
 * 1. creates a fresh database formwork_bench_limits_<timestamp>, migrates and seeds it with the
 *    CLI (demo: a Pro workspace, forms and an admin token);
 * 2. starts two instances of dist/: "limits on" (REDIS_URL, both budgets at 1,000,000,000 a
 *    minute, so they count every request and refuse none) and "limits off";
 * 3. for each comparison, warms both sides up, then alternates them (BENCH_ROUNDS rounds of
 *    BENCH_DURATION s, BENCH_CONNECTIONS connections, autocannon);
 * 4. checks that every answer was 200, that the limits on Redis counted (X-RateLimit-Remaining,
 *    /readyz) and that each keyed request stored one key; prints a Markdown report and writes it to
 *    bench/results/limits-<timestamp>.md; stops the servers and drops the database.
 *
 * Exit code: 0 whether the targets are met or not; 1 when the run is not valid.
 */
const { spawn } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const { mkdirSync, writeFileSync, readFileSync } = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const { join, relative } = require('node:path');
const autocannon = require('autocannon');
const { Client } = require('pg');

const ROOT = join(__dirname, '..');
const CLI = join(ROOT, 'dist', 'src', 'cli', 'main.js');
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const RESULTS = join(__dirname, 'results');
const LIMIT = 1_000_000_000;

function envNumber(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

const OPTS = {
  duration: envNumber('BENCH_DURATION', 10),
  connections: envNumber('BENCH_CONNECTIONS', 50),
  rounds: envNumber('BENCH_ROUNDS', 2),
  warmup: envNumber('BENCH_WARMUP', 5),
  adminUrl: process.env.BENCH_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
  redisUrl: process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379',
  /** Comma-separated comparison names (limiter, limiter+key, key) to run only those. */
  only: (process.env.BENCH_ONLY || '').split(',').map((s) => s.trim()).filter(Boolean),
};

const log = (msg) => process.stderr.write(`bench: ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const f0 = (n) => (Number.isFinite(n) ? n.toFixed(0) : '-');
const f1 = (n) => (Number.isFinite(n) ? n.toFixed(1) : '-');
const f2 = (n) => (Number.isFinite(n) ? n.toFixed(2) : '-');

function stamp(d = new Date()) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function run(args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${args.join(' ')} exited ${code}: ${out.slice(0, 2000)}`))));
  });
}

/** user + system CPU of a process so far, in ms (Linux /proc), or undefined elsewhere. */
function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/**
 * CPU (ms) used by the whole machine, and by the processes of this benchmark: this client, its two
 * servers, the postgres backends of its database and Redis. What the machine used beyond those
 * during a round was taken by something else: noise.
 */
function machineSnapshot(serverPids, dbName) {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const busy = ((cpu[0] + cpu[1] + cpu[2]) * 1000) / 100;
    let ours = 0;
    for (const pid of serverPids) ours += cpuMs(pid) || 0;
    for (const entry of require('node:fs').readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const comm = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
        const ofOurs = (comm === 'postgres' && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(dbName)) || comm === 'redis-server';
        if (ofOurs) ours += cpuMs(entry) || 0;
      } catch {
        // the process ended
      }
    }
    const self = process.cpuUsage();
    return { busy, ours: ours + (self.user + self.system) / 1000 };
  } catch {
    return undefined;
  }
}

const servers = [];
let benchDb = '';

class Server {
  constructor(name, env) {
    this.name = name;
    this.port = Number(env.PORT);
    this.output = '';
    this.proc = spawn(process.execPath, [MAIN], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (c) => (this.output = (this.output + c).slice(-8000));
    this.proc.stdout.on('data', keep);
    this.proc.stderr.on('data', keep);
    this.exited = new Promise((resolve) => this.proc.on('exit', (code) => resolve(code)));
  }

  async waitReady() {
    const until = Date.now() + 30_000;
    while (Date.now() < until) {
      if (this.proc.exitCode !== null) throw new Error(`${this.name} exited: ${this.output}`);
      const ok = await fetch(`http://127.0.0.1:${this.port}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      await sleep(200);
    }
    throw new Error(`${this.name} did not become ready: ${this.output}`);
  }

  async stop() {
    if (this.proc.exitCode !== null) return;
    this.proc.kill('SIGTERM');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(t);
  }
}

/** One load: POST `tool` with `body` to `server`, with a fresh Idempotency-Key per request when `keyed`. */
function target(server, token, tool, body, keyed) {
  return { server, token, tool, body: JSON.stringify(body), keyed };
}

async function cannon(t, seconds) {
  const before = cpuMs(t.server.proc.pid);
  const machineBefore = machineSnapshot(servers.map((s) => s.proc.pid), benchDb);
  const headers = { Authorization: `Bearer ${t.token}`, 'Content-Type': 'application/json' };
  const result = await autocannon({
    url: `http://127.0.0.1:${t.server.port}`,
    connections: OPTS.connections,
    duration: seconds,
    timeout: 10,
    // setupRequest on both sides, so that the client does the same work for each.
    requests: [
      {
        method: 'POST',
        path: `/api/v1/tools/${t.tool}`,
        headers,
        body: t.body,
        setupRequest: (req) => (t.keyed ? { ...req, headers: { ...req.headers, 'Idempotency-Key': randomUUID() } } : { ...req }),
      },
    ],
  });
  const after = cpuMs(t.server.proc.pid);
  const machineAfter = machineSnapshot(servers.map((s) => s.proc.pid), benchDb);
  const otherMs = machineBefore && machineAfter ? Math.max(0, machineAfter.busy - machineBefore.busy - (machineAfter.ours - machineBefore.ours)) : NaN;
  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats || {}).map(([code, s]) => [code, s.count]));
  const problems = [];
  if (result.non2xx > 0 || Object.keys(statuses).some((c) => c !== '200')) problems.push(`answers other than 200: ${JSON.stringify(statuses)}`);
  if (result.errors + result.timeouts > 0) problems.push(`${result.errors} errors, ${result.timeouts} timeouts`);
  return {
    rps: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result['2xx'],
    cpuPerReq: before === undefined || after === undefined ? NaN : (after - before) / (result['2xx'] || 1),
    otherPct: (100 * otherMs) / (result.duration * 1000),
    problems,
  };
}

async function main() {
  const started = new Date();
  const ts = stamp(started);
  const dbName = `formwork_bench_limits_${ts.replace('-', '_')}`;
  const dbUrl = new URL(OPTS.adminUrl);
  dbUrl.pathname = `/${dbName}`;
  benchDb = dbName;
  const problems = [];
  const notes = [];
  let dbCreated = false;

  const cleanup = async () => {
    for (const s of servers.splice(0)) await s.stop().catch(() => undefined);
    if (!dbCreated) return;
    const admin = new Client({ connectionString: OPTS.adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch((err) => log(`could not drop ${dbName}: ${err.message}`));
    await admin.end();
    log(`dropped database ${dbName}`);
  };
  process.on('SIGINT', () => cleanup().finally(() => process.exit(130)));

  try {
    for (const file of [CLI, MAIN]) readFileSync(file);
    const redisPing = await new Promise((resolve) => {
      const { hostname, port } = new URL(OPTS.redisUrl);
      const s = net.connect(Number(port || 6379), hostname, () => s.write('PING\r\n'));
      s.on('data', (d) => (s.destroy(), resolve(String(d).trim())));
      s.on('error', (e) => resolve(e.message));
    });
    if (redisPing !== '+PONG') throw new Error(`Redis does not answer at ${OPTS.redisUrl} (${redisPing}); set BENCH_REDIS_URL`);

    const admin = new Client({ connectionString: OPTS.adminUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${dbName}"`);
    await admin.end();
    dbCreated = true;
    log(`created database ${dbName}`);

    const baseEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
    const cliEnv = { ...baseEnv, DATABASE_URL: dbUrl.toString(), NODE_ENV: 'production', LOG_LEVEL: 'warn' };
    await run([CLI, 'migrate', '--json'], cliEnv);
    const demo = JSON.parse((await run([CLI, 'demo', '--json'], cliEnv)).trim().split('\n').pop());
    const publicId = demo.forms[0];

    const serverEnv = (port, extra) => ({
      ...baseEnv,
      PORT: String(port),
      DATABASE_URL: dbUrl.toString(),
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      BOOTSTRAP_DEMO: 'false',
      ...extra,
    });
    const on = new Server('limits on (Redis)', serverEnv(await freePort(), { REDIS_URL: OPTS.redisUrl, RATE_LIMIT_CREDENTIAL_PER_MIN: String(LIMIT), RATE_LIMIT_IP_PER_MIN: String(LIMIT) }));
    const off = new Server('limits off', serverEnv(await freePort(), { RATE_LIMIT_ENABLED: 'false' }));
    servers.push(on, off);
    await Promise.all([on.waitReady(), off.waitReady()]);
    const ready = await (await fetch(`http://127.0.0.1:${on.port}/readyz`)).json();
    if (ready.rateLimits !== 'shared') throw new Error(`the "limits on" server does not count in Redis: ${JSON.stringify(ready)}`);

    // Answers for create_response: every required block gets a value its type accepts.
    const form = await (
      await fetch(`http://127.0.0.1:${on.port}/api/v1/tools/get_form`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ publicId }),
      })
    ).json();
    const sample = { short_text: 'Bench', long_text: 'Bench', email: 'bench@example.com', url: 'https://example.com', phone: '+33123456789', number: 1, rating: 3, linear_scale: 3, date: '2026-01-01', yes_no: true };
    const answers = {};
    for (const b of form.blocks) {
      if (b.type in sample) answers[b.id] = sample[b.type];
      else if (b.choices) answers[b.id] = b.type === 'checkboxes' ? [b.choices[0].label] : b.choices[0].label;
      if (b.type === 'rating' || b.type === 'linear_scale') answers[b.id] = Math.min(b.max ?? 3, 3);
      if (b.type === 'number') answers[b.id] = b.min ?? 1;
    }
    for (const [s, t, body] of [
      [on, 'get_form', { publicId }],
      [on, 'create_response', { publicId, answers }],
    ]) {
      const r = await fetch(`http://127.0.0.1:${s.port}/api/v1/tools/${t}`, { method: 'POST', headers: { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
      if (r.status !== 200) throw new Error(`${t} answered ${r.status}: ${await r.text()}`);
    }

    const all = [
      {
        name: 'limiter',
        what: 'get_form: limits counted in Redis vs RATE_LIMIT_ENABLED=false',
        target: 1.3,
        with: target(on, demo.token, 'get_form', { publicId }, false),
        without: target(off, demo.token, 'get_form', { publicId }, false),
      },
      {
        name: 'limiter + key',
        what: 'get_form with a fresh Idempotency-Key per call: limits in Redis vs off',
        target: 1.3,
        with: target(on, demo.token, 'get_form', { publicId }, true),
        without: target(off, demo.token, 'get_form', { publicId }, true),
      },
      {
        name: 'key (write)',
        what: 'create_response with a fresh Idempotency-Key vs without, limits on (Redis)',
        target: 1.5,
        with: target(on, demo.token, 'create_response', { publicId, answers }, true),
        without: target(on, demo.token, 'create_response', { publicId, answers }, false),
      },
    ];
    const short = { limiter: 'limiter', 'limiter + key': 'limiter+key', 'key (write)': 'key' };
    const comparisons = OPTS.only.length ? all.filter((c) => OPTS.only.includes(short[c.name])) : all;
    if (comparisons.length === 0) throw new Error(`BENCH_ONLY=${OPTS.only.join(',')} names no comparison: use limiter, limiter+key, key`);

    const keysBefore = await countKeys(dbUrl);
    let keyedRequests = 0;
    const rows = [];
    for (const c of comparisons) {
      for (const side of ['without', 'with']) {
        log(`${c.name}: warm-up ${side} (${OPTS.warmup} s)`);
        const w = await cannon(c[side], OPTS.warmup);
        if (c[side].keyed) keyedRequests += w.total;
        for (const p of w.problems) problems.push(`${c.name} warm-up ${side}: ${p}`);
      }
      for (let round = 1; round <= OPTS.rounds; round++) {
        for (const side of ['without', 'with']) {
          const fig = await cannon(c[side], OPTS.duration);
          if (c[side].keyed) keyedRequests += fig.total;
          rows.push({ comparison: c.name, side, round, ...fig });
          log(`${c.name} round ${round} ${side}: ${f0(fig.rps)} req/s, p50 ${f1(fig.p50)} ms, p99 ${f1(fig.p99)} ms, ${f2(fig.cpuPerReq)} ms CPU/req, other processes ${f0(fig.otherPct)}% of a core`);
          for (const p of fig.problems) problems.push(`${c.name} round ${round} ${side}: ${p}`);
        }
      }
    }

    // The limits counted, in Redis, and refused nothing; every keyed request stored its key.
    const after = await fetch(`http://127.0.0.1:${on.port}/api/v1/tools/get_form`, { method: 'POST', headers: { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ publicId }) });
    const remaining = Number(after.headers.get('x-ratelimit-remaining'));
    if (!(remaining < LIMIT - 1)) problems.push(`the limits did not count: X-RateLimit-Remaining ${remaining}`);
    else notes.push(`Limits counted in Redis: after the load, \`X-RateLimit-Remaining: ${remaining}\` of ${LIMIT} (requests in the current window).`);
    const keysStored = (await countKeys(dbUrl)) - keysBefore;
    // (A few more may be stored than counted: requests in flight when a round ends are answered after it.)
    if (keysStored < keyedRequests) problems.push(`${keyedRequests} keyed requests were answered but only ${keysStored} keys were stored`);
    else notes.push(`Every keyed request stored its key: ${keyedRequests} answered by the end of their rounds, ${keysStored} records.`);

    const lines = [
      `# Rate limits and Idempotency-Key: cost, ${started.toISOString()}`,
      '',
      '| comparison | what | req/s without | req/s with | cost (without/with) | target | verdict |',
      '| --- | --- | ---: | ---: | ---: | ---: | --- |',
    ];
    for (const c of comparisons) {
      const rs = rows.filter((r) => r.comparison === c.name);
      const without = mean(rs.filter((r) => r.side === 'without').map((r) => r.rps));
      const withIt = mean(rs.filter((r) => r.side === 'with').map((r) => r.rps));
      const cost = without / withIt;
      lines.push(`| ${c.name} | ${c.what} | ${f0(without)} | ${f0(withIt)} | **${f2(cost)}x** | <= ${c.target}x | ${problems.length ? 'NOT VALID' : cost <= c.target ? 'PASS' : 'FAIL'} |`);
    }
    lines.push(
      '',
      '| comparison | round | side | req/s | p50 (ms) | p99 (ms) | 2xx | server CPU ms/req | other processes (% of a core) |',
      '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const r of rows) lines.push(`| ${r.comparison} | ${r.round} | ${r.side} | ${f0(r.rps)} | ${f1(r.p50)} | ${f1(r.p99)} | ${r.total} | ${f2(r.cpuPerReq)} | ${f0(r.otherPct)} |`);
    const noisy = rows.filter((r) => r.otherPct > 25);
    if (noisy.length) notes.push(`**Noisy**: other processes took more than 25% of a core in ${noisy.length} of ${rows.length} rounds; run it again on a quiet machine.`);
    lines.push(
      '',
      `- Load: autocannon ${require('autocannon/package.json').version}, ${OPTS.connections} connections, ${OPTS.rounds} rounds of ${OPTS.duration} s per side, alternating, after ${OPTS.warmup} s of warm-up; client, servers, PostgreSQL and Redis share the machine (compare ratios within this run).`,
      `- Servers: dist/ with NODE_ENV=production, LOG_LEVEL=warn, default pool; "limits on" counts both budgets in Redis at ${OPTS.redisUrl} (limits ${LIMIT}/min so that none refuses), "limits off" has RATE_LIMIT_ENABLED=false. Form \`${publicId}\` of the CLI demo; fresh database \`${dbName}\`, dropped afterwards.`,
      `- Machine: ${os.cpus().length} × ${os.cpus()[0] ? os.cpus()[0].model.trim() : 'unknown CPU'}; Node ${process.version}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' / ')} at the end.`,
      ...notes.map((n) => `- ${n}`),
      ...(problems.length ? ['', '## Problems', '', ...problems.map((p) => `- ${p}`)] : []),
      '',
    );
    const md = lines.join('\n');
    process.stdout.write(`\n${md}\n`);
    mkdirSync(RESULTS, { recursive: true });
    const file = join(RESULTS, `limits-${ts}.md`);
    writeFileSync(file, md);
    log(`wrote ${relative(ROOT, file)}`);
    process.exitCode = problems.length ? 1 : 0;
  } catch (err) {
    log(`FAILED: ${err.stack || err.message}`);
    process.exitCode = 1;
  } finally {
    await cleanup();
  }
}

async function countKeys(url) {
  const c = new Client({ connectionString: url.toString() });
  await c.connect();
  try {
    return (await c.query('SELECT count(*)::int AS n FROM idempotency_keys')).rows[0].n;
  } finally {
    await c.end();
  }
}

main();

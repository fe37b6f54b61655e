'use strict';
/**
 * What the benchmarks in bench/ share: settings from the environment, a fresh database per run,
 * the CLI (migrate, demo), server child processes, autocannon rounds with the CPU of each process
 * from /proc, the "noisy machine" check, cleanup on exit and on signals, and the report's common
 * lines. Each benchmark keeps its own measurements, checks, tables and verdicts.
 */
const { spawn, execFileSync } = require('node:child_process');
const { mkdirSync, writeFileSync, readFileSync, readdirSync, openSync, closeSync } = require('node:fs');
const { randomUUID } = require('node:crypto');
const net = require('node:net');
const os = require('node:os');
const { join, relative, resolve } = require('node:path');
const autocannon = require('autocannon');
const { Client } = require('pg');

const ROOT = join(__dirname, '..');
/** BENCH_DIST: a build elsewhere (`tsc -p tsconfig.build.json --outDir <dir>`) measured instead of dist/, its CLI included. */
const DIST = join(process.env.BENCH_DIST ? resolve(process.env.BENCH_DIST) : join(ROOT, 'dist'), 'src');
const CLI = join(DIST, 'cli', 'main.js');
const MAIN = join(DIST, 'main.js');
const RESULTS = join(__dirname, 'results');
const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
/** High enough that the rate-limit budgets count every request but never refuse one. */
const RATE_LIMIT = 1_000_000_000;
/** A round during which other processes took more than this (% of one core) is flagged noisy. */
const NOISY_OTHER_PCT = 25;
/**
 * A round during which the hypervisor took more than this (% of one core) from this virtual
 * machine ("steal") is flagged noisy: no process shows it, and every figure of the round suffers.
 */
const NOISY_STEAL_PCT = 5;

const log = (msg) => process.stderr.write(`bench: ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- settings ------------------------------------------------------------------------------------

/** A number from the environment (or `fallback`): positive, or at least `min`, and whole with `integer`. */
function envNumber(name, fallback, { integer = false, min } = {}) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  const bad = !Number.isFinite(n) || (min === undefined ? n <= 0 : n < min) || (integer && !Number.isInteger(n));
  if (bad)
    throw new Error(
      `${name} must be ${min === undefined ? `a positive ${integer ? 'integer' : 'number'}` : `a${integer ? 'n integer' : ' number'} >= ${min}`}, got "${raw}"`,
    );
  return n;
}

/** An on/off switch from the environment: on for 1, true or yes. */
const envFlag = (name) => ['1', 'true', 'yes'].includes(String(process.env[name] || '').toLowerCase());

/** The settings every load benchmark takes (BENCH_DURATION, _CONNECTIONS, _ROUNDS, _WARMUP, _ADMIN_URL), with its own defaults. */
function loadOptions({ connections, rounds }) {
  return {
    duration: envNumber('BENCH_DURATION', 10),
    connections: envNumber('BENCH_CONNECTIONS', connections, { integer: true, min: 1 }),
    rounds: envNumber('BENCH_ROUNDS', rounds, { integer: true, min: 1 }),
    warmup: envNumber('BENCH_WARMUP', 5),
    adminUrl: process.env.BENCH_ADMIN_URL || DEFAULT_ADMIN_URL,
  };
}

/** Local time as YYYYMMDD-HHMMSS, for file and database names. */
function stamp(d = new Date()) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/** Throws a clear message when the build is missing (`npm run <script>` builds first). */
function requireBuilt(files, script) {
  for (const file of files) {
    try {
      readFileSync(file);
    } catch {
      throw new Error(`${relative(ROOT, file)} is missing: run \`npm run build\` first (\`npm run ${script}\` does)`);
    }
  }
}

// --- child processes -----------------------------------------------------------------------------

/** Runs a command in the project root, returns { code, stdout, stderr }. */
function run(cmd, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs a node script (the CLI with --json) that prints one JSON object; throws unless it exits 0 with JSON. */
async function runJson(label, args, env) {
  const r = await run(process.execPath, args, env);
  let json;
  try {
    json = JSON.parse(r.stdout.trim().split('\n').pop());
  } catch {
    json = undefined;
  }
  if (r.code !== 0 || !json || json.error) {
    const err = new Error(
      `${label} failed (exit ${r.code}): ${(r.stdout + r.stderr).trim().slice(0, 2000) || '(no output)'}`,
    );
    err.result = r;
    throw err;
  }
  return json;
}

/** A TCP port free on 127.0.0.1 right now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** This process's environment without the service settings a benchmark sets itself. */
function cleanEnv() {
  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (
      /^(PORT|PUBLIC_URL|DATABASE_URL|DATA_DIR|REDIS_URL|TRUST_PROXY|RATE_LIMIT_.*|API_V1_.*|BOOTSTRAP_DEMO|NODE_ENV|LOG_LEVEL|DATABASE_POOL_SIZE|NODE_OPTIONS)$/.test(
        k,
      )
    )
      delete env[k];
  }
  // Production refuses to start without it (it encrypts the webhook secrets); one for every bench instance.
  env.WEBHOOK_SECRET_KEY ??= BENCH_WEBHOOK_SECRET_KEY;
  return env;
}

/** The webhook secret key of the instances under test (and their CLI), in production. */
const BENCH_WEBHOOK_SECRET_KEY = Buffer.alloc(32, 'formwork bench key').toString('base64');

/** The environment of the built service under test: production, quiet, no demo bootstrap; `extra` on top. */
const serviceEnv = (base, port, dbUrl, extra = {}) => ({
  ...base,
  PORT: String(port),
  DATABASE_URL: dbUrl,
  NODE_ENV: 'production',
  LOG_LEVEL: 'warn',
  BOOTSTRAP_DEMO: 'false',
  ...extra,
});

/**
 * Both rate limits at RATE_LIMIT a minute: on and counting, never refusing. The spam gate's rates
 * likewise (issue 47): counted, never asking the load generator's posts for a challenge.
 */
const COUNTING_LIMITS = {
  RATE_LIMIT_CREDENTIAL_PER_MIN: String(RATE_LIMIT),
  RATE_LIMIT_IP_PER_MIN: String(RATE_LIMIT),
  SPAM_CHALLENGE_FORM_POSTS_PER_MIN: String(RATE_LIMIT),
  SPAM_CHALLENGE_IP_POSTS_PER_MIN: String(RATE_LIMIT),
};

/** Pids of the servers running now (all of them use CPU the benchmark accounts for). */
const liveServerPids = new Set();

/** A server child process (node `args`), its output kept (the tail) for error messages. */
class Server {
  /**
   * `binary`: what runs `args` (node unless given).
   * `stdout`: a file (path) for the server's standard output instead of a pipe to this process,
   * e.g. '/dev/null' for a service logging every request: the log is produced and written, but
   * the load generator does not pay for reading it. Its standard error is always kept.
   */
  constructor(name, args, env, { stdout, binary = process.execPath } = {}) {
    this.name = name;
    this.output = '';
    this.exited = null;
    this.env = env;
    this.port = env.PORT ? Number(env.PORT) : undefined;
    const out = stdout ? openSync(stdout, 'a') : 'pipe';
    this.proc = spawn(binary, args, { cwd: ROOT, env, stdio: ['ignore', out, 'pipe'] });
    if (stdout) closeSync(out);
    liveServerPids.add(this.proc.pid);
    const keep = (c) => {
      this.output = (this.output + c).slice(-8000);
    };
    this.proc.stdout?.on('data', keep);
    this.proc.stderr.on('data', keep);
    this.exitPromise = new Promise((resolve) => {
      this.proc.on('exit', (code, signal) => {
        liveServerPids.delete(this.proc.pid);
        this.exited = { code, signal };
        resolve(this.exited);
      });
    });
  }

  assertAlive() {
    if (this.exited) {
      throw new Error(
        `${this.name} exited (code ${this.exited.code}, signal ${this.exited.signal}); its output:\n${this.output.trim()}`,
      );
    }
  }

  /** Polls `check` until it returns true, the process dies, or the time is up. */
  async waitUntil(check, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    let last;
    while (Date.now() < deadline) {
      this.assertAlive();
      try {
        if (await check()) return;
      } catch (err) {
        last = err;
      }
      await sleep(200);
    }
    throw new Error(
      `${this.name} did not answer within ${timeoutMs / 1000} s${last ? ` (${last.message})` : ''}; its output:\n${this.output.trim()}`,
    );
  }

  /** SIGTERM, then SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 10_000) {
    if (this.exited) return this.exited;
    this.proc.kill('SIGTERM');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), timeoutMs);
    const result = await this.exitPromise;
    clearTimeout(t);
    return result;
  }
}

/** One POST, its body read as text. */
async function post(url, headers, body, timeoutMs = 30_000) {
  const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text };
}

// --- database ------------------------------------------------------------------------------------

/** `base` (a postgres:// URL) pointing at another database. */
function urlWithDatabase(base, database) {
  const u = new URL(base);
  u.pathname = `/${database}`;
  return u.toString();
}

/** The fresh database of one run: created on the admin connection, dropped by drop() unless `keep`. */
class BenchDatabase {
  constructor(adminUrl, name, { keep = false } = {}) {
    this.adminUrl = adminUrl;
    this.name = name;
    this.url = urlWithDatabase(adminUrl, name);
    this.keep = keep;
    this.created = false;
  }

  /** Creates it; returns the server's version and the values of `settings` (SHOW names). */
  async create(settings = []) {
    const admin = new Client({ connectionString: this.adminUrl });
    await admin.connect();
    const values = {};
    let version;
    try {
      version = (await admin.query('SHOW server_version')).rows[0].server_version;
      for (const name of settings) values[name] = (await admin.query(`SHOW ${name}`)).rows[0][name];
      await admin.query(`CREATE DATABASE "${this.name}"`);
      this.created = true;
    } finally {
      await admin.end();
    }
    log(`created database ${this.name}`);
    return { version, settings: values };
  }

  /** Drops it (FORCE ends its sessions), or says it is kept. */
  async drop() {
    if (!this.created) return;
    if (this.keep) {
      log(`kept database ${this.name} (BENCH_KEEP_DB)`);
      return;
    }
    const admin = new Client({ connectionString: this.adminUrl });
    try {
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS "${this.name}" WITH (FORCE)`);
      this.created = false;
      log(`dropped database ${this.name}`);
    } catch (err) {
      log(`could not drop database ${this.name}: ${err.message}`);
    } finally {
      await admin.end().catch(() => undefined);
    }
  }
}

/** A run's start: its time, its stamp (YYYYMMDD-HHMMSS) and its fresh database `${dbPrefix}_<stamp>`, not created yet. */
function startRun(dbPrefix, { adminUrl, keepDb = false }) {
  const started = new Date();
  const ts = stamp(started);
  return {
    started,
    ts,
    database: new BenchDatabase(adminUrl, `${dbPrefix}_${ts.replace('-', '_')}`, { keep: keepDb }),
  };
}

/**
 * Migrates the database with the CLI and seeds it with the CLI's demo. When the demo fails, seeds
 * with bench/seed-demo.js (the same compiled DemoService) instead and returns the CLI's error as
 * `cliDemoError`, for the report to say so. Returns { demo: { token, forms, ... }, cliDemoError }.
 */
async function migrateAndSeed(cliEnv) {
  const migrated = await runJson('migrate (CLI)', [CLI, 'migrate', '--json'], cliEnv);
  log(`migrated: ${(migrated.migrations || []).join(', ') || 'nothing to run'}`);
  let demo;
  let cliDemoError;
  try {
    demo = await runJson('demo (CLI)', [CLI, 'demo', '--json'], cliEnv);
    log('seeded with the CLI demo');
  } catch (err) {
    cliDemoError = err.message.split('\n')[0].slice(0, 400);
    log(`WARNING: the CLI demo failed, seeding with bench/seed-demo.js (same DemoService) instead: ${cliDemoError}`);
    demo = await runJson('demo (bench/seed-demo.js)', [join(__dirname, 'seed-demo.js')], cliEnv);
  }
  if (typeof demo.token !== 'string' || !Array.isArray(demo.forms) || demo.forms.length === 0) {
    throw new Error(`the demo output has no token or forms: ${JSON.stringify(demo).slice(0, 500)}`);
  }
  return { demo, cliDemoError };
}

// --- cleanup -------------------------------------------------------------------------------------

/**
 * What a run must undo, in this order: close its connections, stop its servers, drop its database.
 * run() once at the end (also after a failure); onSignals() does it on SIGINT/SIGTERM, then exits 130.
 */
class Teardown {
  constructor() {
    /** Functions that close a connection to the database. */
    this.closers = new Set();
    /** Servers still to stop (a benchmark may stop and remove some itself). */
    this.servers = [];
    /** A BenchDatabase, once there is one. */
    this.database = undefined;
    /** Set by a signal: the cleanup then runs from the handler, and the error it causes is not reported. */
    this.interrupted = false;
  }

  async run() {
    for (const close of [...this.closers]) await close().catch(() => undefined);
    this.closers.clear();
    for (const s of this.servers.splice(0)) {
      try {
        await s.stop();
      } catch (err) {
        log(`could not stop ${s.name}: ${err.message}`);
      }
    }
    if (this.database) await this.database.drop();
  }

  /** On SIGINT or SIGTERM: log `${signal}: ${what}`, clean up, exit 130. */
  onSignals(what) {
    const handler = (signal) => {
      if (this.interrupted) return;
      this.interrupted = true;
      log(`${signal}: ${what}`);
      this.run().finally(() => process.exit(130));
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  }
}

/** Runs `main`, then `teardown` (unless a signal already did); a failure is logged and exits 1. */
function runMain(main, teardown) {
  const body = async () => {
    try {
      await main();
    } finally {
      if (!teardown.interrupted) await teardown.run();
    }
  };
  body().catch((err) => {
    if (teardown.interrupted) return;
    log(`FAILED: ${err && err.stack ? err.stack : String(err)}`);
    process.exitCode = 1;
  });
}

// --- CPU accounting (Linux /proc; undefined elsewhere) -------------------------------------------

let clockTicks;
function ticksToMs(ticks) {
  if (clockTicks === undefined) {
    try {
      clockTicks =
        Number(
          execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(),
        ) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return (ticks * 1000) / clockTicks;
}

/** user + system CPU time of a process so far, in ms, or undefined. */
function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ticksToMs(Number(fields[11]) + Number(fields[12]));
  } catch {
    return undefined;
  }
}

/**
 * CPU used so far (ms) on the whole machine (user + nice + system, /proc/stat), by this process
 * (the client), by each live server, and by each backend: the postgres processes serving `dbName`
 * (their process title names it) and any process named in `alsoOurs` (e.g. redis-server).
 * Undefined where /proc is missing.
 */
function cpuSnapshot(dbName, alsoOurs = []) {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const busy = ticksToMs(cpu[0] + cpu[1] + cpu[2]);
    // Time the hypervisor gave this machine's CPUs to someone else (field 8): noise no process shows.
    const steal = ticksToMs(cpu[7] || 0);
    const servers = new Map();
    for (const pid of liveServerPids) servers.set(pid, cpuMs(pid));
    const backends = new Map();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const comm = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
        const ours =
          (comm === 'postgres' && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(dbName)) ||
          alsoOurs.includes(comm);
        if (ours) backends.set(entry, cpuMs(entry) || 0);
      } catch {
        // the process ended
      }
    }
    const self = process.cpuUsage();
    return { busy, steal, self: (self.user + self.system) / 1000, servers, backends };
  } catch {
    return undefined;
  }
}

/**
 * Between two snapshots, in ms: `server` (the process `serverPid`), `backends` (postgres and the
 * like), and `other`: what the machine used beyond the client, the servers and the backends, i.e.
 * what something else took. {} without /proc.
 */
function cpuBetween(before, after, serverPid) {
  if (!before || !after) return {};
  // A process that started in between counts whole; one that ended in between cannot be counted.
  const used = (a, b) => {
    let ms = 0;
    for (const [pid, now] of a) ms += (now || 0) - (b.get(pid) || 0);
    return ms;
  };
  const servers = used(after.servers, before.servers);
  const backends = used(after.backends, before.backends);
  const client = after.self - before.self;
  const s0 = before.servers.get(serverPid);
  const s1 = after.servers.get(serverPid);
  return {
    server: s0 === undefined || s1 === undefined ? undefined : s1 - s0,
    backends,
    other: Math.max(0, after.busy - before.busy - client - servers - backends),
    steal: after.steal - before.steal,
  };
}

// --- load ------------------------------------------------------------------------------------------

/**
 * One autocannon run (`options` as autocannon takes them; timeout 10 s unless given) with CPU
 * snapshots around it: result.cpu is cpuBetween() for `serverPid`. With `exact`, result.exactLatencies
 * holds every 2xx response's own time (autocannon's histogram rounds to whole ms).
 */
async function loadRun(options, { serverPid, dbName, alsoOurs = [], exact = false }) {
  const before = cpuSnapshot(dbName, alsoOurs);
  const latencies = [];
  const instance = autocannon({ timeout: 10, ...options });
  if (exact) {
    instance.on('response', (_client, status, _bytes, responseTime) => {
      if (status >= 200 && status < 300) latencies.push(responseTime);
    });
  }
  const result = await instance;
  const after = cpuSnapshot(dbName, alsoOurs);
  result.cpu = cpuBetween(before, after, serverPid);
  if (exact) result.exactLatencies = latencies;
  return result;
}

/**
 * loadRun() of a target { server, url, headers, body, keyed?, method? }: POST (or `method`), `connections` connections,
 * `seconds` long; with `keyed`, every request carries a fresh Idempotency-Key. `alsoOurs` as in
 * cpuSnapshot() (e.g. ['redis-server'] when the server counts budgets in Redis).
 */
const loadTarget = (target, seconds, { connections, dbName, exact = false, alsoOurs = [] }) =>
  loadRun(
    {
      url: target.url,
      connections,
      duration: seconds,
      // setupRequest on every target, so that the client does the same work for each.
      requests: [
        {
          method: target.method ?? 'POST',
          headers: target.headers,
          body: target.body,
          setupRequest: (req) =>
            target.keyed ? { ...req, headers: { ...req.headers, 'Idempotency-Key': randomUUID() } } : { ...req },
        },
      ],
    },
    { serverPid: target.server.proc.pid, dbName, exact, alsoOurs },
  );

/** Answers to every block of a form (as get_form shows it) that create_response accepts. */
function sampleAnswers(form) {
  const sample = {
    short_text: 'Bench',
    long_text: 'Bench',
    email: 'bench@example.com',
    url: 'https://example.com',
    phone: '+33123456789',
    number: 1,
    rating: 3,
    linear_scale: 3,
    date: '2026-01-01',
    yes_no: true,
  };
  const answers = {};
  for (const b of form.blocks) {
    if (b.type in sample) answers[b.id] = sample[b.type];
    else if (b.choices) answers[b.id] = b.type === 'checkboxes' ? [b.choices[0].label] : b.choices[0].label;
    if (b.type === 'rating' || b.type === 'linear_scale') answers[b.id] = Math.min(b.max ?? 3, 3);
    if (b.type === 'number') answers[b.id] = b.min ?? 1;
  }
  return answers;
}

/** Counts of the answers of a run by HTTP status. */
const statusCounts = (result) =>
  Object.fromEntries(Object.entries(result.statusCodeStats || {}).map(([code, s]) => [code, s.count]));

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}

/** The figures of one loadRun(), and what was wrong with it (anything but 200, errors, timeouts). */
function figures(result) {
  const statuses = statusCounts(result);
  const problems = [];
  if (result.non2xx > 0)
    problems.push(`${result.non2xx} responses were not 2xx (status counts: ${JSON.stringify(statuses)})`);
  const not200 = Object.entries(statuses).filter(([code]) => code !== '200');
  if (not200.length && result.non2xx === 0) problems.push(`responses other than 200: ${JSON.stringify(statuses)}`);
  if (result.errors > 0) problems.push(`${result.errors} connection errors`);
  if (result.timeouts > 0) problems.push(`${result.timeouts} timeouts`);
  if (result.resets > 0) problems.push(`${result.resets} connection resets`);
  if (!result['2xx']) problems.push('no successful response at all');
  const lat = result.exactLatencies ? Float64Array.from(result.exactLatencies).sort() : undefined;
  const answered = result['2xx'] + result.non2xx || 1;
  const { server, backends, other, steal } = result.cpu || {};
  const ms = result.duration * 1000;
  return {
    // Successful requests over the measured time: autocannon's own "Req/Sec" averages per-second
    // samples, which under-count when the client's event loop is late for a sample.
    rps: result['2xx'] / result.duration,
    p50: lat ? percentile(lat, 50) : result.latency.p50,
    p99: lat ? percentile(lat, 99) : result.latency.p99,
    meanLat: lat ? (lat.length ? lat.reduce((a, b) => a + b, 0) / lat.length : NaN) : result.latency.mean,
    total: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    // The server process's CPU: % of one core over the run, and ms per answered request.
    cpuPct: server === undefined ? NaN : (100 * server) / ms,
    cpuPerReq: server === undefined ? NaN : server / answered,
    // The backends' CPU (postgres of this database) per answered request.
    pgPerReq: backends === undefined ? NaN : backends / answered,
    // CPU that processes outside the benchmark took during the run, % of one core: noise.
    otherPct: other === undefined ? NaN : (100 * other) / ms,
    // CPU the hypervisor took from this machine during the run, % of one core: noise too.
    stealPct: steal === undefined ? NaN : (100 * steal) / ms,
    problems,
  };
}

/**
 * Warm-up, then alternating rounds: each target is loaded once for `warmup` s, then all of them in
 * turn, `rounds` times, `duration` s each (the settings of loadOptions()), so that drift of the
 * shared machine hits them alike. `balanced`: every other round takes the targets in reverse order
 * (A B, B A, A B, ...), so that a machine that drifts during the run does not always favour the
 * target that goes first.
 * `measure(target, seconds)` runs one load and returns its figures; `before(target, phase)` and
 * `after(target, phase, figures)` are called around it, phase being 'warm-up' or the round number.
 */
async function alternateRounds(
  targets,
  { warmup, rounds, duration },
  { measure, before = () => undefined, after, balanced = false },
) {
  for (const t of targets) {
    before(t, 'warm-up');
    after(t, 'warm-up', await measure(t, warmup));
  }
  for (let round = 1; round <= rounds; round++) {
    for (const t of balanced && round % 2 === 0 ? [...targets].reverse() : targets) {
      before(t, round);
      after(t, round, await measure(t, duration));
    }
  }
}

/**
 * The usual before/after of alternateRounds (`opts` as given to it, with `connections`): logs each
 * warm-up and round (`line(figures)` says how a round went), adds their problems to `problems`, and each round to `rows` as
 * { round: '1', ...fields(target), ...figures }.
 */
function roundLog(opts, { label, fields, line, problems, rows }) {
  return {
    before(t, phase) {
      if (phase === 'warm-up') log(`warm-up ${label(t)} (${opts.warmup} s)`);
      else log(`round ${phase}/${opts.rounds}: ${label(t)} (${opts.duration} s, ${opts.connections} connections)`);
    },
    after(t, phase, fig) {
      if (phase === 'warm-up') {
        if (fig.problems.length) problems.push(`${label(t)} warm-up: ${fig.problems.join('; ')}`);
        return;
      }
      rows.push({ round: String(phase), ...fields(t), ...fig });
      log(`  ${line(fig)}${fig.problems.length ? `, PROBLEMS: ${fig.problems.join('; ')}` : ''}`);
      for (const p of fig.problems) problems.push(`round ${phase} ${label(t)}: ${p}`);
    },
  };
}

/**
 * The rate-limit headers of an answer after the load, which must show counting at RATE_LIMIT.
 * Returns { limit, remaining, counted, problems }.
 */
function rateLimitsAfterLoad(res) {
  const limit = Number(res.headers.get('x-ratelimit-limit'));
  const remaining = Number(res.headers.get('x-ratelimit-remaining'));
  const problems = [];
  if (res.status !== 200) problems.push(`formwork answered ${res.status} after the load: ${res.text.slice(0, 300)}`);
  const counted = limit === RATE_LIMIT && remaining < RATE_LIMIT - 1;
  if (!counted)
    problems.push(`the rate-limit headers after the load do not show counting: limit ${limit}, remaining ${remaining}`);
  return { limit, remaining, counted, problems };
}

// --- figures and report -----------------------------------------------------------------------------

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
/** The middle value (the mean of the two middle ones for an even count). */
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const f0 = (n) => (Number.isFinite(n) ? n.toFixed(0) : '-');
const f1 = (n) => (Number.isFinite(n) ? n.toFixed(1) : '-');
const f2 = (n) => (Number.isFinite(n) ? n.toFixed(2) : '-');
const f3 = (n) => (Number.isFinite(n) ? n.toFixed(3) : '-');

/** A table's "mean" row over `rows`: the mean of each of `keys`, and the sums of 2xx, non-2xx and errors. */
function meanRow(rows, keys) {
  const row = Object.fromEntries(keys.map((k) => [k, mean(rows.map((r) => r[k]))]));
  return {
    ...row,
    total: rows.reduce((a, r) => a + r.total, 0),
    non2xx: rows.reduce((a, r) => a + r.non2xx, 0),
    errors: rows.reduce((a, r) => a + r.errors, 0),
  };
}

/** The rounds during which other processes took more than NOISY_OTHER_PCT of a core. */
const noisyRounds = (rows) => rows.filter((r) => r.otherPct > NOISY_OTHER_PCT);

/**
 * The report's line on noise over the measured `rows` (named by `name(row)`): other processes, and
 * the hypervisor's steal; `caveat` is added when noisy.
 */
function noiseLine(rows, name, caveat = '') {
  return [otherProcessesNoise(rows, name, caveat), stealNoise(rows, name, caveat)].filter(Boolean).join(' ');
}

function otherProcessesNoise(rows, name, caveat) {
  const noisy = noisyRounds(rows);
  if (noisy.length) {
    return `**Noisy:** other processes took more than ${NOISY_OTHER_PCT}% of a core during ${noisy.length} of ${rows.length} rounds (${noisy.map((r) => `${name(r)}: ${f0(r.otherPct)}%`).join(', ')}); ${caveat}run it again on a quiet machine.`;
  }
  if (rows.some((r) => Number.isFinite(r.otherPct)))
    return `Quiet: other processes took at most ${f0(Math.max(...rows.map((r) => r.otherPct)))}% of a core during any round.`;
  return 'The CPU of other processes could not be measured (no /proc).';
}

function stealNoise(rows, name, caveat) {
  const stolen = rows.filter((r) => r.stealPct > NOISY_STEAL_PCT);
  if (!stolen.length) return '';
  return `**Noisy:** the hypervisor took more than ${NOISY_STEAL_PCT}% of a core (steal) during ${stolen.length} of ${rows.length} rounds (${stolen.map((r) => `${name(r)}: ${f0(r.stealPct)}%`).join(', ')}); their figures are inflated, ${caveat}compare the other rounds or run it again.`;
}

/** The commit, and whether src/ or migrations/ differ from it. */
function gitDescribe() {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'migrations'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return dirty ? `${commit} (src/ or migrations/ modified)` : commit;
  } catch {
    return 'unknown';
  }
}

/** "2 × <CPU model>". */
const cpusText = () => `${os.cpus().length} × ${os.cpus()[0] ? os.cpus()[0].model.trim() : 'unknown CPU'}`;
/** Load averages (1/5/15 min) as "a / b / c". */
const loadText = (load) => load.map((l) => l.toFixed(2)).join(' / ');
const autocannonVersion = () => require('autocannon/package.json').version;

/** The report's "Machine" line: CPUs, memory, Node, PostgreSQL (`postgres` as shown), commit and the load average at the start. */
const machineLine = (postgres, loadBefore) =>
  `- Machine: ${cpusText()}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.version}; PostgreSQL ${postgres}; commit ${gitDescribe()}; load average ${loadText(loadBefore)} (1/5/15 min) at the start, the build included.`;

/** Writes a report to bench/results/`fileName`, prints it on stdout; returns its path from the project root. */
function writeReport(fileName, md) {
  mkdirSync(RESULTS, { recursive: true });
  const out = join(RESULTS, fileName);
  writeFileSync(out, md);
  process.stdout.write(`\n${md}\n`);
  return relative(ROOT, out);
}

/** The rows of the start of a CSV text (RFC 4180: quotes, doubled quotes, CRLF or LF); the last, maybe cut, row dropped. */
function csvRows(text) {
  const rows = [];
  let row = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += ch;
  }
  return rows;
}

module.exports = {
  csvRows,
  ROOT,
  DIST,
  CLI,
  MAIN,
  RESULTS,
  RATE_LIMIT,
  NOISY_OTHER_PCT,
  COUNTING_LIMITS,
  log,
  envNumber,
  envFlag,
  loadOptions,
  requireBuilt,
  run,
  runJson,
  freePort,
  cleanEnv,
  BENCH_WEBHOOK_SECRET_KEY,
  serviceEnv,
  Server,
  post,
  sampleAnswers,
  BenchDatabase,
  startRun,
  migrateAndSeed,
  Teardown,
  runMain,
  cpuMs,
  cpuSnapshot,
  loadRun,
  loadTarget,
  statusCounts,
  percentile,
  figures,
  alternateRounds,
  median,
  roundLog,
  rateLimitsAfterLoad,
  mean,
  f0,
  f1,
  f2,
  f3,
  meanRow,
  noisyRounds,
  noiseLine,
  cpusText,
  loadText,
  autocannonVersion,
  machineLine,
  writeReport,
};

'use strict';
/**
 * get_form throughput: Formwork's whole pipeline against a bare node:http + pg baseline, side by
 * side in one run. See bench/README.md. Run with `npm run bench` (builds first).
 *
 * 1. creates a fresh database formwork_bench_<timestamp>, migrates it with the CLI and seeds it
 *    with the CLI's demo (token + forms);
 * 2. starts two child processes: the baseline (bench/baseline-server.js) and Formwork
 *    (dist/src/main.js, rate limits raised so they count but never refuse);
 * 3. warms both up, then alternates baseline, formwork, baseline, formwork... (autocannon,
 *    BENCH_ROUNDS rounds of BENCH_DURATION s each, BENCH_CONNECTIONS connections);
 * 4. prints a Markdown table (req/s, p50, p99 per round and the mean, and each server's own CPU
 *    time per request), the ratio formwork/baseline and PASS/FAIL against the target, and writes it
 *    to bench/results/get-form-<timestamp>.md;
 * 5. with BENCH_PROFILE=1, profiles each server (fresh processes, the load window only) and adds
 *    the hottest functions and packages to the report;
 * 6. stops the servers and drops the database.
 *
 * Exit code: 0 whether the ratio passes or not; 1 when something broke (setup, a server died,
 * a response that is not 200, errors or timeouts).
 */
const { spawn, execFileSync } = require('node:child_process');
const { mkdirSync, writeFileSync, readFileSync, readdirSync } = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const { join, relative } = require('node:path');
const autocannon = require('autocannon');
const { Client } = require('pg');
const cpuProfile = require('./cpu-profile');

const ROOT = join(__dirname, '..');
const CLI = join(ROOT, 'dist', 'src', 'cli', 'main.js');
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const RESULTS = join(__dirname, 'results');

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
  target: envNumber('BENCH_TARGET', 0.3),
  adminUrl: process.env.BENCH_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
  profile: ['1', 'true', 'yes'].includes(String(process.env.BENCH_PROFILE || '').toLowerCase()),
  keepDb: ['1', 'true', 'yes'].includes(String(process.env.BENCH_KEEP_DB || '').toLowerCase()),
};
/** A round during which other processes took more than this (% of one core) is flagged noisy. */
const NOISY_OTHER_PCT = 25;
/** Formwork's default DATABASE_POOL_SIZE (src/config/config.ts); the baseline uses the same. */
const POOL_SIZE = 10;
/** High enough that the budgets count every request but never refuse one. */
const RATE_LIMIT = 1_000_000_000;

const log = (msg) => process.stderr.write(`bench: ${msg}\n`);

function stamp(d = new Date()) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

function urlWithDatabase(base, database) {
  const u = new URL(base);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Runs a command, returns { code, stdout, stderr }. */
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

/** Runs a CLI-like script that prints one JSON object with --json; throws unless it exits 0 with JSON. */
async function runJson(label, args, env) {
  const r = await run(process.execPath, args, env);
  let json;
  try {
    json = JSON.parse(r.stdout.trim().split('\n').pop());
  } catch {
    json = undefined;
  }
  if (r.code !== 0 || !json || json.error) {
    const err = new Error(`${label} failed (exit ${r.code}): ${(r.stdout + r.stderr).trim().slice(0, 2000) || '(no output)'}`);
    err.result = r;
    throw err;
  }
  return json;
}

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

let clockTicks;
function ticksToMs(ticks) {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return (ticks * 1000) / clockTicks;
}

/** user + system CPU time of a process so far, in ms (Linux /proc), or undefined elsewhere. */
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
 * CPU used on the whole machine (user + nice + system, from /proc/stat) and, per process, by the
 * processes of the benchmark (its servers, and the postgres backends serving its database, whose
 * process title names it), in ms; the client is this process. Between two snapshots, what the
 * machine used beyond the benchmark's processes is what something else took. Undefined where /proc
 * is missing.
 */
function machineSnapshot(serverPids, dbName) {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const busy = ticksToMs(cpu[0] + cpu[1] + cpu[2]);
    const pids = new Map();
    for (const pid of serverPids) pids.set(String(pid), cpuMs(pid) || 0);
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
        if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(dbName)) continue;
        pids.set(entry, cpuMs(entry) || 0);
      } catch {
        // the process ended
      }
    }
    const self = process.cpuUsage();
    return { busy, self: (self.user + self.system) / 1000, pids };
  } catch {
    return undefined;
  }
}

/** CPU (ms) that processes outside the benchmark took between two snapshots. */
function otherCpu(before, after) {
  if (!before || !after) return undefined;
  let ours = after.self - before.self;
  // A process that started in between counts whole; one that ended in between cannot be counted.
  for (const [pid, ms] of after.pids) ours += ms - (before.pids.get(pid) || 0);
  return Math.max(0, after.busy - before.busy - ours);
}

/** Pids of the servers running now (all of them use CPU the benchmark accounts for). */
const liveServerPids = new Set();
/** The benchmark's database, named in the process titles of its postgres backends. */
let benchDbName = '';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A server child process, its output kept (the tail) for error messages. */
class Server {
  constructor(name, args, env) {
    this.name = name;
    this.output = '';
    this.exited = null;
    this.env = env;
    this.proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    liveServerPids.add(this.proc.pid);
    const keep = (c) => {
      this.output = (this.output + c).slice(-8000);
    };
    this.proc.stdout.on('data', keep);
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
      throw new Error(`${this.name} exited (code ${this.exited.code}, signal ${this.exited.signal}); its output:\n${this.output.trim()}`);
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
    throw new Error(`${this.name} did not answer within ${timeoutMs / 1000} s${last ? ` (${last.message})` : ''}; its output:\n${this.output.trim()}`);
  }

  async stop(timeoutMs = 10_000) {
    if (this.exited) return this.exited;
    this.proc.kill('SIGTERM');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), timeoutMs);
    const result = await this.exitPromise;
    clearTimeout(t);
    return result;
  }
}

async function post(url, headers, body) {
  const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(5_000) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text };
}

/** One autocannon run against a target, with the server's own CPU time over it. */
async function cannon(target, seconds) {
  const pid = target.server.proc.pid;
  const before = cpuMs(pid);
  const machineBefore = machineSnapshot(liveServerPids, benchDbName);
  const result = await autocannon({
    url: target.url,
    method: 'POST',
    headers: target.headers,
    body: target.body,
    connections: OPTS.connections,
    duration: seconds,
    timeout: 10,
  });
  const after = cpuMs(pid);
  const machineAfter = machineSnapshot(liveServerPids, benchDbName);
  result.otherCpuMs = otherCpu(machineBefore, machineAfter);
  result.serverCpuMs = before === undefined || after === undefined ? undefined : after - before;
  return result;
}

/** The figures of one autocannon run, and what was wrong with it. */
function figures(result) {
  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats || {}).map(([code, s]) => [code, s.count]));
  const problems = [];
  if (result.non2xx > 0) problems.push(`${result.non2xx} responses were not 2xx (status counts: ${JSON.stringify(statuses)})`);
  const not200 = Object.entries(statuses).filter(([code]) => code !== '200');
  if (not200.length && result.non2xx === 0) problems.push(`responses other than 200: ${JSON.stringify(statuses)}`);
  if (result.errors > 0) problems.push(`${result.errors} connection errors`);
  if (result.timeouts > 0) problems.push(`${result.timeouts} timeouts`);
  if (result.resets > 0) problems.push(`${result.resets} connection resets`);
  if (!result['2xx']) problems.push('no successful response at all');
  return {
    // Successful requests over the measured time: autocannon's own "Req/Sec" averages per-second
    // samples, which under-count when the client's event loop is late for a sample.
    rps: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    // The server process's CPU: % of one core over the run, and ms per answered request.
    cpuPct: result.serverCpuMs === undefined ? NaN : (100 * result.serverCpuMs) / (result.duration * 1000),
    cpuPerReq: result.serverCpuMs === undefined ? NaN : result.serverCpuMs / (result['2xx'] + result.non2xx || 1),
    // CPU that processes outside the benchmark took during the run, % of one core: noise.
    otherPct: result.otherCpuMs === undefined ? NaN : (100 * result.otherCpuMs) / (result.duration * 1000),
    problems,
  };
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const f0 = (n) => (Number.isFinite(n) ? n.toFixed(0) : '-');
const f1 = (n) => (Number.isFinite(n) ? n.toFixed(1) : '-');
const f2 = (n) => (Number.isFinite(n) ? n.toFixed(2) : '-');
const f3 = (n) => (Number.isFinite(n) ? n.toFixed(3) : '-');

function resultsTable(rows) {
  const lines = [
    '| Round | Server | req/s | p50 (ms) | p99 (ms) | 2xx | non-2xx | errors | server CPU (% of a core) | server CPU ms/req | other processes (% of a core) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    lines.push(`| ${r.round} | ${r.server} | ${f0(r.rps)} | ${f1(r.p50)} | ${f1(r.p99)} | ${r.total} | ${r.non2xx} | ${r.errors} | ${f0(r.cpuPct)} | ${f3(r.cpuPerReq)} | ${f0(r.otherPct)} |`);
  }
  return lines.join('\n');
}

function gitDescribe() {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'migrations'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return dirty ? `${commit} (src/ or migrations/ modified)` : commit;
  } catch {
    return 'unknown';
  }
}

async function main() {
  const started = new Date();
  const ts = stamp(started);
  const dbName = `formwork_bench_${ts.replace('-', '_')}`;
  const dbUrl = urlWithDatabase(OPTS.adminUrl, dbName);
  benchDbName = dbName;
  const notes = [];
  const loadBefore = os.loadavg();
  const problems = [];
  const servers = [];
  let dbCreated = false;
  let interrupted = false;

  const cleanup = async () => {
    for (const s of servers.splice(0)) {
      try {
        await s.stop();
      } catch (err) {
        log(`could not stop ${s.name}: ${err.message}`);
      }
    }
    if (dbCreated && !OPTS.keepDb) {
      const admin = new Client({ connectionString: OPTS.adminUrl });
      try {
        await admin.connect();
        await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
        dbCreated = false;
        log(`dropped database ${dbName}`);
      } catch (err) {
        log(`could not drop database ${dbName}: ${err.message}`);
      } finally {
        await admin.end().catch(() => undefined);
      }
    } else if (dbCreated) {
      log(`kept database ${dbName} (BENCH_KEEP_DB)`);
    }
  };
  const onSignal = (signal) => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping servers and dropping the database`);
    cleanup().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    for (const file of [CLI, MAIN]) {
      try {
        readFileSync(file);
      } catch {
        throw new Error(`${relative(ROOT, file)} is missing: run \`npm run build\` first (\`npm run bench\` does)`);
      }
    }

    // --- database: create, migrate, seed -------------------------------------------------------
    const admin = new Client({ connectionString: OPTS.adminUrl });
    await admin.connect();
    let pgVersion;
    try {
      pgVersion = (await admin.query('SHOW server_version')).rows[0].server_version;
      await admin.query(`CREATE DATABASE "${dbName}"`);
      dbCreated = true;
    } finally {
      await admin.end();
    }
    log(`created database ${dbName}`);

    const baseEnv = { ...process.env };
    for (const k of Object.keys(baseEnv)) {
      if (/^(PORT|PUBLIC_URL|DATABASE_URL|DATA_DIR|REDIS_URL|TRUST_PROXY|RATE_LIMIT_.*|API_V1_.*|BOOTSTRAP_DEMO|NODE_ENV|LOG_LEVEL|DATABASE_POOL_SIZE|NODE_OPTIONS)$/.test(k)) delete baseEnv[k];
    }
    const cliEnv = { ...baseEnv, DATABASE_URL: dbUrl, NODE_ENV: 'production', LOG_LEVEL: 'warn', BOOTSTRAP_DEMO: 'false' };
    const migrated = await runJson('migrate (CLI)', [CLI, 'migrate', '--json'], cliEnv);
    log(`migrated: ${(migrated.migrations || []).join(', ') || 'nothing to run'}`);

    let demo;
    try {
      demo = await runJson('demo (CLI)', [CLI, 'demo', '--json'], cliEnv);
      log('seeded with the CLI demo');
    } catch (err) {
      const why = err.message.split('\n')[0].slice(0, 400);
      log(`WARNING: the CLI demo failed, seeding with bench/seed-demo.js (same DemoService) instead: ${why}`);
      notes.push(
        `**The CLI \`demo --json\` failed**, so the database was seeded with \`bench/seed-demo.js\`, which runs the same compiled \`DemoService.create()\` without the CLI's argument validation. CLI error: \`${why.replace(/`/g, "'")}\``,
      );
      demo = await runJson('demo (bench/seed-demo.js)', [join(__dirname, 'seed-demo.js')], cliEnv);
    }
    if (typeof demo.token !== 'string' || !Array.isArray(demo.forms) || demo.forms.length === 0) {
      throw new Error(`the demo output has no token or forms: ${JSON.stringify(demo).slice(0, 500)}`);
    }
    const publicId = demo.forms[0];

    const db = new Client({ connectionString: dbUrl });
    await db.connect();
    let form;
    try {
      form = (
        await db.query(`SELECT f.id, f.title, (SELECT count(*)::int FROM blocks b WHERE b.form_id = f.id) AS blocks FROM forms f WHERE f.public_id = $1`, [publicId])
      ).rows[0];
    } finally {
      await db.end();
    }
    if (!form) throw new Error(`form ${publicId} of the demo is not in the database`);
    log(`form under test: ${publicId} "${form.title}" (${form.blocks} blocks, id ${form.id})`);

    // --- servers -----------------------------------------------------------------------------
    const [basePort, fwPort] = [await freePort(), await freePort()];
    const baseline = new Server('baseline', [join(__dirname, 'baseline-server.js')], { ...baseEnv, NODE_ENV: 'production', DATABASE_URL: dbUrl, PORT: String(basePort), POOL_SIZE: String(POOL_SIZE) });
    servers.push(baseline);
    const fwEnv = {
      ...baseEnv,
      PORT: String(fwPort),
      DATABASE_URL: dbUrl,
      RATE_LIMIT_CREDENTIAL_PER_MIN: String(RATE_LIMIT),
      RATE_LIMIT_IP_PER_MIN: String(RATE_LIMIT),
      BOOTSTRAP_DEMO: 'false',
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
    };
    const formwork = new Server('formwork', [MAIN], fwEnv);
    servers.push(formwork);

    const targets = {
      baseline: {
        server: baseline,
        url: `http://127.0.0.1:${basePort}/form`,
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ id: form.id }),
      },
      formwork: {
        server: formwork,
        url: `http://127.0.0.1:${fwPort}/api/v1/tools/get_form`,
        headers: { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ publicId }),
      },
    };

    // Wait until each answers the very request the benchmark sends, and check the answer.
    const sizes = {};
    for (const [name, t] of Object.entries(targets)) {
      await t.server.waitUntil(async () => (await post(t.url, t.headers, t.body)).status === 200);
      const r = await post(t.url, t.headers, t.body);
      const json = JSON.parse(r.text);
      const blocks = Array.isArray(json.blocks) ? json.blocks.length : -1;
      if (r.status !== 200 || blocks !== form.blocks) {
        throw new Error(`${name} answered ${r.status} with ${blocks} blocks (expected 200 with ${form.blocks}): ${r.text.slice(0, 500)}`);
      }
      if (name === 'formwork' && json.publicId !== publicId) throw new Error(`formwork answered another form: ${r.text.slice(0, 300)}`);
      sizes[name] = Buffer.byteLength(r.text);
      log(`${name} answers on ${t.url} (200, ${sizes[name]} bytes, ${blocks} blocks)`);
    }

    // --- load ---------------------------------------------------------------------------------
    const order = ['baseline', 'formwork'];
    for (const name of order) {
      log(`warm-up ${name} (${OPTS.warmup} s)`);
      const w = figures(await cannon(targets[name], OPTS.warmup));
      targets[name].server.assertAlive();
      if (w.problems.length) problems.push(`${name} warm-up: ${w.problems.join('; ')}`);
    }

    const rows = [];
    for (let round = 1; round <= OPTS.rounds; round++) {
      for (const name of order) {
        log(`round ${round}/${OPTS.rounds}: ${name} (${OPTS.duration} s, ${OPTS.connections} connections)`);
        const fig = figures(await cannon(targets[name], OPTS.duration));
        targets[name].server.assertAlive();
        rows.push({ round: String(round), server: name, ...fig });
        log(`  ${f0(fig.rps)} req/s, p50 ${f1(fig.p50)} ms, p99 ${f1(fig.p99)} ms, server CPU ${f0(fig.cpuPct)}% (${f3(fig.cpuPerReq)} ms/req), other processes ${f0(fig.otherPct)}%${fig.problems.length ? `, PROBLEMS: ${fig.problems.join('; ')}` : ''}`);
        for (const p of fig.problems) problems.push(`round ${round} ${name}: ${p}`);
      }
    }

    // The credential and IP budgets counted the load (and refused none: every answer was 200).
    const after = await post(targets.formwork.url, targets.formwork.headers, targets.formwork.body);
    const limit = Number(after.headers.get('x-ratelimit-limit'));
    const remaining = Number(after.headers.get('x-ratelimit-remaining'));
    if (after.status !== 200) problems.push(`formwork answered ${after.status} after the load: ${after.text.slice(0, 300)}`);
    if (limit !== RATE_LIMIT || !(remaining < RATE_LIMIT - 1)) {
      problems.push(`the rate-limit headers after the load do not show counting: limit ${limit}, remaining ${remaining}`);
    } else {
      notes.push(`Rate limits were on and counting: after the load, \`X-RateLimit-Limit: ${limit}\`, \`X-RateLimit-Remaining: ${remaining}\` (${RATE_LIMIT - remaining} requests in the current one-minute window).`);
    }

    // --- optional CPU profiles (fresh processes, load window only; not part of the figures) ----
    const profiles = [];
    if (OPTS.profile) {
      // Stop the measured servers first, so that each profiled one has the machine as they had.
      for (const s of servers.splice(0)) await s.stop();
      for (const name of order) {
        const out = join(RESULTS, `get-form-${ts}-${name}.cpuprofile`);
        mkdirSync(RESULTS, { recursive: true });
        const port = await freePort();
        const script = name === 'baseline' ? join(__dirname, 'baseline-server.js') : MAIN;
        const env = name === 'baseline' ? { ...baseline.env } : { ...fwEnv };
        const profiled = new Server(`${name} (profiled)`, ['-r', join(__dirname, 'cpu-profile-hook.js'), script], { ...env, PORT: String(port), BENCH_CPU_PROFILE_OUT: out });
        servers.push(profiled);
        const url = new URL(targets[name].url);
        url.port = String(port);
        const pt = { ...targets[name], server: profiled, url: url.toString() };
        await profiled.waitUntil(async () => (await post(pt.url, pt.headers, pt.body)).status === 200);
        log(`profiling ${name}: ${OPTS.warmup} s warm-up, then ${OPTS.duration} s profiled`);
        await cannon(pt, OPTS.warmup);
        profiled.proc.kill('SIGUSR2');
        const pf = figures(await cannon(pt, OPTS.duration));
        profiled.proc.kill('SIGUSR2');
        await profiled.waitUntil(async () => profiled.output.includes('cpu-profile-written'), 30_000);
        await profiled.stop();
        servers.splice(servers.indexOf(profiled), 1);
        const summary = cpuProfile.summarize(JSON.parse(readFileSync(out, 'utf8')), 20);
        profiles.push(
          [
            `### ${name}`,
            '',
            `${f0(pf.rps)} req/s while profiled (${pf.total} requests); ${f3(summary.busyMs / (pf.total + pf.non2xx || 1))} ms of sampled CPU per request on the main thread. Profile: \`${relative(ROOT, out)}\` (Chrome DevTools or speedscope).`,
            '',
            cpuProfile.toMarkdown(summary),
          ].join('\n'),
        );
      }
    }

    // --- report -------------------------------------------------------------------------------
    const by = (name) => rows.filter((r) => r.server === name);
    const means = {};
    for (const name of order) {
      const rs = by(name);
      means[name] = {
        rps: mean(rs.map((r) => r.rps)),
        p50: mean(rs.map((r) => r.p50)),
        p99: mean(rs.map((r) => r.p99)),
        cpuPct: mean(rs.map((r) => r.cpuPct)),
        cpuPerReq: mean(rs.map((r) => r.cpuPerReq)),
        otherPct: mean(rs.map((r) => r.otherPct)),
      };
      rows.push({ round: 'mean', server: name, ...means[name], total: rs.reduce((a, r) => a + r.total, 0), non2xx: rs.reduce((a, r) => a + r.non2xx, 0), errors: rs.reduce((a, r) => a + r.errors, 0) });
    }
    const ratio = means.formwork.rps / means.baseline.rps;
    const perRound = [];
    for (let round = 1; round <= OPTS.rounds; round++) {
      const b = rows.find((r) => r.round === String(round) && r.server === 'baseline');
      const fw = rows.find((r) => r.round === String(round) && r.server === 'formwork');
      perRound.push(fw.rps / b.rps);
    }
    const pass = ratio >= OPTS.target;
    const outcome = problems.length ? 'NOT VALID, see Problems' : pass ? 'PASS' : 'FAIL';
    const verdict = `Ratio formwork/baseline (mean req/s): **${f2(ratio)}** (per round: ${perRound.map(f2).join(', ')}) — target >= ${OPTS.target}: **${outcome}**`;
    const noisy = rows.filter((r) => r.round !== 'mean' && r.otherPct > NOISY_OTHER_PCT);
    const noise = noisy.length
      ? `**Noisy:** other processes took more than ${NOISY_OTHER_PCT}% of a core during ${noisy.length} of ${OPTS.rounds * order.length} rounds (${noisy.map((r) => `${r.round} ${r.server}: ${f0(r.otherPct)}%`).join(', ')}); the ratio is less reliable, run it again on a quiet machine.`
      : rows.some((r) => Number.isFinite(r.otherPct))
        ? `Quiet: other processes took at most ${f0(Math.max(...rows.filter((r) => r.round !== 'mean').map((r) => r.otherPct)))}% of a core during any round.`
        : 'The CPU of other processes could not be measured (no /proc).';
    const cpuRatio = means.formwork.cpuPerReq / means.baseline.cpuPerReq;
    if (Number.isFinite(cpuRatio)) {
      notes.push(`Server CPU per request: formwork ${f3(means.formwork.cpuPerReq)} ms, baseline ${f3(means.baseline.cpuPerReq)} ms (${f1(cpuRatio)}×). Both are measured from /proc over each round and include GC and libuv threads.`);
    }

    const md = [
      `# get_form benchmark, ${started.toISOString()}`,
      '',
      verdict,
      '',
      noise,
      '',
      resultsTable(rows),
      '',
      `- baseline: bare \`node:http\` + \`pg\` Pool (max ${POOL_SIZE}), one primary-key query (form row + its blocks as one JSON value), answered as JSON (${sizes.baseline} bytes).`,
      `- formwork: \`POST /api/v1/tools/get_form\` through the whole pipeline (auth, rate limits at ${RATE_LIMIT}/min, validation, query, headers), NODE_ENV=production, LOG_LEVEL=warn, default pool (${POOL_SIZE}) (${sizes.formwork} bytes).`,
      `- Form \`${publicId}\` "${form.title}" with ${form.blocks} blocks, in a fresh database \`${dbName}\` (migrated and seeded with the CLI, dropped afterwards).`,
      `- Load: autocannon ${require('autocannon/package.json').version}, ${OPTS.connections} connections, ${OPTS.duration} s per round, ${OPTS.rounds} rounds alternating ${order.join(', ')}, after ${OPTS.warmup} s of warm-up each. Client, both servers and PostgreSQL share the machine; compare the ratio, not absolute numbers.`,
      `- Machine: ${os.cpus().length} × ${os.cpus()[0] ? os.cpus()[0].model.trim() : 'unknown CPU'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.version}; PostgreSQL ${pgVersion}; commit ${gitDescribe()}; load average ${loadBefore.map((l) => l.toFixed(2)).join(' / ')} (1/5/15 min) at the start, the build included.`,
      ...notes.map((n) => `- ${n}`),
      ...(problems.length ? ['', '## Problems', '', ...problems.map((p) => `- ${p}`)] : []),
      ...(profiles.length ? ['', '## CPU profiles (BENCH_PROFILE=1)', '', 'Each server alone in a fresh process, after the measured rounds, profiled over the load window only (boot and warm-up excluded); profiling slows it down. Self time, so a function is counted where the CPU was, not where it was called from.', '', profiles.join('\n\n')] : []),
      '',
    ].join('\n');

    mkdirSync(RESULTS, { recursive: true });
    const out = join(RESULTS, `get-form-${ts}.md`);
    writeFileSync(out, md);
    process.stdout.write(`\n${md}\n`);
    log(`written ${relative(ROOT, out)}`);
    if (problems.length) {
      log(`BROKEN: ${problems.length} problem(s):\n  ${problems.join('\n  ')}`);
      process.exitCode = 1;
    }
  } finally {
    if (!interrupted) await cleanup();
  }
}

main().catch((err) => {
  log(`FAILED: ${err && err.stack ? err.stack : String(err)}`);
  process.exitCode = 1;
});

'use strict';
/**
 * Responses at scale: list_responses and summarize_responses on a form with 1,000,000 responses.
 * See bench/README.md. Run with `npm run bench:responses` (builds first).
 *
 * Target (from the issue): with 1,000,000 responses on one form, summarize_responses answers in
 * about the time of one list_responses page of 200 (ratio measured in one run), and a
 * list_responses page at offset 999,800 costs no more than 3x a page at offset 0.
 *
 * 1. creates a fresh database formwork_bench_<timestamp>, migrates it with the CLI and seeds it
 *    with the CLI's demo (token + forms; the form under test is "Customer feedback", which already
 *    has the demo's responses);
 * 2. bulk-loads BENCH_RESPONSES (1,000,000) more responses into that form with ONE
 *    `INSERT ... SELECT ... FROM generate_series` (valid, varied answers built from the form's
 *    blocks), advances its response counter, then builds the maintained aggregates with the
 *    service's own compiled recomputeResponseStats() in one transaction, then VACUUM ANALYZE and
 *    CHECKPOINT; each step timed, and the table sizes reported;
 * 3. times the naive SQL that the maintained structures avoid (count(*), OFFSET 999800 LIMIT 200,
 *    a one-scan summary) in psql, which also gives the reference values for the checks;
 * 4. starts the built service (dist/src/main.js) as a child process and checks its answers: the
 *    shallow and the deep page hold exactly the rows of the naive queries (ids, order and answers),
 *    the summary equals the naive recount (totals, choice counts, yes/no, min/max/mean, latest texts);
 * 5. warms up, then alternates list(offset 0), list(offset 999800), summarize, BENCH_ROUNDS rounds
 *    of BENCH_DURATION s at BENCH_CONNECTIONS connections (autocannon's programmatic API), then
 *    measures each once more unloaded (1 connection, sequential requests, interleaved);
 * 6. prints a Markdown report with PASS/FAIL for both ratios and writes it to
 *    bench/results/responses-at-scale-<timestamp>.md;
 * 7. stops the server and drops the database, also after a failure or Ctrl-C.
 *
 * Exit code: 0 whether the ratios pass or not; 1 when something broke (setup, a server died, a
 * wrong answer, a response that is not 200, errors or timeouts).
 */
const { spawn, execFileSync } = require('node:child_process');
const { mkdirSync, writeFileSync, readFileSync, readdirSync } = require('node:fs');
const { isDeepStrictEqual } = require('node:util');
const net = require('node:net');
const os = require('node:os');
const { join, relative } = require('node:path');
const { performance } = require('node:perf_hooks');
const autocannon = require('autocannon');
const { Client } = require('pg');

const ROOT = join(__dirname, '..');
const DIST = join(ROOT, 'dist', 'src');
const CLI = join(DIST, 'cli', 'main.js');
const MAIN = join(DIST, 'main.js');
const RESULTS = join(__dirname, 'results');

function envNumber(name, fallback, { integer = false, min = Number.MIN_VALUE } = {}) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) throw new Error(`${name} must be a${integer ? 'n integer' : ' number'} >= ${min}, got "${raw}"`);
  return n;
}

const OPTS = {
  responses: envNumber('BENCH_RESPONSES', 1_000_000, { integer: true, min: 1000 }),
  duration: envNumber('BENCH_DURATION', 10),
  connections: envNumber('BENCH_CONNECTIONS', 10, { integer: true, min: 1 }),
  rounds: envNumber('BENCH_ROUNDS', 3, { integer: true, min: 1 }),
  warmup: envNumber('BENCH_WARMUP', 5),
  serial: envNumber('BENCH_SERIAL', 100, { integer: true, min: 1 }),
  naiveRuns: envNumber('BENCH_NAIVE_RUNS', 3, { integer: true, min: 1 }),
  targetSummary: envNumber('BENCH_TARGET_SUMMARY', 1.5),
  targetDeep: envNumber('BENCH_TARGET_DEEP', 3),
  adminUrl: process.env.BENCH_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
  keepDb: ['1', 'true', 'yes'].includes(String(process.env.BENCH_KEEP_DB || '').toLowerCase()),
};
const PAGE = 200;
/** The deep page: the last full page of the bulk load (999,800 for 1,000,000). */
const DEEP_OFFSET = OPTS.responses - PAGE;
/** A round during which other processes took more than this (% of one core) is flagged noisy. */
const NOISY_OTHER_PCT = 25;
/** High enough that the budgets count every request but never refuse one. */
const RATE_LIMIT = 1_000_000_000;
const FORM_TITLE = 'Customer feedback';

const log = (msg) => process.stderr.write(`bench: ${msg}\n`);
/** Set on SIGINT/SIGTERM: the cleanup then runs from the signal handler, and the error it causes is not reported. */
let interrupted = false;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function stamp(d = new Date()) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

function urlWithDatabase(base, database) {
  const u = new URL(base);
  u.pathname = `/${database}`;
  return u.toString();
}

/** A SQL string literal (values here come from our own database, but quote them properly anyway). */
const lit = (s) => `'${String(s).replace(/'/g, "''")}'`;

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

/** Runs a CLI that prints one JSON object with --json; throws unless it exits 0 with JSON. */
async function runJson(label, args, env) {
  const r = await run(process.execPath, args, env);
  let json;
  try {
    json = JSON.parse(r.stdout.trim().split('\n').pop());
  } catch {
    json = undefined;
  }
  if (r.code !== 0 || !json || json.error) {
    throw new Error(`${label} failed (exit ${r.code}): ${(r.stdout + r.stderr).trim().slice(0, 2000) || '(no output)'}`);
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

// --- CPU accounting (Linux /proc; undefined elsewhere), as in bench/get-form.js ----------------

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

/** user + system CPU time of a process so far, in ms, or undefined. */
function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ticksToMs(Number(fields[11]) + Number(fields[12]));
  } catch {
    return undefined;
  }
}

/**
 * CPU used on the whole machine (user + nice + system, /proc/stat) and by the benchmark's own
 * processes: the server, and the postgres backends serving its database (their process title
 * names it). This process (the client) counts as ours too.
 */
function machineSnapshot(serverPid, dbName) {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const busy = ticksToMs(cpu[0] + cpu[1] + cpu[2]);
    const pg = new Map();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
        if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(dbName)) continue;
        pg.set(entry, cpuMs(entry) || 0);
      } catch {
        // the process ended
      }
    }
    const self = process.cpuUsage();
    return { busy, self: (self.user + self.system) / 1000, server: cpuMs(serverPid), pg };
  } catch {
    return undefined;
  }
}

/** Between two snapshots: the server's CPU, postgres's (our database), and everything else's, in ms. */
function cpuBetween(before, after) {
  if (!before || !after || before.server === undefined || after.server === undefined) return {};
  const server = after.server - before.server;
  let pg = 0;
  // A backend that started in between counts whole; one that ended in between cannot be counted.
  for (const [pid, ms] of after.pg) pg += ms - (before.pg.get(pid) || 0);
  const client = after.self - before.self;
  return { server, pg, other: Math.max(0, after.busy - before.busy - server - pg - client) };
}

// --- the server ----------------------------------------------------------------------------------

class Server {
  constructor(name, args, env) {
    this.name = name;
    this.output = '';
    this.exited = null;
    this.proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (c) => {
      this.output = (this.output + c).slice(-8000);
    };
    this.proc.stdout.on('data', keep);
    this.proc.stderr.on('data', keep);
    this.exitPromise = new Promise((resolve) => {
      this.proc.on('exit', (code, signal) => {
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

async function post(url, headers, body, timeoutMs = 30_000) {
  const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text };
}

// --- the bulk load ------------------------------------------------------------------------------

const NAMES = ['Ada', 'Grace', 'Linus', 'Margaret', 'Alan', 'Barbara', 'Ken', 'Radia', 'Dennis', 'Frances'];
const COMMENTS = ['Love it', 'The API is very clear', 'More block types please', 'Summaries saved me hours', 'Works great with my agent'];
const textArray = (xs) => `ARRAY[${xs.map(lit).join(', ')}]::text[]`;

/**
 * The jsonb value of block `b` (the i-th of the form) for row g of generate_series, or undefined
 * for a block that takes no answer. Varied (a hash of g per block) and valid for the block's type
 * and settings, stored the way validateAnswers() stores it: choice ids, lists of choice ids,
 * numbers, booleans, "YYYY-MM-DD", trimmed strings.
 */
function answerSql(b, i) {
  const h = `(hashint8(g::bigint * 64 + ${i}) & 2147483647)`; // 0 .. 2^31-1, one stream per block
  const s = b.settings || {};
  const ids = (s.choices || []).map((c) => c.id);
  switch (b.type) {
    case 'short_text':
      return `to_jsonb((${textArray(NAMES)})[1 + ${h} % ${NAMES.length}])`;
    case 'long_text':
      return `to_jsonb((${textArray(COMMENTS)})[1 + ${h} % ${COMMENTS.length}] || ' (#' || g || ')')`;
    case 'email':
      return `to_jsonb('person' || g || '@example.com')`;
    case 'url':
      return `to_jsonb('https://example.com/page/' || g)`;
    case 'phone':
      return `to_jsonb('+1 555 ' || lpad((${h} % 10000)::text, 4, '0'))`;
    case 'number': {
      const min = Number.isFinite(s.min) ? Math.ceil(s.min) : 0;
      const max = Number.isFinite(s.max) && Math.floor(s.max) >= min ? Math.floor(s.max) : min + 1000;
      return `to_jsonb(${min} + ${h} % ${max - min + 1})`;
    }
    case 'rating':
      return `to_jsonb(1 + ${h} % ${Number.isInteger(s.max) ? s.max : 5})`;
    case 'linear_scale': {
      const min = Number.isInteger(s.min) ? s.min : 1;
      const max = Number.isInteger(s.max) ? s.max : 5;
      return `to_jsonb(${min} + ${h} % ${max - min + 1})`;
    }
    case 'multiple_choice':
    case 'dropdown':
      return ids.length ? `to_jsonb((${textArray(ids)})[1 + ${h} % ${ids.length}])` : undefined;
    case 'checkboxes': {
      // A non-empty subset of (up to) the first 16 choices, in the form's order.
      const k = Math.min(ids.length, 16);
      if (!k) return undefined;
      return `(SELECT jsonb_agg(c ORDER BY o) FROM unnest(${textArray(ids.slice(0, k))}) WITH ORDINALITY u(c, o) WHERE ((1 + ${h} % ${2 ** k - 1}) >> (o::int - 1)) & 1 = 1)`;
    }
    case 'date':
      return `to_jsonb(to_char(DATE '2024-01-01' + ${h} % 731, 'YYYY-MM-DD'))`;
    case 'yes_no':
      return `to_jsonb(${h} % 3 <> 0)`;
    default:
      return undefined; // statement (or a type this benchmark does not know: left unanswered)
  }
}

/** jsonb_build_object takes at most 100 arguments: build big objects in chunks joined with ||. */
function jsonbObject(pairs) {
  if (!pairs.length) return `'{}'::jsonb`;
  const chunks = [];
  for (let i = 0; i < pairs.length; i += 40) chunks.push(`jsonb_build_object(${pairs.slice(i, i + 40).map(([k, v]) => `${lit(k)}, ${v}`).join(', ')})`);
  return chunks.join(' || ');
}

/** The answers expression of a row: every answerable block, optional ones skipped now and then. */
function answersSql(blocks) {
  const pairs = [];
  blocks.forEach((b, i) => {
    const value = answerSql(b, i);
    if (!value) return;
    const skipPct = 15 + ((i * 11) % 35); // 15..49% of the rows leave an optional block blank
    const skip = `(hashint8(g::bigint * 64 + ${32 + i}) & 2147483647) % 100 < ${skipPct}`;
    pairs.push([b.id, b.required ? value : `CASE WHEN ${skip} THEN NULL ELSE ${value} END`]);
  });
  return `jsonb_strip_nulls(${jsonbObject(pairs)})`;
}

// --- the naive SQL baseline (psql) ---------------------------------------------------------------

/** The one-scan recount of what summarize_responses reports, as one jsonb object (also the reference for the checks). */
function naiveSummarySql(formId, blocks) {
  const pairs = [['total', 'count(*)'], ['first', 'min(submitted_at)'], ['last', 'max(submitted_at)']];
  for (const b of blocks) {
    if (b.type === 'statement') continue;
    const id = lit(b.id);
    pairs.push([`${b.id}:answered`, `count(*) FILTER (WHERE answers ? ${id})`]);
    const choices = (b.settings && b.settings.choices) || [];
    if (b.type === 'checkboxes') {
      for (const c of choices) pairs.push([`${b.id}:${c.id}`, `count(*) FILTER (WHERE answers -> ${id} ? ${lit(c.id)})`]);
    } else if (b.type === 'multiple_choice' || b.type === 'dropdown') {
      for (const c of choices) pairs.push([`${b.id}:${c.id}`, `count(*) FILTER (WHERE answers ->> ${id} = ${lit(c.id)})`]);
    } else if (b.type === 'yes_no') {
      pairs.push([`${b.id}:true`, `count(*) FILTER (WHERE answers -> ${id} = 'true'::jsonb)`]);
      pairs.push([`${b.id}:false`, `count(*) FILTER (WHERE answers -> ${id} = 'false'::jsonb)`]);
    } else if (['number', 'rating', 'linear_scale'].includes(b.type)) {
      pairs.push([`${b.id}:sum`, `sum((answers ->> ${id})::float8)`]);
      pairs.push([`${b.id}:min`, `min((answers ->> ${id})::float8)`]);
      pairs.push([`${b.id}:max`, `max((answers ->> ${id})::float8)`]);
    } else if (b.type === 'date') {
      pairs.push([`${b.id}:min`, `min(answers ->> ${id})`]);
      pairs.push([`${b.id}:max`, `max(answers ->> ${id})`]);
    }
  }
  return `SELECT ${jsonbObject(pairs)} FROM responses WHERE form_id = ${lit(formId)}`;
}

let psqlMissing = false;

/**
 * Runs `sql` `runs` times in ONE psql session with \timing on (the first run also warms the
 * cache; all runs are reported). Returns { times: [ms...], output: last result (unaligned, tuples
 * only), via: 'psql' | 'pg' }. Falls back to the pg client (timed around the query) without psql.
 */
async function timedSql(dbUrl, sql, runs) {
  if (!psqlMissing) {
    const args = ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-d', dbUrl, '-c', '\\timing on'];
    for (let i = 0; i < runs; i++) args.push('-c', sql);
    try {
      const r = await run('psql', args, { ...process.env, PGOPTIONS: '' });
      if (r.code !== 0) throw new Error(`psql failed (exit ${r.code}): ${r.stderr.trim().slice(0, 1000)}`);
      const times = [...r.stdout.matchAll(/^Time: ([\d.]+) ms/gm)].map((m) => Number(m[1]));
      if (times.length !== runs) throw new Error(`psql printed ${times.length} timings for ${runs} runs: ${r.stdout.slice(-500)}`);
      const results = r.stdout.split(/^Time: .*$/m).map((s) => s.trim());
      return { times, output: results[runs - 1], via: 'psql' };
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
      psqlMissing = true;
      log('psql is not on PATH: timing the naive queries with the pg client instead');
    }
  }
  const c = new Client({ connectionString: dbUrl });
  await c.connect();
  try {
    const times = [];
    let output;
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      const res = await c.query({ text: sql, rowMode: 'array' });
      times.push(performance.now() - t0);
      output = res.rows.map((r) => r.map((v) => (v !== null && typeof v === 'object' && !(v instanceof Date) ? JSON.stringify(v) : String(v))).join('|')).join('\n');
    }
    return { times, output, via: 'pg' };
  } finally {
    await c.end();
  }
}

/** The plan of `sql` (EXPLAIN, no ANALYZE), as its node names joined by " → ". */
async function planOf(db, sql) {
  const rows = (await db.query(`EXPLAIN (COSTS OFF) ${sql}`)).rows.map((r) => r['QUERY PLAN']);
  return rows
    .filter((l) => /^\s*(->\s*)?[A-Z]/.test(l) && !/^\s*(Filter|Index Cond|Sort Key|Workers|Group Key|Recheck Cond|Heap Fetches)\b/.test(l.replace(/^\s*->\s*/, '')))
    .map((l) => l.replace(/^\s*->\s*/, '').trim())
    .join(' → ');
}

// --- load and figures ------------------------------------------------------------------------------

/** One autocannon run against a target, with every 2xx latency (exact, not the ms histogram) and the CPU over it. */
async function cannon(target, seconds, ctx) {
  const before = machineSnapshot(target.server.proc.pid, ctx.dbName);
  const latencies = [];
  const instance = autocannon({
    url: target.url,
    method: 'POST',
    headers: target.headers,
    body: target.body,
    connections: OPTS.connections,
    duration: seconds,
    timeout: 10,
  });
  instance.on('response', (_client, status, _bytes, responseTime) => {
    if (status >= 200 && status < 300) latencies.push(responseTime);
  });
  const result = await instance;
  const after = machineSnapshot(target.server.proc.pid, ctx.dbName);
  result.cpu = cpuBetween(before, after);
  result.exactLatencies = latencies;
  return result;
}

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}

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
  const lat = Float64Array.from(result.exactLatencies).sort();
  const answered = result['2xx'] + result.non2xx || 1;
  const { server, pg, other } = result.cpu;
  const ms = result.duration * 1000;
  return {
    // Successful requests over the measured time (not autocannon's mean of per-second samples).
    rps: result['2xx'] / result.duration,
    // From every 2xx response's own time (autocannon's histogram rounds to whole ms).
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    meanLat: lat.length ? lat.reduce((a, b) => a + b, 0) / lat.length : NaN,
    total: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    cpuPct: server === undefined ? NaN : (100 * server) / ms,
    cpuPerReq: server === undefined ? NaN : server / answered,
    pgPerReq: pg === undefined ? NaN : pg / answered,
    otherPct: other === undefined ? NaN : (100 * other) / ms,
    problems,
  };
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs) => percentile(Float64Array.from(xs).sort(), 50);
const f0 = (n) => (Number.isFinite(n) ? n.toFixed(0) : '-');
const f1 = (n) => (Number.isFinite(n) ? n.toFixed(1) : '-');
const f2 = (n) => (Number.isFinite(n) ? n.toFixed(2) : '-');
const f3 = (n) => (Number.isFinite(n) ? n.toFixed(3) : '-');
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;
const int = (n) => Number(n).toLocaleString('en-US');
const mib = (bytes) => `${(Number(bytes) / 2 ** 20).toFixed(1)} MiB`;

function gitDescribe() {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'migrations'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return dirty ? `${commit} (src/ or migrations/ modified)` : commit;
  } catch {
    return 'unknown';
  }
}

/** Stored answers as the API shows them (choice ids to labels), as answersView() in src/forms/blocks.ts. */
function expectedView(blocks, stored) {
  const out = {};
  const byId = new Map(blocks.map((b) => [b.id, b]));
  for (const [id, value] of Object.entries(stored)) {
    const b = byId.get(id);
    if (!b) continue;
    const choices = (b.settings && b.settings.choices) || [];
    if (b.type === 'multiple_choice' || b.type === 'dropdown') {
      const c = choices.find((x) => x.id === value);
      if (c) out[id] = c.label;
    } else if (b.type === 'checkboxes' && Array.isArray(value)) {
      out[id] = value.map((v) => (choices.find((x) => x.id === v) || {}).label).filter((l) => l !== undefined);
    } else {
      out[id] = value;
    }
  }
  return out;
}

/** What is wrong with a list_responses page, compared with the rows of the naive query (empty when right). */
function checkPage(name, json, expected, total, offset, blocks) {
  const wrong = [];
  if (json.total !== total) wrong.push(`total ${json.total}, expected ${total}`);
  if (json.offset !== offset) wrong.push(`offset ${json.offset}, expected ${offset}`);
  if (json.count !== expected.length) wrong.push(`count ${json.count}, expected ${expected.length}`);
  const got = Array.isArray(json.responses) ? json.responses : [];
  if (got.length !== expected.length) wrong.push(`${got.length} responses, expected ${expected.length}`);
  const firstBad = expected.findIndex((row, i) => !got[i] || got[i].id !== row.id);
  if (firstBad >= 0) wrong.push(`response ${firstBad} is ${got[firstBad] ? got[firstBad].id : 'missing'}, expected ${expected[firstBad].id} (seq ${expected[firstBad].seq})`);
  const badAnswers = expected.findIndex((row, i) => got[i] && got[i].id === row.id && (!isDeepStrictEqual(got[i].answers, expectedView(blocks, row.answers)) || got[i].submittedAt !== row.submitted_at.toISOString()));
  if (badAnswers >= 0) wrong.push(`response ${badAnswers} (${expected[badAnswers].id}) has answers ${JSON.stringify(got[badAnswers].answers)} at ${got[badAnswers].submittedAt}, expected ${JSON.stringify(expectedView(blocks, expected[badAnswers].answers))} at ${expected[badAnswers].submitted_at.toISOString()}`);
  return wrong.map((w) => `${name}: ${w}`);
}

/** What is wrong with a summarize_responses answer, compared with the naive recount (empty when right). */
function checkSummary(json, ref, latest, blocks, publicId) {
  const wrong = [];
  const near = (a, b) => a === b || (Number.isFinite(a) && Number.isFinite(b) && Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(b)));
  if (json.publicId !== publicId) wrong.push(`publicId ${json.publicId}`);
  if (json.total !== ref.total) wrong.push(`total ${json.total}, expected ${ref.total}`);
  if (json.firstSubmittedAt !== new Date(ref.first).toISOString()) wrong.push(`firstSubmittedAt ${json.firstSubmittedAt}, expected ${new Date(ref.first).toISOString()}`);
  if (json.lastSubmittedAt !== new Date(ref.last).toISOString()) wrong.push(`lastSubmittedAt ${json.lastSubmittedAt}, expected ${new Date(ref.last).toISOString()}`);
  const byId = new Map((json.blocks || []).map((s) => [s.blockId, s]));
  const answerable = blocks.filter((b) => b.type !== 'statement');
  if (byId.size !== answerable.length) wrong.push(`${byId.size} blocks summarised, expected ${answerable.length}`);
  for (const b of answerable) {
    const s = byId.get(b.id);
    if (!s) {
      wrong.push(`block ${b.id} (${b.type}) missing`);
      continue;
    }
    const answered = ref[`${b.id}:answered`];
    if (s.answered !== answered) wrong.push(`${b.id} (${b.type}) answered ${s.answered}, expected ${answered}`);
    if (s.skipped !== ref.total - answered) wrong.push(`${b.id} (${b.type}) skipped ${s.skipped}, expected ${ref.total - answered}`);
    const choices = (b.settings && b.settings.choices) || [];
    if (choices.length) {
      let sum = 0;
      for (const c of choices) {
        const got = (s.choices || []).find((x) => x.id === c.id);
        const want = ref[`${b.id}:${c.id}`];
        sum += got ? got.count : 0;
        if (!got || got.count !== want) wrong.push(`${b.id} (${b.type}) choice "${c.label}" count ${got ? got.count : 'missing'}, expected ${want}`);
      }
      // A single choice sums to the answered count; checkboxes to at least it (one or more each).
      if (b.type === 'checkboxes' ? sum < answered : sum !== answered) wrong.push(`${b.id} (${b.type}) choice counts sum to ${sum} for ${answered} answered`);
    } else if (b.type === 'yes_no') {
      if (s.yes !== ref[`${b.id}:true`] || s.no !== ref[`${b.id}:false`]) wrong.push(`${b.id} yes/no ${s.yes}/${s.no}, expected ${ref[`${b.id}:true`]}/${ref[`${b.id}:false`]}`);
      if (s.yes + s.no !== answered) wrong.push(`${b.id} yes + no = ${s.yes + s.no} for ${answered} answered`);
    } else if (['number', 'rating', 'linear_scale'].includes(b.type)) {
      const wantMean = answered ? ref[`${b.id}:sum`] / answered : null;
      if (s.min !== ref[`${b.id}:min`] || s.max !== ref[`${b.id}:max`]) wrong.push(`${b.id} (${b.type}) min/max ${s.min}/${s.max}, expected ${ref[`${b.id}:min`]}/${ref[`${b.id}:max`]}`);
      if (!(wantMean === null ? s.mean === null : near(s.mean, Math.round(wantMean * 10_000) / 10_000))) wrong.push(`${b.id} (${b.type}) mean ${s.mean}, expected ${wantMean}`);
    } else if (b.type === 'date') {
      if (s.min !== ref[`${b.id}:min`] || s.max !== ref[`${b.id}:max`]) wrong.push(`${b.id} (date) min/max ${s.min}/${s.max}, expected ${ref[`${b.id}:min`]}/${ref[`${b.id}:max`]}`);
    } else if (latest.has(b.id)) {
      const want = latest.get(b.id);
      const got = (s.latest || []).map((l) => [l.value, l.submittedAt]);
      if (!isDeepStrictEqual(got, want)) wrong.push(`${b.id} (${b.type}) latest ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    }
  }
  return wrong.map((w) => `summarize_responses: ${w}`);
}

function resultsTable(rows) {
  const lines = [
    '| Round | Request | req/s | p50 (ms) | p99 (ms) | mean (ms) | 2xx | non-2xx | errors | server CPU (% of a core) | server CPU ms/req | postgres CPU ms/req | other processes (% of a core) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    const b = r.round === 'mean' ? '**' : '';
    lines.push(`| ${b}${r.round}${b} | ${r.label} | ${f0(r.rps)} | ${b}${f2(r.p50)}${b} | ${f2(r.p99)} | ${f2(r.meanLat)} | ${r.total} | ${r.non2xx} | ${r.errors} | ${f0(r.cpuPct)} | ${f3(r.cpuPerReq)} | ${f3(r.pgPerReq)} | ${f0(r.otherPct)} |`);
  }
  return lines.join('\n');
}

// --- main ---------------------------------------------------------------------------------------

async function main() {
  const started = new Date();
  const ts = stamp(started);
  const dbName = `formwork_bench_${ts.replace('-', '_')}`;
  const dbUrl = urlWithDatabase(OPTS.adminUrl, dbName);
  const ctx = { dbName };
  const notes = [];
  const problems = [];
  const checks = [];
  const loadBefore = os.loadavg();
  let server;
  let dbCreated = false;
  /** Connections to close before the database can be dropped cleanly (DROP ... WITH (FORCE) would end them anyway). */
  const closers = new Set();

  const cleanup = async () => {
    for (const close of [...closers]) await close().catch(() => undefined);
    closers.clear();
    if (server) {
      try {
        await server.stop();
      } catch (err) {
        log(`could not stop ${server.name}: ${err.message}`);
      }
      server = undefined;
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
    log(`${signal}: stopping the server and dropping the database`);
    cleanup().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    for (const file of [CLI, MAIN, join(DIST, 'responses', 'response-stats.js'), join(DIST, 'database', 'data-source.js')]) {
      try {
        readFileSync(file);
      } catch {
        throw new Error(`${relative(ROOT, file)} is missing: run \`npm run build\` first (\`npm run bench:responses\` does)`);
      }
    }

    // --- database: create, migrate, seed -------------------------------------------------------
    const admin = new Client({ connectionString: OPTS.adminUrl });
    await admin.connect();
    let pgVersion;
    const pgSettings = {};
    try {
      pgVersion = (await admin.query('SHOW server_version')).rows[0].server_version;
      for (const name of ['shared_buffers', 'work_mem', 'max_wal_size', 'synchronous_commit']) pgSettings[name] = (await admin.query(`SHOW ${name}`)).rows[0][name];
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
      notes.push(`**The CLI \`demo --json\` failed**, so the database was seeded with \`bench/seed-demo.js\` (the same compiled \`DemoService.create()\`). CLI error: \`${why.replace(/`/g, "'")}\``);
      demo = await runJson('demo (bench/seed-demo.js)', [join(__dirname, 'seed-demo.js')], cliEnv);
    }
    if (typeof demo.token !== 'string' || !Array.isArray(demo.forms)) throw new Error(`the demo output has no token or forms: ${JSON.stringify(demo).slice(0, 500)}`);

    const db = new Client({ connectionString: dbUrl });
    await db.connect();
    closers.add(() => db.end());
    const form = (
      await db.query(
        `SELECT f.id, f.public_id, f.title, c.total::int AS total, c.last_seq::bigint AS last_seq, c.last_submitted_at
           FROM forms f JOIN response_counters c ON c.form_id = f.id
          WHERE f.title = $1 AND f.public_id = ANY($2::text[]) ORDER BY f.created_at LIMIT 1`,
        [FORM_TITLE, demo.forms],
      )
    ).rows[0];
    if (!form) throw new Error(`the demo has no form "${FORM_TITLE}" (forms: ${demo.forms.join(', ')})`);
    const blocks = (await db.query(`SELECT id, type, required, settings FROM blocks WHERE form_id = $1 ORDER BY position`, [form.id])).rows;
    const publicId = form.public_id;
    const demoCount = form.total;
    const expectedTotal = demoCount + OPTS.responses;
    log(`form under test: ${publicId} "${form.title}" (${blocks.length} blocks: ${blocks.map((b) => b.type).join(', ')}; ${demoCount} demo responses, last seq ${form.last_seq})`);

    // --- bulk load -------------------------------------------------------------------------------
    // submitted_at: after the demo's last one, evenly spaced up to (at most) now, never decreasing in seq.
    const now = (await db.query('SELECT clock_timestamp() AS now')).rows[0].now;
    const lastAt = form.last_submitted_at || new Date(now.getTime() - 3600_000);
    const stepUs = Math.max(1, Math.floor(((now.getTime() - lastAt.getTime()) * 1000) / (OPTS.responses + 1)));
    const answers = answersSql(blocks);
    const insertSql = `INSERT INTO responses (form_id, seq, submitted_at, answers, source)
      SELECT $1::uuid, $2::bigint + g, $3::timestamptz + g * make_interval(secs => $4::float8 / 1e6), ${answers}, 'import'
        FROM generate_series(1, $5::int) g`;
    const timings = [];
    const timed = async (label, fn) => {
      const t0 = performance.now();
      const r = await fn();
      const ms = performance.now() - t0;
      timings.push([label, ms]);
      log(`${label}: ${secs(ms)}`);
      return r;
    };
    log(`loading ${int(OPTS.responses)} responses with one INSERT ... SELECT FROM generate_series (expect tens of seconds)`);
    await timed(`Bulk load: ${int(OPTS.responses)} rows, one \`INSERT ... SELECT ... FROM generate_series\` + counter update, one transaction`, async () => {
      await db.query('BEGIN');
      try {
        const [c] = (await db.query('SELECT last_seq::bigint AS last_seq, last_submitted_at FROM response_counters WHERE form_id = $1 FOR UPDATE', [form.id])).rows;
        const r = await db.query(insertSql, [form.id, c.last_seq, c.last_submitted_at || lastAt, stepUs, OPTS.responses]);
        if (r.rowCount !== OPTS.responses) throw new Error(`the bulk INSERT inserted ${r.rowCount} rows, expected ${OPTS.responses}`);
        await db.query(
          `UPDATE response_counters SET last_seq = last_seq + $2::bigint,
                  last_submitted_at = (SELECT max(submitted_at) FROM responses WHERE form_id = $1 AND seq = last_seq + $2::bigint)
            WHERE form_id = $1`,
          [form.id, OPTS.responses],
        );
        await db.query('COMMIT');
      } catch (err) {
        await db.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });

    // Build the aggregates with the service's own code, as after any bulk import.
    require('reflect-metadata');
    const { dataSourceOptions } = require(join(DIST, 'database', 'data-source.js'));
    const { recomputeResponseStats } = require(join(DIST, 'responses', 'response-stats.js'));
    const { DataSource } = require('typeorm');
    const dataSource = new DataSource(dataSourceOptions(dbUrl, 2, false));
    await dataSource.initialize();
    const closeDs = () => dataSource.destroy();
    closers.add(closeDs);
    try {
      await timed('Aggregates: `recomputeResponseStats()` (dist/src/responses/response-stats.js), one transaction', () => dataSource.transaction((tx) => recomputeResponseStats(tx, form.id)));
    } finally {
      closers.delete(closeDs);
      await dataSource.destroy();
    }
    // Settle the table as it would be after autovacuum, so that no vacuum or checkpoint runs during the rounds.
    await timed('`VACUUM (ANALYZE)` of the database', () => db.query('VACUUM (ANALYZE)'));
    try {
      await timed('`CHECKPOINT`', () => db.query('CHECKPOINT'));
    } catch (err) {
      notes.push(`\`CHECKPOINT\` failed (${err.message}); a checkpoint of the load's WAL may have run during the rounds.`);
    }

    const counter = (await db.query('SELECT total::bigint AS total, last_seq::bigint AS last_seq, last_submitted_at FROM response_counters WHERE form_id = $1', [form.id])).rows[0];
    if (Number(counter.total) !== expectedTotal || Number(counter.last_seq) !== Number(form.last_seq) + OPTS.responses) {
      throw new Error(`after the load the counter says total ${counter.total}, last_seq ${counter.last_seq}; expected ${expectedTotal} and ${Number(form.last_seq) + OPTS.responses}`);
    }
    const sizes = (
      await db.query(
        `SELECT t AS table, pg_total_relation_size(t::regclass) AS total, pg_relation_size(t::regclass) AS heap, pg_indexes_size(t::regclass) AS indexes,
                (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I', t), false, true, '')))[1]::text::bigint AS rows
           FROM unnest(ARRAY['responses', 'response_counters', 'response_buckets', 'block_stats', 'answer_counts']) t`,
      )
    ).rows;
    const buckets = Number((await db.query('SELECT count(*) AS n FROM response_buckets WHERE form_id = $1', [form.id])).rows[0].n);

    // --- the naive SQL the maintained structures avoid (psql), and the reference values -----------
    const fid = lit(form.id);
    const naive = [
      { key: 'count', label: '`SELECT count(*) FROM responses WHERE form_id = …`', sql: `SELECT count(*) FROM responses WHERE form_id = ${fid}`, avoided: 'the total of list_responses and summarize_responses (read from response_counters)' },
      { key: 'offset0', label: '`SELECT id, submitted_at, answers … ORDER BY seq OFFSET 0 LIMIT 200`', sql: `SELECT id, submitted_at, answers FROM responses WHERE form_id = ${fid} ORDER BY seq OFFSET 0 LIMIT ${PAGE}`, avoided: '(for comparison: the shallow page)' },
      { key: 'deep', label: `\`SELECT id, submitted_at, answers … ORDER BY seq OFFSET ${DEEP_OFFSET} LIMIT 200\``, sql: `SELECT id, submitted_at, answers FROM responses WHERE form_id = ${fid} ORDER BY seq OFFSET ${DEEP_OFFSET} LIMIT ${PAGE}`, avoided: 'the deep page (response_buckets: sum bucket counts, walk at most one bucket)' },
      { key: 'summary', label: 'one-scan summary: `count(*) FILTER (…)`, `sum`, `min`, `max` per block and choice', sql: naiveSummarySql(form.id, blocks), avoided: 'summarize_responses (block_stats, answer_counts)' },
    ];
    for (const q of naive) {
      log(`naive SQL (${OPTS.naiveRuns} runs): ${q.key}`);
      Object.assign(q, await timedSql(dbUrl, q.sql, OPTS.naiveRuns));
      q.plan = await planOf(db, q.sql);
    }
    if (naive.some((q) => q.via === 'pg')) notes.push('psql was not found: the naive queries were timed with the pg client around each query (includes the client round trip and parsing).');
    const ref = JSON.parse(naive.find((q) => q.key === 'summary').output);
    const naiveCount = Number(naive.find((q) => q.key === 'count').output);
    if (naiveCount !== expectedTotal || ref.total !== expectedTotal) throw new Error(`the form has ${naiveCount} responses (recount ${ref.total}), expected ${expectedTotal}`);
    const pageRows = async (offset) => (await db.query(`SELECT id, seq::bigint AS seq, submitted_at, answers FROM responses WHERE form_id = $1 ORDER BY seq OFFSET $2 LIMIT $3`, [form.id, offset, PAGE])).rows;
    const expectedShallow = await pageRows(0);
    const expectedDeep = await pageRows(DEEP_OFFSET);
    const latest = new Map();
    for (const b of blocks.filter((x) => ['short_text', 'long_text', 'email', 'url', 'phone'].includes(x.type))) {
      const rows = (await db.query(`SELECT answers ->> $2 AS value, submitted_at FROM responses WHERE form_id = $1 AND answers ? $2 ORDER BY seq DESC LIMIT 5`, [form.id, b.id])).rows;
      latest.set(b.id, rows.map((r) => [r.value, r.submitted_at.toISOString()]));
    }

    // --- the server ------------------------------------------------------------------------------
    const port = await freePort();
    server = new Server('formwork', [MAIN], {
      ...baseEnv,
      PORT: String(port),
      DATABASE_URL: dbUrl,
      RATE_LIMIT_CREDENTIAL_PER_MIN: String(RATE_LIMIT),
      RATE_LIMIT_IP_PER_MIN: String(RATE_LIMIT),
      BOOTSTRAP_DEMO: 'false',
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
    });
    const base = `http://127.0.0.1:${port}/api/v1/tools`;
    const headers = { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' };
    const target = (key, label, tool, args) => ({ key, label, server, url: `${base}/${tool}`, headers, body: JSON.stringify(args) });
    const targets = [
      target('shallow', `list_responses offset 0`, 'list_responses', { publicId, limit: PAGE, offset: 0 }),
      target('deep', `list_responses offset ${int(DEEP_OFFSET)}`, 'list_responses', { publicId, limit: PAGE, offset: DEEP_OFFSET }),
      target('summary', 'summarize_responses', 'summarize_responses', { publicId }),
    ];
    const byKey = Object.fromEntries(targets.map((t) => [t.key, t]));
    await server.waitUntil(async () => (await post(targets[0].url, headers, targets[0].body, 5_000)).status === 200, 60_000);
    log(`formwork answers on ${base}`);

    // --- correctness, before any load ---------------------------------------------------------------
    const bodySizes = {};
    const answersOf = async (t) => {
      const r = await post(t.url, t.headers, t.body);
      if (r.status !== 200) throw new Error(`${t.label} answered ${r.status}: ${r.text.slice(0, 500)}`);
      bodySizes[t.key] = Buffer.byteLength(r.text);
      return JSON.parse(r.text);
    };
    const wrong = [
      ...checkPage(byKey.shallow.label, await answersOf(byKey.shallow), expectedShallow, expectedTotal, 0, blocks),
      ...checkPage(byKey.deep.label, await answersOf(byKey.deep), expectedDeep, expectedTotal, DEEP_OFFSET, blocks),
    ];
    const summary = await answersOf(byKey.summary);
    wrong.push(...checkSummary(summary, ref, latest, blocks, publicId));
    if (wrong.length) {
      for (const w of wrong) problems.push(`wrong answer: ${w}`);
      log(`WRONG ANSWERS:\n  ${wrong.join('\n  ')}`);
    } else {
      checks.push(
        `\`${byKey.shallow.label}\`: count ${PAGE}, total ${int(expectedTotal)}, the first ${PAGE} responses in seq order (ids, submittedAt and answers with choice labels equal to the rows of the naive query).`,
        `\`${byKey.deep.label}\`: count ${PAGE}, total ${int(expectedTotal)}, exactly the rows of \`ORDER BY seq OFFSET ${DEEP_OFFSET} LIMIT ${PAGE}\` (seq ${expectedDeep[0].seq}…${expectedDeep[expectedDeep.length - 1].seq}).`,
        `\`summarize_responses\`: total ${int(summary.total)}; for every block answered/skipped, every choice count (single-choice counts sum to answered, checkbox counts to at least it), yes/no, min/max/mean, first/last submittedAt and the latest texts equal the one-scan recount.`,
      );
      log('answers checked: both pages and the summary equal the naive SQL');
    }
    const choiceBlocks = summary.blocks.filter((s) => Array.isArray(s.choices));
    notes.push(
      `Summary sample: ${choiceBlocks.map((s) => `${s.type} "${s.title}" ${s.choices.map((c) => `${c.label} ${int(c.count)}`).join(', ')} (answered ${int(s.answered)})`).join('; ')}.`,
    );

    // --- load ----------------------------------------------------------------------------------------
    for (const t of targets) {
      log(`warm-up ${t.label} (${OPTS.warmup} s)`);
      const w = figures(await cannon(t, OPTS.warmup, ctx));
      server.assertAlive();
      if (w.problems.length) problems.push(`${t.label} warm-up: ${w.problems.join('; ')}`);
    }
    const rows = [];
    for (let round = 1; round <= OPTS.rounds; round++) {
      for (const t of targets) {
        log(`round ${round}/${OPTS.rounds}: ${t.label} (${OPTS.duration} s, ${OPTS.connections} connections)`);
        const fig = figures(await cannon(t, OPTS.duration, ctx));
        server.assertAlive();
        rows.push({ round: String(round), key: t.key, label: t.label, ...fig });
        log(`  ${f0(fig.rps)} req/s, p50 ${f2(fig.p50)} ms, p99 ${f2(fig.p99)} ms, server ${f3(fig.cpuPerReq)} ms/req, postgres ${f3(fig.pgPerReq)} ms/req, other processes ${f0(fig.otherPct)}%${fig.problems.length ? `, PROBLEMS: ${fig.problems.join('; ')}` : ''}`);
        for (const p of fig.problems) problems.push(`round ${round} ${t.label}: ${p}`);
      }
    }

    // Unloaded: one request at a time, the three interleaved.
    log(`unloaded latency: ${OPTS.serial} sequential requests of each, interleaved`);
    const serial = Object.fromEntries(targets.map((t) => [t.key, []]));
    for (let i = 0; i < OPTS.serial; i++) {
      for (const t of targets) {
        const t0 = performance.now();
        const r = await post(t.url, t.headers, t.body);
        const ms = performance.now() - t0;
        if (r.status !== 200) {
          problems.push(`unloaded ${t.label} answered ${r.status}: ${r.text.slice(0, 300)}`);
          break;
        }
        serial[t.key].push(ms);
      }
    }

    // The rate limits counted the load (and refused none: every answer was 200).
    const after = await post(byKey.summary.url, headers, byKey.summary.body);
    const limit = Number(after.headers.get('x-ratelimit-limit'));
    const remaining = Number(after.headers.get('x-ratelimit-remaining'));
    if (after.status !== 200) problems.push(`formwork answered ${after.status} after the load: ${after.text.slice(0, 300)}`);
    if (limit !== RATE_LIMIT || !(remaining < RATE_LIMIT - 1)) problems.push(`the rate-limit headers after the load do not show counting: limit ${limit}, remaining ${remaining}`);
    else notes.push(`Rate limits were on and counting: after the load, \`X-RateLimit-Limit: ${limit}\`, \`X-RateLimit-Remaining: ${remaining}\`.`);
    server.assertAlive();

    // --- report ------------------------------------------------------------------------------------
    const means = {};
    for (const t of targets) {
      const rs = rows.filter((r) => r.key === t.key);
      const m = (k) => mean(rs.map((r) => r[k]));
      means[t.key] = { rps: m('rps'), p50: m('p50'), p99: m('p99'), meanLat: m('meanLat'), cpuPct: m('cpuPct'), cpuPerReq: m('cpuPerReq'), pgPerReq: m('pgPerReq'), otherPct: m('otherPct') };
    }
    const table = [];
    for (const t of targets) {
      const rs = rows.filter((r) => r.key === t.key);
      table.push(...rs, { round: 'mean', label: t.label, ...means[t.key], total: rs.reduce((a, r) => a + r.total, 0), non2xx: rs.reduce((a, r) => a + r.non2xx, 0), errors: rs.reduce((a, r) => a + r.errors, 0) });
    }
    const perRound = (num, den, k) => Array.from({ length: OPTS.rounds }, (_, i) => rows.find((r) => r.round === String(i + 1) && r.key === num)[k] / rows.find((r) => r.round === String(i + 1) && r.key === den)[k]);
    const serialP50 = Object.fromEntries(targets.map((t) => [t.key, median(serial[t.key])]));
    const ratios = [
      { name: 'summarize / list page (offset 0)', num: 'summary', den: 'shallow', target: OPTS.targetSummary, goal: 'about the time of one page' },
      { name: `list page offset ${int(DEEP_OFFSET)} / offset 0`, num: 'deep', den: 'shallow', target: OPTS.targetDeep, goal: 'no more than 3x' },
    ].map((r) => ({
      ...r,
      p50: means[r.num].p50 / means[r.den].p50,
      perRound: perRound(r.num, r.den, 'p50'),
      meanLat: means[r.num].meanLat / means[r.den].meanLat,
      p99: means[r.num].p99 / means[r.den].p99,
      rps: means[r.den].rps / means[r.num].rps,
      cpu: (means[r.num].cpuPerReq + means[r.num].pgPerReq) / (means[r.den].cpuPerReq + means[r.den].pgPerReq),
      serial: serialP50[r.num] / serialP50[r.den],
    }));
    for (const r of ratios) r.pass = r.p50 <= r.target;
    const outcome = (r) => (problems.length ? 'NOT VALID, see Problems' : r.pass ? 'PASS' : 'FAIL');
    const verdicts = ratios.map((r) => `- ${r.name}, p50 latency at ${OPTS.connections} connections: **${f2(r.p50)}×** (per round: ${r.perRound.map(f2).join(', ')}) — target <= ${r.target} (${r.goal}): **${outcome(r)}**`);
    const overall = problems.length ? 'NOT VALID' : ratios.every((r) => r.pass) ? 'PASS' : 'FAIL';
    const measured = rows;
    const noisy = measured.filter((r) => r.otherPct > NOISY_OTHER_PCT);
    const noise = noisy.length
      ? `**Noisy:** other processes took more than ${NOISY_OTHER_PCT}% of a core during ${noisy.length} of ${measured.length} rounds (${noisy.map((r) => `${r.round} ${r.label}: ${f0(r.otherPct)}%`).join(', ')}); run it again on a quiet machine.`
      : measured.some((r) => Number.isFinite(r.otherPct))
        ? `Quiet: other processes took at most ${f0(Math.max(...measured.map((r) => r.otherPct)))}% of a core during any round.`
        : 'The CPU of other processes could not be measured (no /proc).';
    const sizeRows = sizes.map((s) => `| ${s.table} | ${int(s.rows)} | ${mib(s.total)} | ${mib(s.heap)} | ${mib(s.indexes)} |`);
    const naiveRows = naive.map((q) => `| ${q.label} | ${q.times.map(f1).join(', ')} | **${f1(Math.min(...q.times))}** | ${q.plan} | ${q.avoided} |`);
    const serviceFor = { count: undefined, offset0: 'shallow', deep: 'deep', summary: 'summary' };
    const naiveVs = naive
      .filter((q) => serviceFor[q.key])
      .map((q) => `${q.key === 'offset0' ? 'offset 0' : q.key === 'deep' ? `offset ${int(DEEP_OFFSET)}` : 'summary'}: naive SQL ${f1(Math.min(...q.times))} ms vs the service's whole request ${f2(serialP50[serviceFor[q.key]])} ms unloaded`);

    const md = [
      `# Responses at scale: ${int(OPTS.responses)} responses on one form, ${started.toISOString()}`,
      '',
      `**${overall}**`,
      '',
      ...verdicts,
      '',
      noise,
      '',
      '## Data',
      '',
      `Form \`${publicId}\` "${form.title}" (${blocks.length} blocks: ${blocks.map((b) => `${b.type}${b.required ? '*' : ''}`).join(', ')}; * required) in a fresh database \`${dbName}\`: ${demoCount} demo responses (seq 1…${form.last_seq}) + ${int(OPTS.responses)} loaded by SQL (seq ${Number(form.last_seq) + 1}…${counter.last_seq}, submittedAt every ${stepUs} µs after the demo's last), ${int(expectedTotal)} in all, ${buckets} seek buckets.`,
      '',
      '| Step | Time |',
      '| --- | ---: |',
      ...timings.map(([label, ms], i) => `| ${label}${i === 0 ? ` (${int(Math.round(OPTS.responses / (ms / 1000)))} rows/s)` : ''} | **${secs(ms)}** |`),
      '',
      '| Table | Rows | Total (pg_total_relation_size) | Heap | Indexes |',
      '| --- | ---: | ---: | ---: | ---: |',
      ...sizeRows,
      '',
      '## Under load',
      '',
      `${OPTS.connections} connections, ${OPTS.duration} s per round, ${OPTS.rounds} rounds alternating the three requests, after ${OPTS.warmup} s of warm-up each. Latencies are every 2xx response's own time (not autocannon's whole-ms histogram).`,
      '',
      resultsTable(table),
      '',
      '| Ratio | p50 (the verdict) | per round (p50) | mean latency | p99 | inverse of req/s | CPU per request (server + postgres) | unloaded p50 |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...ratios.map((r) => `| ${r.name} | **${f2(r.p50)}** | ${r.perRound.map(f2).join(', ')} | ${f2(r.meanLat)} | ${f2(r.p99)} | ${f2(r.rps)} | ${f2(r.cpu)} | ${f2(r.serial)} |`),
      '',
      '## Unloaded (1 connection)',
      '',
      `${OPTS.serial} sequential requests of each, interleaved, after the rounds; client-side time of the whole request (fetch, keep-alive).`,
      '',
      '| Request | p50 (ms) | p90 (ms) | min (ms) | body (bytes) |',
      '| --- | ---: | ---: | ---: | ---: |',
      ...targets.map((t) => {
        const s = Float64Array.from(serial[t.key]).sort();
        return `| ${t.label} | **${f2(percentile(s, 50))}** | ${f2(percentile(s, 90))} | ${f2(s[0])} | ${bodySizes[t.key]} |`;
      }),
      '',
      `## Naive SQL baseline (${naive[0].via === 'psql' ? 'psql `\\timing`' : 'pg client'}), on the same data`,
      '',
      `What the maintained structures avoid. ${OPTS.naiveRuns} runs each in one session (all shown, in order; the first may warm the cache); plans from \`EXPLAIN (COSTS OFF)\`.`,
      '',
      '| Query | Runs (ms) | Best (ms) | Plan | Replaced in the service by |',
      '| --- | ---: | ---: | --- | --- |',
      ...naiveRows,
      '',
      `For scale: ${naiveVs.join('; ')}.`,
      '',
      '## Checks (before the measured requests)',
      '',
      ...(checks.length ? checks.map((c) => `- ${c}`) : ['- FAILED: see Problems.']),
      '',
      '## Notes',
      '',
      `- Service: \`dist/src/main.js\`, \`POST /api/v1/tools/{tool}\` with the demo's admin token, NODE_ENV=production, LOG_LEVEL=warn, BOOTSTRAP_DEMO=false, both rate limits at ${RATE_LIMIT}/min, default pool. Bodies: ${targets.map((t) => `${t.label} ${bodySizes[t.key]} bytes`).join(', ')}.`,
      `- Load generator: autocannon ${require('autocannon/package.json').version} in this process; client, server and PostgreSQL share the machine. Compare the ratios measured in one run, not absolute numbers across runs.`,
      `- Machine: ${os.cpus().length} × ${os.cpus()[0] ? os.cpus()[0].model.trim() : 'unknown CPU'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.version}; PostgreSQL ${pgVersion} (${Object.entries(pgSettings).map(([k, v]) => `${k} ${v}`).join(', ')}); commit ${gitDescribe()}; load average ${loadBefore.map((l) => l.toFixed(2)).join(' / ')} (1/5/15 min) at the start, the build included.`,
      ...notes.map((n) => `- ${n}`),
      ...(problems.length ? ['', '## Problems', '', ...problems.map((p) => `- ${p}`)] : []),
      '',
    ].join('\n');

    mkdirSync(RESULTS, { recursive: true });
    const out = join(RESULTS, `responses-at-scale-${ts}.md`);
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
  if (interrupted) return;
  log(`FAILED: ${err && err.stack ? err.stack : String(err)}`);
  process.exitCode = 1;
});

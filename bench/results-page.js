'use strict';
/**
 * The results pages at scale (issue 27): the time the server takes to answer a form's Summary page
 * and its Responses page 5,000 (50 a page) on a form with BENCH_RESULTS_RESPONSES (1,000,000)
 * responses, signed in as the workspace's owner. Target: under 200 ms each (p50). See
 * bench/README.md. Run with `npm run build && node bench/results-page.js`.
 *
 * 1. a fresh database formwork_bench_results_<timestamp>, migrated and seeded with the CLI's demo;
 *    the owner's password set with the CLI (`user set-password --password-stdin`);
 * 2. the built service (dist/src/main.js, production settings) as a child process;
 * 3. bulk-loads the responses into the demo's "Customer feedback" by SQL (INSERT ... SELECT FROM
 *    generate_series, valid answers for every block), then builds the maintained aggregates with
 *    the service's own compiled recomputeResponseStats() and runs VACUUM ANALYZE;
 * 4. signs in through the sign-in page (its CSRF field and cookie) and checks both pages answer 200
 *    with the expected totals;
 * 5. times the two pages alternately, BENCH_RESULTS_REQUESTS (40) sequential requests each after
 *    5 warm-up requests, from this process over loopback (so the time is the server's plus a
 *    loopback round trip), and prints and writes a Markdown report to
 *    bench/results/results-page-<timestamp>.md; drops the database, also after a failure.
 */
const { spawn } = require('node:child_process');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { Client } = require('pg');
const {
  DIST,
  CLI,
  MAIN,
  COUNTING_LIMITS,
  log,
  envNumber,
  loadOptions,
  requireBuilt,
  freePort,
  cleanEnv,
  serviceEnv,
  Server,
  startRun,
  migrateAndSeed,
  Teardown,
  runMain,
  percentile,
  writeReport,
} = require('./lib');
const { answersSql } = require('./answers-sql');

const RESPONSES = envNumber('BENCH_RESULTS_RESPONSES', 1_000_000, { integer: true, min: 1 });
const REQUESTS = envNumber('BENCH_RESULTS_REQUESTS', 40, { integer: true, min: 1 });
const PAGE = envNumber('BENCH_RESULTS_PAGE', 5_000, { integer: true, min: 1 });
const CHUNK = 200_000;
const TARGET_MS = 200;
const PASSWORD = 'results bench password';

/** One GET with the session cookie: status, body and the time to the last byte. */
async function timedGet(url, cookie) {
  const t0 = performance.now();
  const res = await fetch(url, { headers: { cookie }, redirect: 'manual' });
  const body = await res.text();
  return { status: res.status, body, ms: performance.now() - t0 };
}

/** The owner's password, through the CLI (read from standard input, never the command line). */
function setPassword(env, email) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'user', 'set-password', '--email', email, '--password-stdin'], {
      env,
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c) => (err += c));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`user set-password: ${err}`))));
    child.stdin.end(`${PASSWORD}\n`);
  });
}

/** Signs in through the page: the sign-in form's CSRF field and cookie, then the session cookie. */
async function signIn(base, email) {
  const page = await fetch(`${base}/settings/sign-in`);
  const signin = (page.headers.get('set-cookie') || '').split(';')[0];
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1];
  if (!csrf) throw new Error('no CSRF field on the sign-in page');
  const res = await fetch(`${base}/settings/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: signin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email, password: PASSWORD, csrf, next: '/settings' }),
  });
  const session = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c.startsWith('fw_session=') && c.length > 'fw_session='.length);
  if (res.status !== 303 || !session) throw new Error(`sign-in answered ${res.status} without a session`);
  return session;
}

async function main(teardown) {
  requireBuilt([MAIN, CLI], 'bench/results-page.js');
  const { adminUrl } = loadOptions({ connections: 1, rounds: 1 });
  const { ts, database } = startRun('formwork_bench_results', { adminUrl });
  teardown.database = database;
  await database.create();
  const cliEnv = { ...cleanEnv(), DATABASE_URL: database.url, NODE_ENV: 'production', LOG_LEVEL: 'warn' };
  const { demo } = await migrateAndSeed(cliEnv);
  const email = 'owner@demo.formwork.local';
  await setPassword(cliEnv, email);

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = new Server(
    'formwork',
    [MAIN],
    serviceEnv(cleanEnv(), port, database.url, { ...COUNTING_LIMITS, PUBLIC_URL: base }),
    { stdout: '/dev/null' },
  );
  teardown.servers.push(server);
  await server.waitUntil(async () => (await fetch(`${base}/readyz`)).ok, 60_000);

  // Bulk load, then the aggregates with the service's own code.
  const db = new Client({ connectionString: database.url });
  await db.connect();
  teardown.closers.add(() => db.end());
  const publicId = demo.forms[0];
  const [form] = (await db.query('SELECT id, workspace_id FROM forms WHERE public_id = $1', [publicId])).rows;
  const blocks = (
    await db.query('SELECT id, type, required, settings FROM blocks WHERE form_id = $1 ORDER BY position', [form.id])
  ).rows;
  const [{ last_seq: lastSeq }] = (
    await db.query('SELECT last_seq::bigint AS last_seq FROM response_counters WHERE form_id = $1', [form.id])
  ).rows;
  const { slug } = (await db.query('SELECT slug FROM workspaces WHERE id = $1', [form.workspace_id])).rows[0];
  const t0 = performance.now();
  for (let lo = 1; lo <= RESPONSES; lo += CHUNK) {
    const hi = Math.min(RESPONSES, lo + CHUNK - 1);
    await db.query(
      `INSERT INTO responses (form_id, seq, submitted_at, answers, source)
       SELECT $1::uuid, $2::bigint + g, timestamptz '2025-01-01' + g * interval '10 seconds', ${answersSql(blocks)}, 'import'
         FROM generate_series($3::int, $4::int) g`,
      [form.id, lastSeq, lo, hi],
    );
    log(`loaded ${hi.toLocaleString('en-US')} of ${RESPONSES.toLocaleString('en-US')}`);
  }
  await db.query(
    `UPDATE response_counters SET last_seq = last_seq + $2,
       last_submitted_at = GREATEST(last_submitted_at, timestamptz '2025-01-01' + $2 * interval '10 seconds') WHERE form_id = $1`,
    [form.id, RESPONSES],
  );
  const loadMs = performance.now() - t0;
  require('reflect-metadata');
  const { dataSourceOptions } = require(join(DIST, 'database', 'data-source.js'));
  const { ResponseStatsRepository } = require(join(DIST, 'summaries', 'response-stats.repository.js'));
  const longStatements = require(join(DIST, 'database', 'long-statements.js'));
  if (longStatements.LONG_STATEMENT_MS < 3_600_000) longStatements.LONG_STATEMENT_MS = 3_600_000;
  const { DataSource } = require('typeorm');
  const ds = new DataSource(dataSourceOptions(database.url, 2, false));
  await ds.initialize();
  const t1 = performance.now();
  await ds.transaction((tx) => new ResponseStatsRepository().recomputeResponseStats(tx, form.id));
  await ds.destroy();
  const statsMs = performance.now() - t1;
  await db.query('VACUUM ANALYZE responses');
  const [{ total }] = (await db.query('SELECT total::int FROM response_counters WHERE form_id = $1', [form.id])).rows;

  const cookie = await signIn(base, email);
  // A smaller load has fewer pages: its last one then.
  const page = Math.min(PAGE, Math.ceil(total / 50));
  const pages = {
    summary: `${base}/settings/w/${slug}/forms/${publicId}`,
    [`responses page ${page.toLocaleString('en-US')}`]: `${base}/settings/w/${slug}/forms/${publicId}/responses?page=${page}`,
  };
  const expect = {
    summary: `${total.toLocaleString('en-US')} responses`,
    [`responses page ${page.toLocaleString('en-US')}`]: `${total.toLocaleString('en-US')} responses; ${((page - 1) * 50 + 1).toLocaleString('en-US')} to`,
  };
  for (const [name, url] of Object.entries(pages)) {
    const r = await timedGet(url, cookie);
    if (r.status !== 200 || !r.body.includes(expect[name]))
      throw new Error(`${name}: ${r.status}, without "${expect[name]}": ${r.body.slice(0, 300)}`);
    for (let i = 0; i < 4; i++) await timedGet(url, cookie);
  }
  const times = Object.fromEntries(Object.keys(pages).map((k) => [k, []]));
  for (let i = 0; i < REQUESTS; i++)
    for (const [name, url] of Object.entries(pages)) {
      const r = await timedGet(url, cookie);
      if (r.status !== 200) throw new Error(`${name} answered ${r.status}`);
      times[name].push(r.ms);
    }
  const rows = Object.entries(times).map(([name, ms]) => {
    const sorted = [...ms].sort((a, b) => a - b);
    const p50 = percentile(sorted, 50);
    return `| ${name} | ${p50.toFixed(1)} | ${percentile(sorted, 95).toFixed(1)} | ${sorted[sorted.length - 1].toFixed(1)} | ${p50 < TARGET_MS ? 'PASS' : 'FAIL'} |`;
  });
  const md = [
    `# Results pages at ${total.toLocaleString('en-US')} responses (${ts})`,
    '',
    `Form: the demo's "Customer feedback" (${blocks.length} blocks), ${RESPONSES.toLocaleString('en-US')} responses bulk-loaded in ${(loadMs / 1000).toFixed(1)} s, aggregates rebuilt in ${(statsMs / 1000).toFixed(1)} s.`,
    `Signed in as the owner; ${REQUESTS} sequential requests per page, alternating, after 5 warm-up requests; time to the last byte over loopback.`,
    '',
    `| page | p50 ms | p95 ms | max ms | p50 < ${TARGET_MS} ms |`,
    '|---|---:|---:|---:|---|',
    ...rows,
    '',
  ].join('\n');
  log(`report: ${writeReport(`results-page-${ts}.md`, md)}`);
}

const teardown = new Teardown();
teardown.onSignals('stopping the results page bench');
runMain(() => main(teardown), teardown);

'use strict';
/**
 * The respondent page at the speed of the API (issue 52). Run with `npm run bench:page` (builds first).
 *
 * 1. a fresh database formwork_bench_page_<timestamp>, migrated and seeded with the CLI's demo; the
 *    demo's first form (published, 9 blocks) is the form under test;
 * 2. the baseline server (bench/baseline-server.js) and Formwork (dist/src/main.js, production,
 *    budgets and spam rates counted in Redis, raised so that they never refuse);
 * 3. page GET: `GET /f/{publicId}` on Formwork against the floor, `GET /page/{id}` on the bare
 *    node:http + pg server, which reads the page as Formwork served it (stored in
 *    bench_stored_pages: the same bytes) by primary key;
 * 4. page post: `POST /f/{publicId}` (a browser's form post without JavaScript: the page's state,
 *    drawn more than the spam gate's minimum time before, and an answer to every question) against
 *    `create_response` of the same answers over the tools; the figure is the service's CPU per
 *    request, post / create_response;
 * 5. alternated rounds (warm-up, then BENCH_ROUNDS rounds of each target in turn), a Markdown
 *    table to bench/results/page-<timestamp>.md, targets: GET >= 0.5x of the floor with p99 under
 *    50 ms at 50 connections, post <= 1.25x the CPU of create_response.
 */
const os = require('node:os');
const { mkdirSync, existsSync, readFileSync, statSync } = require('node:fs');
const cpuProfile = require('./cpu-profile');
const { join } = require('node:path');
const { Client } = require('pg');
const lib = require('./lib');
const { CLI, MAIN } = lib;
const {
  RESULTS,
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
  loadTarget,
  figures,
  alternateRounds,
  roundLog,
  f0,
  f1,
  f2,
  f3,
  meanRow,
  noiseLine,
  autocannonVersion,
  machineLine,
  writeReport,
} = lib;

const OPTS = {
  ...loadOptions({ connections: 50, rounds: 3 }),
  getTarget: envNumber('BENCH_TARGET', 0.5),
  p99Target: envNumber('BENCH_P99_MS', 50),
  postCpuTarget: envNumber('BENCH_POST_CPU', 1.25),
  redisUrl: process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379',
  /** 1: after the rounds, a CPU profile of Formwork on each of its targets (fresh process, load window only). */
  profile: lib.envFlag('BENCH_PROFILE'),
};
const PRODUCTION = { NODE_ENV: 'production', LOG_LEVEL: 'info', ...COUNTING_LIMITS };
const POOL_SIZE = 10;
const teardown = new Teardown();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A browser's form post of answers to every question of `form` (get_form's blocks), as the page's fields name them. */
function formFields(form) {
  const fields = new URLSearchParams();
  const sample = {
    short_text: 'Bench',
    long_text: 'Bench',
    email: 'bench@example.com',
    url: 'https://example.com',
    phone: '+33123456789',
    date: '2026-01-01',
    yes_no: 'true',
  };
  for (const b of form.blocks) {
    if (b.type in sample) fields.append(b.id, sample[b.type]);
    else if (b.type === 'rating' || b.type === 'linear_scale') fields.append(b.id, String(Math.min(b.max ?? 3, 3)));
    else if (b.type === 'number') fields.append(b.id, String(b.min ?? 1));
    else if (b.choices) fields.append(b.id, b.choices[0].id);
  }
  return fields;
}

async function query(dbUrl, sql, params) {
  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  try {
    return (await db.query(sql, params)).rows;
  } finally {
    await db.end();
  }
}

function resultsTable(rows) {
  const lines = [
    '| Round | Server | req/s | p50 (ms) | p99 (ms) | 2xx | non-2xx | errors | server CPU (% of a core) | server CPU ms/req | other processes (% of a core) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows)
    lines.push(
      `| ${r.round} | ${r.server} | ${f0(r.rps)} | ${f1(r.p50)} | ${f1(r.p99)} | ${r.total} | ${r.non2xx} | ${r.errors} | ${f0(r.cpuPct)} | ${f3(r.cpuPerReq)} | ${f0(r.otherPct)} |`,
    );
  return lines.join('\n');
}

async function main() {
  const { started, ts, database } = startRun('formwork_bench_page', OPTS);
  mkdirSync(RESULTS, { recursive: true });
  const { name: dbName, url: dbUrl } = database;
  const loadBefore = os.loadavg();
  const problems = [];
  const notes = [];
  const servers = teardown.servers;
  teardown.onSignals('stopping servers and dropping the database');
  requireBuilt([CLI, MAIN], 'bench:page');

  teardown.database = database;
  const { version: pgVersion } = await database.create();
  const baseEnv = cleanEnv();
  const { demo } = await migrateAndSeed({
    ...baseEnv,
    DATABASE_URL: dbUrl,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    BOOTSTRAP_DEMO: 'false',
  });
  const publicId = demo.forms[0];
  const [form] = await query(dbUrl, 'SELECT id, title FROM forms WHERE public_id = $1', [publicId]);

  const [basePort, fwPort] = [await freePort(), await freePort()];
  const baseline = new Server('floor', [join(__dirname, 'baseline-server.js')], {
    ...baseEnv,
    NODE_ENV: 'production',
    DATABASE_URL: dbUrl,
    PORT: String(basePort),
    POOL_SIZE: String(POOL_SIZE),
  });
  servers.push(baseline);
  const fwEnv = serviceEnv(baseEnv, fwPort, dbUrl, { ...PRODUCTION, REDIS_URL: OPTS.redisUrl });
  const formwork = new Server('formwork', [MAIN], fwEnv, { stdout: '/dev/null' });
  servers.push(formwork);
  const fw = `http://127.0.0.1:${fwPort}`;
  const auth = { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' };
  const tool = (name, args) => lib.post(`${fw}/api/v1/tools/${name}`, auth, JSON.stringify(args), 10_000);
  await formwork.waitUntil(async () => (await tool('get_form', { publicId })).status === 200, 120_000);
  const blocks = JSON.parse((await tool('get_form', { publicId })).text);

  // The page as Formwork serves it, stored for the floor: the same bytes (its state included).
  const page = await fetch(`${fw}/f/${publicId}`);
  const html = await page.text();
  if (page.status !== 200 || !html.includes('name="_state"'))
    throw new Error(`GET /f/${publicId} answered ${page.status}: ${html.slice(0, 300)}`);
  await query(dbUrl, 'CREATE TABLE bench_stored_pages (id uuid PRIMARY KEY, html text NOT NULL)');
  await query(dbUrl, 'INSERT INTO bench_stored_pages (id, html) VALUES ($1, $2)', [form.id, html]);
  await baseline.waitUntil(async () => (await fetch(`http://127.0.0.1:${basePort}/page/${form.id}`)).status === 200);
  const floorBytes = Buffer.byteLength(await (await fetch(`http://127.0.0.1:${basePort}/page/${form.id}`)).text());

  // The post: a state drawn longer ago than the spam gate's minimum time to fill (2 s).
  const state = /name="_state" value="([^"]+)"/.exec(html)[1];
  await sleep(2_500);
  const fields = formFields(blocks);
  fields.set('_state', state);
  const postTarget = {
    name: 'page post',
    server: formwork,
    url: `${fw}/f/${publicId}`,
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Sec-Fetch-Site': 'same-origin' },
    body: fields.toString(),
  };
  const createTarget = {
    name: 'create_response',
    server: formwork,
    url: `${fw}/api/v1/tools/create_response`,
    headers: auth,
    body: JSON.stringify({ publicId, answers: lib.sampleAnswers(blocks) }),
  };
  const counts = async () =>
    (
      await query(
        dbUrl,
        `SELECT (SELECT count(*)::int FROM responses WHERE form_id = $1) AS responses,
                (SELECT count(*)::int FROM spam_responses WHERE form_id = $1) AS spam`,
        [form.id],
      )
    )[0];
  const before = await counts();
  for (const t of [postTarget, createTarget]) {
    const r = await lib.post(t.url, t.headers, t.body, 10_000);
    if (r.status !== 200) throw new Error(`${t.name} answered ${r.status}: ${r.text.slice(0, 500)}`);
    if (t === postTarget && !r.text.includes('Thank you')) throw new Error(`the page post: ${r.text.slice(0, 500)}`);
  }
  const after = await counts();
  if (after.responses !== before.responses + 2 || after.spam !== before.spam)
    throw new Error(`the checks stored ${JSON.stringify(after)} from ${JSON.stringify(before)}`);

  const getTargets = [
    { name: 'floor', server: baseline, method: 'GET', url: `http://127.0.0.1:${basePort}/page/${form.id}` },
    { name: 'formwork', server: formwork, method: 'GET', url: `${fw}/f/${publicId}` },
  ];
  const comparisons = [
    { name: 'page GET', targets: getTargets },
    { name: 'page post', targets: [createTarget, postTarget] },
  ];
  const rows = [];
  const cannon = (t, seconds) =>
    loadTarget(t, seconds, { connections: OPTS.connections, dbName, alsoOurs: ['redis-server'] });
  for (const c of comparisons)
    await alternateRounds(c.targets, OPTS, {
      balanced: true,
      measure: async (t, seconds) => {
        const fig = figures(await cannon(t, seconds));
        t.server.assertAlive();
        return fig;
      },
      ...roundLog(OPTS, {
        label: (t) => `${c.name} ${t.name}`,
        fields: (t) => ({ comparison: c.name, server: t.name }),
        line: (fig) =>
          `${f0(fig.rps)} req/s, p50 ${f1(fig.p50)} ms, p99 ${f1(fig.p99)} ms, server CPU ${f0(fig.cpuPct)}% (${f3(fig.cpuPerReq)} ms/req), other processes ${f0(fig.otherPct)}%`,
        problems,
        rows,
      }),
    });
  const end = await counts();
  if (end.spam !== before.spam) problems.push(`${end.spam - before.spam} page posts were kept as spam`);
  notes.push(
    `Stored during the run: ${end.responses - before.responses} responses (page posts and create_response), ${end.spam - before.spam} kept as spam.`,
  );

  const profiles = [];
  if (OPTS.profile) {
    for (const s of servers.splice(servers.indexOf(formwork), 1)) await s.stop();
    for (const t of [getTargets[1], postTarget, createTarget]) {
      const out = join(RESULTS, `page-${ts}-${t.name.replace(/\W+/g, '-')}.cpuprofile`);
      const port = await freePort();
      const profiled = new Server(
        `formwork (profiled)`,
        ['-r', join(__dirname, 'cpu-profile-hook.js'), MAIN],
        { ...fwEnv, PORT: String(port), BENCH_CPU_PROFILE_OUT: out },
        { stdout: '/dev/null' },
      );
      servers.push(profiled);
      const url = new URL(t.url);
      url.port = String(port);
      const pt = { ...t, server: profiled, url: url.toString() };
      await profiled.waitUntil(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 180_000);
      await cannon(pt, OPTS.warmup);
      profiled.proc.kill('SIGUSR2');
      const pf = figures(await cannon(pt, OPTS.duration));
      profiled.proc.kill('SIGUSR2');
      await profiled.waitUntil(async () => existsSync(out) && statSync(out).size > 0, 30_000);
      await sleep(500);
      await profiled.stop();
      servers.splice(servers.indexOf(profiled), 1);
      const summary = cpuProfile.summarize(JSON.parse(readFileSync(out, 'utf8')), 25);
      profiles.push(
        [
          `### ${t.name}`,
          '',
          `${f0(pf.rps)} req/s while profiled; ${f3(summary.busyMs / (pf.total + pf.non2xx || 1))} ms of sampled CPU per request. Profile: \`${out}\`.`,
          '',
          cpuProfile.toMarkdown(summary),
        ].join('\n'),
      );
    }
  }

  const tables = [];
  const means = {};
  for (const c of comparisons) {
    const own = rows.filter((r) => r.comparison === c.name);
    const m = c.targets.map((t) => ({
      round: 'mean',
      server: t.name,
      ...meanRow(
        own.filter((r) => r.server === t.name),
        ['rps', 'p50', 'p99', 'cpuPct', 'cpuPerReq', 'otherPct'],
      ),
    }));
    means[c.name] = m;
    tables.push([`## ${c.name}`, '', resultsTable([...own, ...m])].join('\n'));
  }
  const perRound = (c, a, b, key) =>
    [...new Set(rows.map((r) => r.round))].map((round) => {
      const x = rows.find((r) => r.comparison === c && r.round === round && r.server === a);
      const y = rows.find((r) => r.comparison === c && r.round === round && r.server === b);
      return x[key] / y[key];
    });
  const [floor, fwGet] = means['page GET'];
  const [create, pagePost] = means['page post'];
  const getRatio = fwGet.rps / floor.rps;
  const cpuRatio = pagePost.cpuPerReq / create.cpuPerReq;
  const pass = (ok) => (problems.length ? 'NOT VALID, see Problems' : ok ? 'PASS' : 'FAIL');
  const verdict = [
    `- page GET, formwork / floor (mean req/s): **${f2(getRatio)}x** (per round: ${perRound('page GET', 'formwork', 'floor', 'rps').map(f2).join(', ')}), target >= ${OPTS.getTarget}: **${pass(getRatio >= OPTS.getTarget)}**; p99 ${f1(fwGet.p99)} ms (floor ${f1(floor.p99)}), target < ${OPTS.p99Target} ms: **${pass(fwGet.p99 < OPTS.p99Target)}**; server CPU ${f3(fwGet.cpuPerReq)} ms/req against ${f3(floor.cpuPerReq)}.`,
    `- page post / create_response, service CPU per request: **${f2(cpuRatio)}x** (${f3(pagePost.cpuPerReq)} against ${f3(create.cpuPerReq)} ms; per round: ${perRound('page post', 'page post', 'create_response', 'cpuPerReq').map(f2).join(', ')}), target <= ${OPTS.postCpuTarget}: **${pass(cpuRatio <= OPTS.postCpuTarget)}**; ${f0(pagePost.rps)} against ${f0(create.rps)} req/s.`,
  ].join('\n');
  const md = [
    `# Respondent page benchmark, ${started.toISOString()}`,
    '',
    verdict,
    '',
    noiseLine(rows, (r) => `${r.round} ${r.comparison} ${r.server}`, 'the ratios are less reliable, '),
    '',
    tables.join('\n\n'),
    '',
    '## Setup',
    '',
    `- floor: bare \`node:http\` + \`pg\` Pool (max ${POOL_SIZE}), \`GET /page/{id}\`: ONE primary-key query of the page as Formwork served it at the start of the run (${floorBytes} bytes), answered as HTML.`,
    `- formwork: \`GET /f/${publicId}\` (form "${form.title}", the demo's first, ${blocks.blocks.length} blocks) and \`POST /f/${publicId}\` (a form post without JavaScript: the page's state and an answer to every question, \`Sec-Fetch-Site: same-origin\`; 200 with the thank-you page), against \`POST /api/v1/tools/create_response\` of the same answers; production settings (NODE_ENV=production, LOG_LEVEL=info to /dev/null, budgets and spam rates counted in Redis at ${OPTS.redisUrl}, raised so that they never refuse), default pool (${POOL_SIZE}).`,
    `- Load: autocannon ${autocannonVersion()}, ${OPTS.connections} connections, ${OPTS.duration} s per round, ${OPTS.rounds} rounds alternating the targets of each comparison (every other round in reverse order), after ${OPTS.warmup} s of warm-up each. Client, servers, PostgreSQL and Redis share the machine; compare the ratios.`,
    machineLine(pgVersion, loadBefore),
    ...notes.map((n) => `- ${n}`),
    ...(problems.length ? ['', '## Problems', '', ...problems.map((p) => `- ${p}`)] : []),
    ...(profiles.length ? ['', '## CPU profiles (BENCH_PROFILE=1)', '', profiles.join('\n\n')] : []),
    '',
  ].join('\n');
  log(`written ${writeReport(`page-${ts}.md`, md)}`);
  if (problems.length) process.exitCode = 1;
}

runMain(main, teardown);

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
const { readFileSync, mkdirSync, statSync, unlinkSync, existsSync } = require('node:fs');
const os = require('node:os');
const { execFileSync } = require('node:child_process');
const { join, relative } = require('node:path');
const { Client } = require('pg');
const cpuProfile = require('./cpu-profile');
const cpuSteps = require('./cpu-profile-steps');
const lib = require('./lib');
const { CLI, MAIN } = lib; // BENCH_DIST chooses the build (bench/lib.js)
const {
  ROOT,
  RESULTS,
  RATE_LIMIT,
  COUNTING_LIMITS,
  log,
  envNumber,
  envFlag,
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
  rateLimitsAfterLoad,
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
  ...loadOptions({ connections: 50, rounds: 2 }),
  /** get_form against the floor (a stored form document read by primary key): issue 38's target. */
  target: envNumber('BENCH_TARGET', 0.5),
  profile: envFlag('BENCH_PROFILE'),
  keepDb: envFlag('BENCH_KEEP_DB'),
  redisUrl: process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379',
  /** Other builds' dist/src/main.js (comma-separated), measured with the same settings as more get_form servers (before/after in one run). */
  compareMains: (process.env.BENCH_COMPARE_MAIN || '')
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean),
  /**
   * Where the service's standard output (its log: a line per request at info) goes. Unless given,
   * a file next to the report, as a deployment writes it (removed after the run, its size reported).
   */
  serverLog: process.env.BENCH_SERVER_LOG || '',
  /** 0 to skip the create_response comparison. */
  writes: process.env.BENCH_WRITES !== '0',
  /** 0 to skip the two get_form comparisons (the create_response one alone). */
  reads: process.env.BENCH_READS !== '0',
};
/** The service as deployed: production, budgets in Redis (raised so that they count but never refuse), a log line per request. */
const PRODUCTION = { NODE_ENV: 'production', LOG_LEVEL: 'info', ...COUNTING_LIMITS };
/** Formwork's default DATABASE_POOL_SIZE (src/config/config.ts); the baseline uses the same. */
const POOL_SIZE = 10;

const teardown = new Teardown();
/** Requests of the checks: 5 s at most. */
const post = (url, headers, body) => lib.post(url, headers, body, 5_000);
/** The name of the comparison on the long form. */
const LONG = 'get_form (9 blocks, long titles)';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function resultsTable(rows) {
  const lines = [
    '| Round | Server | req/s | p50 (ms) | p99 (ms) | 2xx | non-2xx | errors | server CPU (% of a core) | server CPU ms/req | other processes (% of a core) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.round} | ${r.server} | ${f0(r.rps)} | ${f1(r.p50)} | ${f1(r.p99)} | ${r.total} | ${r.non2xx} | ${r.errors} | ${f0(r.cpuPct)} | ${f3(r.cpuPerReq)} | ${f0(r.otherPct)} |`,
    );
  }
  return lines.join('\n');
}

/** A sentence `n` characters long (whole words), so that titles read like an author's long ones. */
function longText(start, n) {
  const words =
    'please tell us in your own words how this part of the service worked for you and what we should change first'.split(
      ' ',
    );
  let out = start;
  for (let i = 0; out.length < n; i++) out += ` ${words[i % words.length]}`;
  return out.slice(0, n);
}

/**
 * Makes and publishes the second form of the run: the blocks of the demo's form `publicId`, each
 * with a title of about 250 characters, a description of about 400 and choice labels of about 80
 * (the form's own title and description long as well). Returns its publicId.
 */
async function makeLongForm(toolsUrl, headers, publicId) {
  const call = async (tool, args) => {
    const r = await post(`${toolsUrl}/${tool}`, headers, JSON.stringify(args));
    if (r.status !== 200) throw new Error(`${tool} answered ${r.status}: ${r.text.slice(0, 500)}`);
    return JSON.parse(r.text);
  };
  const first = await call('get_form', { publicId });
  const blocks = first.blocks.map(({ id: _id, choices, ...b }) => ({
    ...b,
    ...(b.title ? { title: longText(b.title, 250), description: longText('Why we ask:', 400) } : {}),
    ...(choices ? { choices: choices.map((c) => longText(c.label, 80)) } : {}),
  }));
  const made = await call('create_form', {
    title: longText(`${first.title}, long titles`, 300),
    description: longText('About this form:', 1000),
    blocks,
  });
  await call('publish_form', { publicId: made.publicId });
  return made.publicId;
}

/** The form `publicId`'s uuid, title and block count, read from the database. */
async function formRow(dbUrl, publicId) {
  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  try {
    return (
      await db.query(
        `SELECT f.id, f.public_id AS "publicId", f.title, (SELECT count(*)::int FROM blocks b WHERE b.form_id = f.id) AS blocks FROM forms f WHERE f.public_id = $1`,
        [publicId],
      )
    ).rows[0];
  } finally {
    await db.end();
  }
}

/**
 * The floor of get_form: each form as Formwork's get_form answers it, stored as one JSON value in
 * bench_stored_forms, which the baseline server reads by primary key (POST /stored-form).
 */
async function storeDocuments(dbUrl, documents) {
  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  try {
    await db.query('CREATE TABLE IF NOT EXISTS bench_stored_forms (id uuid PRIMARY KEY, document jsonb NOT NULL)');
    for (const [id, document] of documents)
      await db.query(
        'INSERT INTO bench_stored_forms (id, document) VALUES ($1, $2::jsonb) ON CONFLICT (id) DO UPDATE SET document = $2::jsonb',
        [id, document],
      );
  } finally {
    await db.end();
  }
}

async function main() {
  const { started, ts, database } = startRun('formwork_bench', OPTS);
  mkdirSync(RESULTS, { recursive: true });
  const serverLog = OPTS.serverLog || join(RESULTS, `get-form-${ts}-server.log`);
  const { name: dbName, url: dbUrl } = database;
  const notes = [];
  const loadBefore = os.loadavg();
  const problems = [];
  const servers = teardown.servers;
  teardown.onSignals('stopping servers and dropping the database');

  requireBuilt([CLI, MAIN], 'bench');

  // --- database: create, migrate, seed -------------------------------------------------------
  teardown.database = database;
  const { version: pgVersion } = await database.create();

  const baseEnv = cleanEnv();
  const cliEnv = {
    ...baseEnv,
    DATABASE_URL: dbUrl,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    BOOTSTRAP_DEMO: 'false',
  };
  const { demo, cliDemoError } = await migrateAndSeed(cliEnv);
  if (cliDemoError) {
    notes.push(
      `**The CLI \`demo --json\` failed**, so the database was seeded with \`bench/seed-demo.js\`, which runs the same compiled \`DemoService.create()\` without the CLI's argument validation. CLI error: \`${cliDemoError.replace(/`/g, "'")}\``,
    );
  }
  const publicId = demo.forms[0];

  const form = await formRow(dbUrl, publicId);
  if (!form) throw new Error(`form ${publicId} of the demo is not in the database`);
  log(`form under test: ${publicId} "${form.title}" (${form.blocks} blocks, id ${form.id})`);

  // --- servers -----------------------------------------------------------------------------
  const [basePort, fwPort] = [await freePort(), await freePort()];
  const baseline = new Server('baseline', [join(__dirname, 'baseline-server.js')], {
    ...baseEnv,
    NODE_ENV: 'production',
    DATABASE_URL: dbUrl,
    PORT: String(basePort),
    POOL_SIZE: String(POOL_SIZE),
  });
  servers.push(baseline);
  const fwEnv = serviceEnv(baseEnv, fwPort, dbUrl, { ...PRODUCTION, REDIS_URL: OPTS.redisUrl });
  const formwork = new Server('formwork', [MAIN], fwEnv, { stdout: serverLog });
  servers.push(formwork);
  const compared = [];
  for (const main of OPTS.compareMains) {
    const s = new Server(
      `formwork (${main})`,
      [main],
      { ...fwEnv, PORT: String(await freePort()) },
      { stdout: serverLog },
    );
    servers.push(s);
    compared.push(s);
  }

  const fwTarget = (name, server, tool, body, keyed = false) => ({
    name,
    server,
    url: `http://127.0.0.1:${server.port}/api/v1/tools/${tool}`,
    headers: { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    keyed,
  });
  // The second form: the demo's 9 blocks with long titles, descriptions and choice labels (made
  // through the tools, as an author would), read by both servers like the first.
  const fwGet = fwTarget('formwork', formwork, 'get_form', { publicId });
  await formwork.waitUntil(async () => (await post(fwGet.url, fwGet.headers, fwGet.body)).status === 200, 60_000);
  const longId = await makeLongForm(`http://127.0.0.1:${formwork.port}/api/v1/tools`, fwGet.headers, publicId);
  const long = await formRow(dbUrl, longId);
  log(`second form: ${long.publicId} (${long.blocks} blocks with long titles, id ${long.id})`);
  // The floor: each form as get_form answers it, stored as one document.
  const fwAnswer = async (id) => (await post(fwGet.url, fwGet.headers, JSON.stringify({ publicId: id }))).text;
  await storeDocuments(dbUrl, [
    [form.id, await fwAnswer(publicId)],
    [long.id, await fwAnswer(longId)],
  ]);
  /**
   * get_form of one form on every server: first the floor (the stored document by the form's id:
   * the ratios are against it), the baseline's join by the form's id, Formwork's builds by its publicId.
   */
  const getFormTargets = (id, formPublicId) => ({
    floor: {
      name: 'floor',
      server: baseline,
      url: `http://127.0.0.1:${basePort}/stored-form`,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ id }),
    },
    baseline: {
      name: 'baseline',
      server: baseline,
      url: `http://127.0.0.1:${basePort}/form`,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ id }),
    },
    formwork: fwTarget('formwork', formwork, 'get_form', { publicId: formPublicId }),
    ...Object.fromEntries(
      compared.map((srv, i) => [`compared${i + 1}`, fwTarget(srv.name, srv, 'get_form', { publicId: formPublicId })]),
    ),
  });
  const longTargets = getFormTargets(long.id, long.publicId);
  const targets = getFormTargets(form.id, publicId);

  // Wait until each answers the very request the benchmark sends, and check the answer.
  const sizes = {};
  const longSizes = {};
  for (const [name, t] of Object.entries(longTargets)) {
    await t.server.waitUntil(async () => (await post(t.url, t.headers, t.body)).status === 200);
    const r = await post(t.url, t.headers, t.body);
    const json = JSON.parse(r.text);
    if (r.status !== 200 || !Array.isArray(json.blocks) || json.blocks.length !== long.blocks)
      throw new Error(`${name} answered ${r.status} for the long form: ${r.text.slice(0, 500)}`);
    longSizes[name] = Buffer.byteLength(r.text);
  }
  for (const [name, t] of Object.entries(targets)) {
    await t.server.waitUntil(async () => (await post(t.url, t.headers, t.body)).status === 200);
    const r = await post(t.url, t.headers, t.body);
    const json = JSON.parse(r.text);
    const blocks = Array.isArray(json.blocks) ? json.blocks.length : -1;
    if (r.status !== 200 || blocks !== form.blocks) {
      throw new Error(
        `${name} answered ${r.status} with ${blocks} blocks (expected 200 with ${form.blocks}): ${r.text.slice(0, 500)}`,
      );
    }
    if (!['baseline', 'floor'].includes(name) && json.publicId !== publicId)
      throw new Error(`formwork answered another form: ${r.text.slice(0, 300)}`);
    sizes[name] = Buffer.byteLength(r.text);
    log(`${name} answers on ${t.url} (200, ${sizes[name]} bytes, ${blocks} blocks)`);
  }
  for (const s of [formwork, ...compared]) {
    const ready = await (await fetch(`http://127.0.0.1:${s.port}/readyz`)).json();
    if (ready.rateLimits !== 'shared')
      throw new Error(`${s.name} does not count its budgets in Redis at ${OPTS.redisUrl}: ${JSON.stringify(ready)}`);
  }

  // create_response: the same answers from each; the baseline stores them with one INSERT.
  const writeTargets = [];
  if (OPTS.writes) {
    const answers = lib.sampleAnswers(
      JSON.parse((await post(targets.formwork.url, targets.formwork.headers, targets.formwork.body)).text),
    );
    writeTargets.push(
      {
        name: 'baseline INSERT',
        server: baseline,
        url: `http://127.0.0.1:${basePort}/response`,
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ formId: form.id, answers }),
      },
      fwTarget('formwork', formwork, 'create_response', { publicId, answers }),
      fwTarget('formwork + Idempotency-Key', formwork, 'create_response', { publicId, answers }, true),
    );
    for (const t of writeTargets) {
      const r = await post(t.url, t.keyed ? { ...t.headers, 'Idempotency-Key': `check-${ts}` } : t.headers, t.body);
      if (r.status !== 200) throw new Error(`${t.name} create_response answered ${r.status}: ${r.text.slice(0, 500)}`);
    }
  }

  // --- load ---------------------------------------------------------------------------------
  const cannon = (t, seconds) =>
    loadTarget(t, seconds, { connections: OPTS.connections, dbName, alsoOurs: ['redis-server'] });
  const rows = [];
  const comparisons = [
    ...(OPTS.reads
      ? [
          { name: 'get_form', targets: Object.values(targets) },
          { name: LONG, targets: Object.values(longTargets) },
        ]
      : []),
    ...(writeTargets.length ? [{ name: 'create_response', targets: writeTargets }] : []),
  ];
  for (const c of comparisons) {
    await alternateRounds(c.targets, OPTS, {
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
  }

  // The credential and IP budgets counted the load (and refused none: every answer was 200).
  const limits = rateLimitsAfterLoad(await post(targets.formwork.url, targets.formwork.headers, targets.formwork.body));
  problems.push(...limits.problems);
  if (limits.counted) {
    notes.push(
      `Rate limits were on and counting in Redis: after the load, \`X-RateLimit-Limit: ${limits.limit}\`, \`X-RateLimit-Remaining: ${limits.remaining}\` (${RATE_LIMIT - limits.remaining} requests in the current one-minute window).`,
    );
  }

  /** The mean server CPU ms per request of `server` in the measured rounds of `comparison`. */
  const meanCpuPerReq = (comparison, server) => {
    const own = rows.filter((r) => r.comparison === comparison && r.server === server);
    return own.reduce((sum, r) => sum + r.cpuPerReq, 0) / (own.length || 1);
  };

  // --- optional CPU profiles (fresh processes, load window only; not part of the figures) ----
  const profiles = [];
  if (OPTS.profile) {
    // Stop the measured servers first, so that each profiled one has the machine as they had.
    for (const s of servers.splice(0)) await s.stop();
    // get_form of the long form (its per-block work shows more) on each, and create_response.
    const profiledTargets = [
      ['baseline', longTargets.baseline],
      ['formwork', longTargets.formwork],
      ...(writeTargets.length
        ? [
            ['formwork-create_response', writeTargets[1]],
            ['formwork-create_response-keyed', writeTargets[2]],
          ]
        : []),
    ];
    for (const [name, target] of profiledTargets) {
      try {
        const out = join(RESULTS, `get-form-${ts}-${name}.cpuprofile`);
        mkdirSync(RESULTS, { recursive: true });
        const port = await freePort();
        const script = target.server === baseline ? join(__dirname, 'baseline-server.js') : MAIN;
        const env = target.server === baseline ? { ...baseline.env } : { ...fwEnv };
        // Its log goes to the same file as in the measured rounds (the hook's own line too).
        const profiled = new Server(
          `${name} (profiled)`,
          ['-r', join(__dirname, 'cpu-profile-hook.js'), script],
          { ...env, PORT: String(port), BENCH_CPU_PROFILE_OUT: out },
          { stdout: serverLog },
        );
        servers.push(profiled);
        const url = new URL(target.url);
        url.port = String(port);
        const pt = { ...target, server: profiled, url: url.toString() };
        // A loaded machine may take a minute to boot the service.
        await profiled.waitUntil(async () => (await post(pt.url, pt.headers, pt.body)).status === 200, 180_000);
        log(`profiling ${name}: ${OPTS.warmup} s warm-up, then ${OPTS.duration} s profiled`);
        await cannon(pt, OPTS.warmup);
        profiled.proc.kill('SIGUSR2');
        const pf = figures(await cannon(pt, OPTS.duration));
        profiled.proc.kill('SIGUSR2');
        await profiled.waitUntil(async () => existsSync(out) && statSync(out).size > 0, 30_000);
        await sleep(500); // writeFileSync has returned once the hook prints; the size may be seen first
        await profiled.stop();
        servers.splice(servers.indexOf(profiled), 1);
        const profile = JSON.parse(readFileSync(out, 'utf8'));
        const summary = cpuProfile.summarize(profile, 20);
        profiles.push(
          [
            `### ${name.startsWith('formwork-create_response') ? `formwork, create_response${name.endsWith('keyed') ? ' with Idempotency-Key' : ''}` : `${name}, get_form of the long form`}`,
            '',
            `${f0(pf.rps)} req/s while profiled (${pf.total} requests); ${f3(summary.busyMs / (pf.total + pf.non2xx || 1))} ms of sampled CPU per request on the main thread. Profile: \`${relative(ROOT, out)}\` (Chrome DevTools or speedscope).`,
            '',
            ...(target.server === baseline
              ? []
              : [
                  '',
                  'By step of the tool path (self and child time, each sample given to one step: `bench/cpu-profile-steps.js`):',
                  '',
                  cpuSteps.toMarkdown(
                    cpuSteps.steps(profile),
                    pf.total + pf.non2xx,
                    1000 * meanCpuPerReq(target === writeTargets[1] ? 'create_response' : LONG, 'formwork'),
                  ),
                ]),
            '',
            cpuProfile.toMarkdown(summary),
          ].join('\n'),
        );
      } catch (err) {
        // A profile is an extra: the measured figures above stand without it.
        log(`profiling ${name} failed: ${err.message.split('\n')[0]}`);
        notes.push(`The CPU profile of ${name} failed: ${err.message.split('\n')[0]}`);
        for (const s of servers.splice(0)) await s.stop();
      }
    }
  }

  // --- report -------------------------------------------------------------------------------
  const measured = [...rows];
  const tables = [];
  const ratios = {};
  for (const c of comparisons) {
    const own = measured.filter((r) => r.comparison === c.name);
    const means = c.targets.map((t) => ({
      round: 'mean',
      comparison: c.name,
      server: t.name,
      ...meanRow(
        own.filter((r) => r.server === t.name),
        ['rps', 'p50', 'p99', 'cpuPct', 'cpuPerReq', 'otherPct'],
      ),
    }));
    const base = means[0];
    const lines = means.slice(1).map((m) => {
      const perRound = [];
      for (let round = 1; round <= OPTS.rounds; round++) {
        const b = own.find((r) => r.round === String(round) && r.server === base.server);
        const x = own.find((r) => r.round === String(round) && r.server === m.server);
        perRound.push(x.rps / b.rps);
      }
      ratios[`${c.name} ${m.server}`] = m.rps / base.rps;
      return `- ${m.server} / ${base.server}: throughput **${f2(m.rps / base.rps)}x** (per round: ${perRound.map(f2).join(', ')}); server CPU per request ${f3(m.cpuPerReq)} ms against ${f3(base.cpuPerReq)} ms (**${f1(m.cpuPerReq / base.cpuPerReq)}x**); p50 ${f1(m.p50)} ms against ${f1(base.p50)}, p99 ${f1(m.p99)} against ${f1(base.p99)}.`;
    });
    tables.push([`## ${c.name}`, '', resultsTable([...own, ...means]), '', ...lines].join('\n'));
  }
  const ratio = ratios['get_form formwork'];
  let logNote;
  try {
    const bytes = statSync(serverLog).size;
    const lines = Number(execFileSync('wc', ['-l', serverLog], { encoding: 'utf8' }).split(' ')[0]);
    logNote = `The service's log went to ${OPTS.serverLog ? `\`${serverLog}\`` : 'a file next to the report (removed after the run)'}: ${lines} lines, ${(bytes / 1e6).toFixed(1)} MB, ${f0(bytes / (lines || 1))} bytes a line.`;
  } catch {
    logNote = `The service's log went to \`${serverLog}\`.`;
  }
  notes.push(logNote);
  if (!OPTS.serverLog) {
    try {
      unlinkSync(serverLog);
    } catch {
      /* already gone */
    }
  }
  const pass = ratio >= OPTS.target;
  const outcome = problems.length ? 'NOT VALID, see Problems' : pass ? 'PASS' : 'FAIL';
  const longRatio = ratios[`${LONG} formwork`];
  const joinRatio = ratios['get_form baseline'];
  const verdicts = [];
  if (OPTS.reads)
    verdicts.push(
      `get_form, ratio formwork/floor (mean req/s): **${f2(ratio)}** (9 blocks with long titles: **${f2(longRatio)}**; the baseline's join against the floor: ${f2(joinRatio)}) — target >= ${OPTS.target}: **${outcome}**`,
    );
  if (writeTargets.length) {
    // Issue 38, 1: keyed create_response >= 0.5x of the INSERT, service CPU per request <= 2x of the unkeyed one.
    const keyed = ratios['create_response formwork + Idempotency-Key'];
    const cpu =
      meanCpuPerReq('create_response', 'formwork + Idempotency-Key') / meanCpuPerReq('create_response', 'formwork');
    verdicts.push(
      `create_response + Idempotency-Key / baseline INSERT (mean req/s): **${f2(keyed)}x** (target >= 0.5), unkeyed ${f2(ratios['create_response formwork'])}x; service CPU per request keyed / unkeyed: **${f2(cpu)}x** (target <= 2)`,
    );
  }
  const verdict = verdicts.join('\n\n');
  const noise = noiseLine(measured, (r) => `${r.round} ${r.comparison} ${r.server}`, 'the ratio is less reliable, ');

  const md = [
    `# get_form benchmark, ${started.toISOString()}`,
    '',
    verdict,
    '',
    noise,
    '',
    tables.join('\n\n'),
    '',
    '## Setup',
    '',
    `- floor: the baseline server reading the form as get_form answers it, stored as one JSON value (\`bench_stored_forms\`), by primary key, answered as JSON (${sizes.floor} bytes; the long form ${longSizes.floor}): what the ratios are measured against.`,
    `- baseline: bare \`node:http\` + \`pg\` Pool (max ${POOL_SIZE}): for get_form one primary-key query (form row + its blocks as one JSON value), answered as JSON (${sizes.baseline} bytes); for create_response one INSERT into responses.`,
    `- formwork: \`POST /api/v1/tools/get_form\` (${sizes.formwork} bytes) and \`create_response\` through the whole pipeline (auth, both budgets counted in Redis at ${OPTS.redisUrl} at ${RATE_LIMIT}/min, validation, query, headers, an access log line per request), as deployed: NODE_ENV=production, LOG_LEVEL=info (standard output appended to a file, as a deployment writes it), default pool (${POOL_SIZE}).${compared.length ? ` Other builds, with the same settings: ${compared.map((s) => `\`${s.name}\``).join(', ')}.` : ''}`,
    `- Form \`${publicId}\` "${form.title}" with ${form.blocks} blocks, in a fresh database \`${dbName}\` (migrated and seeded with the CLI, dropped afterwards); and \`${long.publicId}\`, its blocks with titles of 250 characters, descriptions of 400 and choice labels of 80 (made with create_form and publish_form): answers of ${longSizes.baseline} bytes (baseline) and ${longSizes.formwork} (formwork).`,
    `- Load: autocannon ${autocannonVersion()}, ${OPTS.connections} connections, ${OPTS.duration} s per round, ${OPTS.rounds} rounds alternating the servers of each comparison, after ${OPTS.warmup} s of warm-up each; the keyed create_response sends a fresh Idempotency-Key per request. Client, servers, PostgreSQL and Redis share the machine; compare the ratios, not absolute numbers.`,
    machineLine(pgVersion, loadBefore),
    ...notes.map((n) => `- ${n}`),
    ...(problems.length ? ['', '## Problems', '', ...problems.map((p) => `- ${p}`)] : []),
    ...(profiles.length
      ? [
          '',
          '## CPU profiles (BENCH_PROFILE=1)',
          '',
          'Each server alone in a fresh process, after the measured rounds, profiled over the load window only (boot and warm-up excluded); profiling slows it down. Self time, so a function is counted where the CPU was, not where it was called from.',
          '',
          profiles.join('\n\n'),
        ]
      : []),
    '',
  ].join('\n');

  log(`written ${writeReport(`get-form-${ts}.md`, md)}`);
  if (problems.length) {
    log(`BROKEN: ${problems.length} problem(s):\n  ${problems.join('\n  ')}`);
    process.exitCode = 1;
  }
}

runMain(main, teardown);

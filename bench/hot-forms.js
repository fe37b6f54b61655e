'use strict';
/**
 * Hot forms: create_response throughput on ONE form, and spread over many, against a bare
 * node:http + pg server doing one INSERT of the same answers, side by side in one run; the
 * respondent page's JSON submissions too. See bench/README.md. Run with `npm run bench:writes`.
 *
 * 1. creates a fresh database formwork_bench_hot_<timestamp>, migrates it and seeds it with the
 *    CLI's demo; makes BENCH_FORMS - 1 more published forms with the same blocks (create_form,
 *    publish_form) and the baseline's table bench_baseline_responses;
 * 2. counts, through a relay that reads the PostgreSQL wire protocol (bench/pg-wire-counter.js),
 *    the statements and round trips of BENCH_SERIAL sequential create_response calls (and as many
 *    respondent page posts), with the server's CPU per call;
 * 3. warms up, then alternates: baseline on one form, create_response on one form, baseline over
 *    the forms, create_response over the forms, the respondent page on one form (BENCH_ROUNDS
 *    rounds of BENCH_DURATION s, BENCH_CONNECTIONS connections), sampling during Formwork's rounds
 *    how long the oldest committed response waits to be sequenced (the summaries' lag without a
 *    read);
 * 4. checks that nothing was lost or counted twice (every form's total, summary and seq numbers
 *    against the rows), prints a Markdown report and writes it to bench/results/hot-forms-<ts>.md;
 * 5. with BENCH_PROFILE=1, profiles the server under create_response on one form;
 * 6. stops the servers and drops the database.
 * Before the load, forms that branch (issue 25): server CPU per create_response on a 50-block form
 * with 20 rules (showIf and jumps over 5 pages, every one evaluated) against the same form without
 * rules, in alternating sequential batches (target <= 1.2x). BENCH_LOGIC_ONLY=1 measures only that.
 *
 * Exit code: 0 whether the targets are met or not; 1 when the run is not valid.
 */
const { readFileSync, mkdirSync } = require('node:fs');
const os = require('node:os');
const { join, relative } = require('node:path');
const { Client } = require('pg');
const cpuProfile = require('./cpu-profile');
const { PgWireCounter } = require('./pg-wire-counter');
const lib = require('./lib');
const {
  ROOT,
  CLI,
  MAIN,
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
  loadRun,
  figures,
  alternateRounds,
  roundLog,
  rateLimitsAfterLoad,
  percentile,
  mean,
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
  forms: envNumber('BENCH_FORMS', 50, { integer: true, min: 2 }),
  serial: envNumber('BENCH_SERIAL', 200, { integer: true, min: 1 }),
  target: envNumber('BENCH_TARGET', 0.3),
  p99: envNumber('BENCH_P99_MS', 100),
  profile: envFlag('BENCH_PROFILE'),
  keepDb: envFlag('BENCH_KEEP_DB'),
  logicOnly: envFlag('BENCH_LOGIC_ONLY'),
  logicTarget: envNumber('BENCH_LOGIC_TARGET', 1.2),
};
/** Formwork's default DATABASE_POOL_SIZE; the baseline uses the same. */
const POOL_SIZE = 10;
const LAG_EVERY_MS = 100;
/** The sequencer's statements (background work, not the call's own), in versions that sequence after the commit. */
const SEQUENCER_SQL =
  /^(SELECT EXISTS \(SELECT 1 FROM responses WHERE seq IS NULL\)|START TRANSACTION|COMMIT|SELECT f\.id FROM \( SELECT id FROM forms WHERE id IN|WITH p AS)/;

const teardown = new Teardown();
const post = (url, headers, body) => lib.post(url, headers, body, 10_000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** An answer for every block that takes one, valid for its settings (the bench's "same answers"). */
function answersFor(blocks) {
  const sample = {
    short_text: 'Ada',
    long_text: 'Works great with my agent',
    email: 'ada@example.com',
    url: 'https://example.com',
    phone: '+33123456789',
    date: '2026-01-01',
    yes_no: true,
  };
  const answers = {};
  for (const b of blocks) {
    if (b.type === 'statement') continue;
    if (b.type in sample) answers[b.id] = sample[b.type];
    else if (b.choices)
      answers[b.id] = b.type === 'checkboxes' ? [b.choices[0].label, b.choices[1].label] : b.choices[1].label;
    else if (b.type === 'rating' || b.type === 'linear_scale') answers[b.id] = Math.min(b.max ?? 4, 4);
    else if (b.type === 'number') answers[b.id] = b.min ?? 1;
  }
  return answers;
}

/**
 * A 50-block form of 5 pages (46 questions, 4 page_breaks) and, with `rules`, 20 rules: 16 showIf
 * (two questions in three from the 3rd on, one in four an all/any of two leaves) that answersFor's answers
 * meet, so every question is shown, validated and stored, and a jump on each page_break whose
 * condition does not hold, so every page is walked. Without `rules`, the same blocks.
 */
function branchingBlocks(rules) {
  const types = [
    'short_text',
    'number',
    'multiple_choice',
    'checkboxes',
    'yes_no',
    'rating',
    'long_text',
    'email',
    'date',
    'dropdown',
  ];
  const holds = {
    short_text: { op: 'equals', value: 'Ada' },
    number: { op: 'gte', value: 0 },
    multiple_choice: { op: 'in', value: ['Two', 'Three'] },
    checkboxes: { op: 'contains', value: 'One' },
    yes_no: { op: 'equals', value: true },
    rating: { op: 'gte', value: 3 },
    long_text: { op: 'contains', value: 'agent' },
    email: { op: 'answered' },
    date: { op: 'lte', value: '2026-12-31' },
    dropdown: { op: 'not_equals', value: 'One' },
  };
  const blocks = [];
  let showIfs = 0;
  for (let q = 0; q < 46; q++) {
    if (q > 0 && q % 10 === 0 && blocks.filter((b) => b.type === 'page_break').length < 4) {
      const n = blocks.filter((b) => b.type === 'page_break').length + 1;
      blocks.push({
        ref: `p${n}`,
        type: 'page_break',
        title: `Page ${n + 1}`,
        ...(rules ? { jumps: [{ if: { block: `q${q - 1}`, op: 'not_answered' }, to: 'end' }] } : {}),
      });
    }
    const type = types[q % types.length];
    const block = { ref: `q${q}`, type, title: `Question ${q + 1}`, required: q % 4 === 0 };
    if (type === 'number') Object.assign(block, { min: 0, max: 100 });
    if (type === 'rating') block.max = 5;
    if (type === 'multiple_choice' || type === 'checkboxes' || type === 'dropdown')
      block.choices = ['One', 'Two', 'Three'];
    if (rules && q >= 2 && q % 3 !== 0 && showIfs < 16) {
      const leaf = (k) => ({ block: `q${k}`, ...holds[types[k % types.length]] });
      block.showIf =
        showIfs % 4 === 3 ? { [showIfs % 8 === 3 ? 'all' : 'any']: [leaf(q - 1), leaf(q - 2)] } : leaf(q - 1);
      showIfs++;
    }
    blocks.push(block);
  }
  return blocks;
}

/** A load target: `bodies` are sent in turn (one per request), so that every target does the same client work. */
const target = (key, label, server, path, headers, bodies, ok = 200) => ({
  key,
  label,
  server,
  path,
  headers,
  bodies: bodies.map((b) => JSON.stringify(b)),
  ok,
});

async function cannon(t, seconds, dbName) {
  let next = 0;
  const result = await loadRun(
    {
      url: `http://127.0.0.1:${t.server.port}`,
      connections: OPTS.connections,
      duration: seconds,
      requests: [
        {
          method: 'POST',
          path: t.path,
          headers: t.headers,
          setupRequest: (req) => ({ ...req, body: t.bodies[next++ % t.bodies.length] }),
        },
      ],
    },
    { serverPid: t.server.proc.pid, dbName, exact: true },
  );
  const fig = figures(result);
  // The respondent page answers 201 Created: only other statuses are problems there.
  if (t.ok !== 200) {
    const other = Object.entries(result.statusCodeStats || {}).filter(([code]) => Number(code) !== t.ok);
    fig.problems = fig.problems.filter((p) => !p.startsWith('responses other than 200'));
    if (other.length)
      fig.problems.push(
        `answers other than ${t.ok}: ${JSON.stringify(Object.fromEntries(other.map(([c, s]) => [c, s.count])))}`,
      );
  }
  return fig;
}

/** Calls summarize_responses and list_responses on `publicId` in turn until stopped; returns their latencies (ms). */
function readerProbe(url, headers, publicId) {
  const times = { summary: [], page: [] };
  let stop = false;
  const done = (async () => {
    while (!stop) {
      for (const [key, tool, args] of [
        ['summary', 'summarize_responses', { publicId }],
        ['page', 'list_responses', { publicId, limit: 50 }],
      ]) {
        const t0 = performance.now();
        const r = await post(`${url}/api/v1/tools/${tool}`, headers, JSON.stringify(args));
        if (r.status !== 200) throw new Error(`${tool} answered ${r.status} during the load: ${r.text.slice(0, 300)}`);
        times[key].push(performance.now() - t0);
      }
      await sleep(200);
    }
    return times;
  })();
  return { stop: () => ((stop = true), done) };
}

/** Samples, until stopped, how old the oldest committed response still waiting for its seq is (ms). */
function lagSampler(dbUrl) {
  const client = new Client({ connectionString: dbUrl });
  const samples = [];
  let stop = false;
  const done = (async () => {
    await client.connect();
    try {
      while (!stop) {
        const { rows } = await client.query(
          `SELECT COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(submitted_at)) * 1000, 0)::float8 AS ms FROM responses WHERE seq IS NULL`,
        );
        samples.push(rows[0].ms);
        await sleep(LAG_EVERY_MS);
      }
    } finally {
      await client.end();
    }
    return samples;
  })();
  return { stop: () => ((stop = true), done) };
}

function resultsTable(rows) {
  const lines = [
    '| Round | Target | req/s | p50 (ms) | p99 (ms) | 2xx | non-2xx | errors | server CPU (% of a core) | server CPU ms/req | postgres CPU ms/req | oldest unsequenced, max (ms) | other processes (% of a core) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    const b = r.round === 'mean' ? '**' : '';
    lines.push(
      `| ${b}${r.round}${b} | ${r.label} | ${b}${f0(r.rps)}${b} | ${f1(r.p50)} | ${b}${f1(r.p99)}${b} | ${r.total} | ${r.non2xx} | ${r.errors} | ${f0(r.cpuPct)} | ${f3(r.cpuPerReq)} | ${f3(r.pgPerReq)} | ${r.lagMax === undefined ? '-' : f0(r.lagMax)} | ${f0(r.otherPct)} |`,
    );
  }
  return lines.join('\n');
}

async function main() {
  const { started, ts, database } = startRun('formwork_bench_hot', OPTS);
  const { name: dbName, url: dbUrl } = database;
  const notes = [];
  const problems = [];
  const checks = [];
  const loadBefore = os.loadavg();
  const servers = teardown.servers;
  teardown.onSignals('stopping servers and dropping the database');
  requireBuilt([CLI, MAIN], 'bench:writes');

  // --- database, forms, servers --------------------------------------------------------------
  teardown.database = database;
  const { version: pgVersion, settings: pgSettings } = await database.create(['synchronous_commit', 'shared_buffers']);
  const baseEnv = cleanEnv();
  const cliEnv = {
    ...baseEnv,
    DATABASE_URL: dbUrl,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    BOOTSTRAP_DEMO: 'false',
  };
  const { demo, cliDemoError } = await migrateAndSeed(cliEnv);
  if (cliDemoError)
    notes.push(
      `**The CLI \`demo --json\` failed**, so the database was seeded with \`bench/seed-demo.js\`. CLI error: \`${cliDemoError.replace(/`/g, "'")}\``,
    );

  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  teardown.closers.add(() => db.end());
  await db.query(`CREATE TABLE bench_baseline_responses (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(), form_id uuid NOT NULL, submitted_at timestamptz NOT NULL DEFAULT now(), answers jsonb NOT NULL)`);
  await db.query('CREATE INDEX ON bench_baseline_responses (form_id, submitted_at)');
  // Old schemas hand out seq at insert (NOT NULL): then there is no sequencing lag to sample.
  const seqNullable = (
    await db.query(
      `SELECT is_nullable = 'YES' AS n FROM information_schema.columns WHERE table_name = 'responses' AND column_name = 'seq'`,
    )
  ).rows[0].n;

  const fwPort = await freePort();
  const fwEnv = serviceEnv(baseEnv, fwPort, dbUrl, COUNTING_LIMITS);
  const formwork = new Server('formwork', [MAIN], fwEnv);
  servers.push(formwork);
  const api = (tool) => `/api/v1/tools/${tool}`;
  const auth = { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' };
  const call = async (tool, args) => {
    const r = await post(`http://127.0.0.1:${fwPort}${api(tool)}`, auth, JSON.stringify(args));
    if (r.status !== 200) throw new Error(`${tool} answered ${r.status}: ${r.text.slice(0, 500)}`);
    return JSON.parse(r.text);
  };
  await formwork.waitUntil(
    async () =>
      (await post(`http://127.0.0.1:${fwPort}${api('get_form')}`, auth, JSON.stringify({ publicId: demo.forms[0] })))
        .status === 200,
    60_000,
  );

  const first = await call('get_form', { publicId: demo.forms[0] });
  const blockInput = first.blocks.map(({ id: _id, choices, ...b }) => ({
    ...b,
    ...(choices ? { choices: choices.map((c) => c.label) } : {}),
  }));
  const publicIds = [first.publicId];
  for (let i = 1; i < OPTS.forms; i++) {
    const made = await call('create_form', { title: `Hot form ${i}`, blocks: blockInput });
    await call('publish_form', { publicId: made.publicId });
    publicIds.push(made.publicId);
  }
  const forms = [];
  for (const publicId of publicIds) {
    const f = publicId === first.publicId ? first : await call('get_form', { publicId });
    const id = (await db.query('SELECT id FROM forms WHERE public_id = $1', [publicId])).rows[0].id;
    forms.push({ publicId, id, answers: answersFor(f.blocks), blocks: f.blocks });
  }

  // --- forms that branch: CPU per create_response with 20 rules against none -------------------
  const logic = await branchingCpu(`http://127.0.0.1:${fwPort}`, auth, call, () => lib.cpuMs(formwork.proc.pid));
  if (OPTS.logicOnly) {
    const md = [`# Hot forms: forms that branch, ${started.toISOString()}`, '', logic.md, ''].join('\n');
    log(`written ${writeReport(`hot-forms-logic-${ts}.md`, md)}`);
    return;
  }

  // The hot forms' rows only: `stored` below counts those, and the forms that branch (above) have
  // 2 x (30 + 3 x BENCH_SERIAL) rows of their own, which counted here made the check below report
  // that many "lost" submissions.
  const rowsBefore = Number(
    (await db.query('SELECT count(*) AS n FROM responses WHERE form_id = ANY ($1::uuid[])', [forms.map((f) => f.id)]))
      .rows[0].n,
  );
  log(
    `${forms.length} published forms of ${first.blocks.length} blocks ("${first.title}" and copies); ${Object.keys(forms[0].answers).length} answers per submission`,
  );

  const basePort = await freePort();
  const baseline = new Server('baseline', [join(__dirname, 'baseline-server.js')], {
    ...baseEnv,
    NODE_ENV: 'production',
    DATABASE_URL: dbUrl,
    PORT: String(basePort),
    POOL_SIZE: String(POOL_SIZE),
  });
  servers.push(baseline);
  const json = { 'Content-Type': 'application/json' };
  await baseline.waitUntil(
    async () =>
      (
        await post(
          `http://127.0.0.1:${basePort}/response`,
          json,
          JSON.stringify({ formId: forms[0].id, answers: forms[0].answers }),
        )
      ).status === 200,
  );

  // --- statements and round trips of one submission -------------------------------------------
  const pgUrl = new URL(dbUrl);
  const counter = new PgWireCounter(pgUrl.hostname, Number(pgUrl.port || 5432));
  const relayPort = await counter.listen();
  teardown.closers.add(() => counter.close());
  const relayedUrl = new URL(dbUrl);
  relayedUrl.port = String(relayPort);
  const countedPort = await freePort();
  const counted = new Server(
    'formwork (counted)',
    [MAIN],
    serviceEnv(baseEnv, countedPort, relayedUrl.toString(), COUNTING_LIMITS),
  );
  servers.push(counted);
  const createOnce = () =>
    post(
      `http://127.0.0.1:${countedPort}${api('create_response')}`,
      auth,
      JSON.stringify({ publicId: forms[0].publicId, answers: forms[0].answers }),
    );
  const postOnce = () =>
    post(
      `http://127.0.0.1:${countedPort}/f/${forms[0].publicId}`,
      { ...json, Accept: 'application/json' },
      JSON.stringify({ answers: forms[0].answers }),
    );
  await counted.waitUntil(async () => (await createOnce()).status === 200, 60_000);
  const perCall = {};
  for (const [key, once, ok] of [
    ['create_response', createOnce, 200],
    ['respondent page', postOnce, 201],
  ]) {
    for (let i = 0; i < 20; i++) await once(); // warm: caches, prepared plans
    await sleep(500);
    counter.reset();
    const cpu0 = lib.cpuMs(counted.proc.pid);
    for (let i = 0; i < OPTS.serial; i++) {
      const r = await once();
      if (r.status !== ok) throw new Error(`${key} answered ${r.status}: ${r.text.slice(0, 300)}`);
    }
    const cpu1 = lib.cpuMs(counted.proc.pid);
    // Background work the submissions caused (sequencing) is counted too, once it has run.
    await sleep(1000);
    const byText = [...counter.byText.entries()];
    const own = seqNullable
      ? byText.filter(([text]) => !SEQUENCER_SQL.test(text)).reduce((n, [, c]) => n + c, 0)
      : counter.statements;
    perCall[key] = {
      statements: counter.statements / OPTS.serial,
      own: own / OPTS.serial,
      roundTrips: counter.roundTrips / OPTS.serial,
      parses: counter.parses / OPTS.serial,
      cpuMs: cpu0 === undefined || cpu1 === undefined ? NaN : (cpu1 - cpu0) / OPTS.serial,
      byText: [...counter.byText.entries()].sort((a, b) => b[1] - a[1]).map(([text, n]) => [text, n / OPTS.serial]),
    };
    log(
      `${key}: ${f2(perCall[key].statements)} statements (${f2(perCall[key].parses)} parsed), ${f2(perCall[key].roundTrips)} round trips, ${f3(perCall[key].cpuMs)} ms of server CPU per call (${OPTS.serial} sequential)`,
    );
  }
  await counted.stop();
  servers.splice(servers.indexOf(counted), 1);

  // --- load --------------------------------------------------------------------------------------
  const one = [forms[0]];
  const targets = [
    target(
      'base1',
      'baseline INSERT, 1 form',
      baseline,
      '/response',
      json,
      one.map((f) => ({ formId: f.id, answers: f.answers })),
    ),
    target(
      'fw1',
      'create_response, 1 form',
      formwork,
      api('create_response'),
      auth,
      one.map((f) => ({ publicId: f.publicId, answers: f.answers })),
    ),
    target(
      'baseN',
      `baseline INSERT, ${forms.length} forms`,
      baseline,
      '/response',
      json,
      forms.map((f) => ({ formId: f.id, answers: f.answers })),
    ),
    target(
      'fwN',
      `create_response, ${forms.length} forms`,
      formwork,
      api('create_response'),
      auth,
      forms.map((f) => ({ publicId: f.publicId, answers: f.answers })),
    ),
    target(
      'web1',
      'respondent page (JSON), 1 form',
      formwork,
      `/f/${forms[0].publicId}`,
      { ...json, Accept: 'application/json' },
      one.map((f) => ({ answers: f.answers })),
      201,
    ),
  ];
  const byKey = Object.fromEntries(targets.map((t) => [t.key, t]));
  const rows = [];
  let answered = 0;
  const reads = { summary: [], page: [] };
  await alternateRounds(targets, OPTS, {
    measure: async (t, seconds) => {
      const sampler = t.server === formwork && seqNullable ? lagSampler(dbUrl) : undefined;
      // Reads of the hot form while it takes submissions (they count every response committed before them).
      const reader = t.key === 'fw1' ? readerProbe(`http://127.0.0.1:${fwPort}`, auth, forms[0].publicId) : undefined;
      const fig = await cannon(t, seconds, dbName);
      if (reader) {
        const times = await reader.stop();
        reads.summary.push(...times.summary);
        reads.page.push(...times.page);
      }
      if (sampler) {
        const lag = Float64Array.from(await sampler.stop()).sort();
        Object.assign(fig, { lagMax: lag[lag.length - 1], lagP99: percentile(lag, 99), lagP50: percentile(lag, 50) });
      }
      if (t.server === formwork) answered += fig.total;
      t.server.assertAlive();
      return fig;
    },
    ...roundLog(OPTS, {
      label: (t) => t.label,
      fields: (t) => ({ key: t.key, label: t.label }),
      line: (fig) =>
        `${f0(fig.rps)} req/s, p50 ${f1(fig.p50)} ms, p99 ${f1(fig.p99)} ms, server ${f3(fig.cpuPerReq)} ms/req, postgres ${f3(fig.pgPerReq)} ms/req${fig.lagMax === undefined ? '' : `, oldest unsequenced max ${f0(fig.lagMax)} ms`}, other processes ${f0(fig.otherPct)}%`,
      problems,
      rows,
    }),
  });
  const limits = rateLimitsAfterLoad(
    await post(`http://127.0.0.1:${fwPort}${api('get_form')}`, auth, JSON.stringify({ publicId: forms[0].publicId })),
  );
  problems.push(...limits.problems);

  // --- nothing lost, nothing counted twice ---------------------------------------------------
  // Requests still queued when a round ended are answered after it: wait until the rows stop growing.
  for (let last = -1; ;) {
    const n = Number((await db.query('SELECT count(*) AS n FROM responses')).rows[0].n);
    if (n === last) break;
    last = n;
    await sleep(1000);
  }
  let stored = 0;
  const wrong = [];
  for (const f of forms) {
    const listed = await call('list_responses', { publicId: f.publicId, limit: 1 });
    const summary = await call('summarize_responses', { publicId: f.publicId });
    const {
      rows: [r],
    } = await db.query(
      `SELECT count(*)::int AS n, count(seq)::int AS sequenced, count(DISTINCT seq)::int AS distinct, COALESCE(min(seq), 0)::int AS min, COALESCE(max(seq), 0)::int AS max
         FROM responses WHERE form_id = $1`,
      [f.id],
    );
    stored += r.n;
    if (listed.total !== r.n || summary.total !== r.n)
      wrong.push(`${f.publicId}: ${r.n} rows, list_responses total ${listed.total}, summary total ${summary.total}`);
    if (r.sequenced !== r.n || r.distinct !== r.n || r.min !== (r.n ? 1 : 0) || r.max !== r.n)
      wrong.push(`${f.publicId}: seq not 1..${r.n} exactly once (${JSON.stringify(r)})`);
    for (const b of summary.blocks) {
      const {
        rows: [a],
      } = await db.query('SELECT count(*)::int AS n FROM responses WHERE form_id = $1 AND answers ? $2', [
        f.id,
        b.blockId,
      ]);
      if (a.n !== b.answered)
        wrong.push(`${f.publicId}: block ${b.blockId} answered ${b.answered} in the summary, ${a.n} in the rows`);
    }
  }
  const created = stored - rowsBefore;
  if (created < answered)
    wrong.push(
      `${answered} submissions were answered with success during the rounds but only ${created} responses are stored`,
    );
  problems.push(...wrong);
  if (!wrong.length) {
    checks.push(
      `${forms.length} forms: \`list_responses\` total and \`summarize_responses\` total equal each form's rows, every block's \`answered\` equals a recount, and seq is exactly 1..n on every form (no gap, no duplicate, none left unsequenced).`,
      `${created} responses stored for ${answered} successful submissions counted in the warm-ups and rounds (the difference: requests answered after their round's end).`,
    );
  }

  // --- optional CPU profile -------------------------------------------------------------------------
  let profile = '';
  if (OPTS.profile) {
    for (const s of servers.splice(0)) await s.stop();
    const out = join(RESULTS, `hot-forms-${ts}-create-response.cpuprofile`);
    mkdirSync(RESULTS, { recursive: true });
    const port = await freePort();
    const profiled = new Server('formwork (profiled)', ['-r', join(__dirname, 'cpu-profile-hook.js'), MAIN], {
      ...fwEnv,
      PORT: String(port),
      BENCH_CPU_PROFILE_OUT: out,
    });
    servers.push(profiled);
    const pt = { ...byKey.fw1, server: profiled };
    await profiled.waitUntil(
      async () => (await post(`http://127.0.0.1:${port}${pt.path}`, auth, pt.bodies[0])).status === 200,
    );
    await cannon(pt, OPTS.warmup, dbName);
    profiled.proc.kill('SIGUSR2');
    const pf = await cannon(pt, OPTS.duration, dbName);
    profiled.proc.kill('SIGUSR2');
    await profiled.waitUntil(async () => profiled.output.includes('cpu-profile-written'), 30_000);
    await profiled.stop();
    servers.splice(servers.indexOf(profiled), 1);
    const summary = cpuProfile.summarize(JSON.parse(readFileSync(out, 'utf8')), 25);
    profile = [
      '## CPU profile of create_response on one form (BENCH_PROFILE=1)',
      '',
      `${f0(pf.rps)} req/s while profiled; ${f3(summary.busyMs / (pf.total + pf.non2xx || 1))} ms of sampled CPU per request on the main thread. Profile: \`${relative(ROOT, out)}\`.`,
      '',
      cpuProfile.toMarkdown(summary),
    ].join('\n');
  }

  // --- report ----------------------------------------------------------------------------------------
  const means = {};
  const table = [];
  for (const t of targets) {
    const rs = rows.filter((r) => r.key === t.key);
    means[t.key] = meanRow(rs, ['rps', 'p50', 'p99', 'cpuPct', 'cpuPerReq', 'pgPerReq', 'otherPct']);
    if (rs.some((r) => r.lagMax !== undefined)) means[t.key].lagMax = Math.max(...rs.map((r) => r.lagMax));
    table.push(...rs, { round: 'mean', label: t.label, ...means[t.key] });
  }
  const perRound = (num, den) =>
    Array.from(
      { length: OPTS.rounds },
      (_, i) =>
        rows.find((r) => r.round === String(i + 1) && r.key === num).rps /
        rows.find((r) => r.round === String(i + 1) && r.key === den).rps,
    );
  const verdicts = [
    ['create_response on one form', 'fw1', 'base1'],
    [`create_response over ${forms.length} forms`, 'fwN', 'baseN'],
    ['respondent page (JSON) on one form', 'web1', 'base1'],
  ].map(([name, num, den]) => {
    const ratio = means[num].rps / means[den].rps;
    const pass = ratio >= OPTS.target && means[num].p99 < OPTS.p99;
    const outcome = problems.length ? 'NOT VALID, see Problems' : pass ? 'PASS' : 'FAIL';
    return `- ${name}: **${f2(ratio)}×** the baseline's req/s (per round: ${perRound(num, den).map(f2).join(', ')}), p99 **${f0(means[num].p99)} ms** — target >= ${OPTS.target}× with p99 < ${OPTS.p99} ms: **${outcome}**`;
  });
  const lagRows = rows.filter((r) => r.lagMax !== undefined);
  const lagLine = lagRows.length
    ? `Oldest committed response not yet sequenced (what a summary would lag behind if it did not fold first), sampled every ${LAG_EVERY_MS} ms during Formwork's rounds: p50 ${f0(mean(lagRows.map((r) => r.lagP50)))} ms, p99 ${f0(Math.max(...lagRows.map((r) => r.lagP99)))} ms, max **${f0(Math.max(...lagRows.map((r) => r.lagMax)))} ms**.`
    : 'Responses get their seq at insert in this version (responses.seq is NOT NULL): nothing waits to be sequenced.';
  const readStats = (xs) => {
    const s = Float64Array.from(xs).sort();
    return xs.length ? `p50 ${f0(percentile(s, 50))} ms, max ${f0(s[s.length - 1])} ms (${xs.length} calls)` : 'none';
  };
  const readLine = `Reads of the hot form during its create_response rounds, one at a time every 200 ms: \`summarize_responses\` ${readStats(reads.summary)}; \`list_responses\` (first page of 50) ${readStats(reads.page)}. Each sequences what is waiting first, so it counts every response committed before it.`;
  const statementRows = Object.entries(perCall).flatMap(([key, c]) =>
    c.byText.map(([text, n]) => `| ${key} | ${f2(n)} | \`${text.replace(/\|/g, '\\|').replace(/`/g, "'")}\` |`),
  );
  const md = [
    `# Hot forms: create_response against a one-INSERT baseline, ${started.toISOString()}`,
    '',
    ...verdicts,
    '',
    noiseLine(rows, (r) => `${r.round} ${r.label}`, 'the ratios are less reliable, '),
    '',
    resultsTable(table),
    '',
    `- ${lagLine}`,
    `- ${readLine}`,
    '',
    '## One submission: statements, round trips and server CPU',
    '',
    `${OPTS.serial} sequential calls on one form through a relay that reads the PostgreSQL wire protocol (after 20 warm-up calls; background work they caused, such as sequencing, is included up to 1 s after the last). A statement is an Execute or a simple Query; a round trip is a Sync or a simple Query (the client waits for ReadyForQuery); parsed counts the statements PostgreSQL had to parse and plan (a named prepared statement is parsed once per connection).`,
    '',
    "| Call | statements | of which the call's own | parsed | round trips | server CPU ms/call (unloaded) |",
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...Object.entries(perCall).map(
      ([key, c]) =>
        `| ${key} | **${f2(c.statements)}** | ${f2(c.own)} | ${f2(c.parses)} | **${f2(c.roundTrips)}** | ${f3(c.cpuMs)} |`,
    ),
    '',
    seqNullable
      ? 'The rest is the sequencer, shared by all the submissions of its pass: every 100 ms one look for waiting responses, and when there are some, a transaction that claims their forms and sequences them in one statement.'
      : "This version has no sequencer: every statement is the call's own.",
    '',
    '| Call | per call | statement |',
    '| --- | ---: | --- |',
    ...statementRows,
    '',
    logic.md,
    '',
    '## Checks (after the load)',
    '',
    ...(checks.length ? checks.map((c) => `- ${c}`) : ['- FAILED: see Problems.']),
    '',
    '## Notes',
    '',
    `- baseline: bare \`node:http\` + \`pg\` Pool (max ${POOL_SIZE}); per request it parses the JSON body and runs ONE \`INSERT INTO bench_baseline_responses (form_id, answers) VALUES ($1, $2) RETURNING id, submitted_at\` (a table with a uuid primary key and an index on (form_id, submitted_at)), answered as JSON. No auth, no validation, no aggregates, no audit.`,
    `- formwork: \`dist/src/main.js\`, \`POST /api/v1/tools/create_response\` with the demo's admin token and the respondent page's \`POST /f/{publicId}\` with JSON, NODE_ENV=production, LOG_LEVEL=warn, both rate limits at ${RATE_LIMIT}/min (counting, never refusing), default pool (${POOL_SIZE}). The same answers as the baseline: ${Object.keys(forms[0].answers).length} answers to the ${first.blocks.length} blocks of "${first.title}" (the CLI demo's form; the other forms are copies).`,
    `- Load: autocannon ${autocannonVersion()}, ${OPTS.connections} connections, ${OPTS.duration} s per round, ${OPTS.rounds} rounds alternating ${targets.map((t) => t.label).join(', ')}, after ${OPTS.warmup} s of warm-up each. Client, servers and PostgreSQL share the machine; compare the ratios of one run, not req/s across runs.`,
    machineLine(
      `${pgVersion} (${Object.entries(pgSettings)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')})`,
      loadBefore,
    ),
    ...(limits.counted
      ? [`- Rate limits counted: after the load \`X-RateLimit-Remaining: ${limits.remaining}\` of ${limits.limit}.`]
      : []),
    ...notes.map((n) => `- ${n}`),
    ...(problems.length ? ['', '## Problems', '', ...problems.map((p) => `- ${p}`)] : []),
    ...(profile ? ['', profile] : []),
    '',
  ].join('\n');
  log(`written ${writeReport(`hot-forms-${ts}.md`, md)}`);
  if (problems.length) {
    log(`BROKEN: ${problems.length} problem(s):\n  ${problems.join('\n  ')}`);
    process.exitCode = 1;
  }
}

/**
 * Server CPU per create_response on the 50-block form with 20 rules and on the same form without:
 * sequential batches of BENCH_SERIAL calls, alternating (plain, rules) three times after a warm-up
 * of each, so drift on a shared machine falls on both; the ratio is of the sums.
 */
async function branchingCpu(url, auth, call, cpu) {
  const forms = {};
  for (const [key, rules] of [
    ['plain', false],
    ['rules', true],
  ]) {
    const made = await call('create_form', { title: `Branching ${key}`, blocks: branchingBlocks(rules) });
    await call('publish_form', { publicId: made.publicId });
    const answers = answersFor(made.blocks);
    const body = JSON.stringify({ publicId: made.publicId, answers });
    forms[key] = { body, cpuMs: 0, calls: 0, blocks: made.blocks.length, answers: Object.keys(answers).length };
  }
  const rulesCount = branchingBlocks(true).filter((b) => b.showIf || b.jumps).length;
  const batch = async (f, n) => {
    const c0 = cpu();
    for (let i = 0; i < n; i++) {
      const r = await post(`${url}/api/v1/tools/create_response`, auth, f.body);
      if (r.status !== 200) throw new Error(`create_response answered ${r.status}: ${r.text.slice(0, 300)}`);
    }
    const c1 = cpu();
    return c0 === undefined || c1 === undefined ? NaN : c1 - c0;
  };
  for (const f of Object.values(forms)) await batch(f, 30); // warm: caches, prepared plans, JIT
  const perBatch = { plain: [], rules: [] };
  for (let round = 0; round < 3; round++) {
    for (const key of ['plain', 'rules']) {
      const ms = await batch(forms[key], OPTS.serial);
      forms[key].cpuMs += ms;
      forms[key].calls += OPTS.serial;
      perBatch[key].push(ms / OPTS.serial);
    }
  }
  const per = (k) => forms[k].cpuMs / forms[k].calls;
  const ratio = per('rules') / per('plain');
  const verdict = ratio <= OPTS.logicTarget ? 'PASS' : 'FAIL';
  log(
    `forms that branch: create_response ${f3(per('rules'))} ms of server CPU per call with ${rulesCount} rules, ${f3(per('plain'))} ms without: ${f2(ratio)}x (target <= ${OPTS.logicTarget}x: ${verdict})`,
  );
  const md = [
    '## Forms that branch: create_response with rules against without',
    '',
    `- A ${forms.rules.blocks}-block form of 5 pages with ${rulesCount} rules (16 showIf, a quarter of them all/any of two leaves, and a jump on each of the 4 page_breaks; the answers meet every showIf and no jump, so every rule is evaluated and all ${forms.rules.answers} answers are validated and stored) against the same blocks without rules: **${f2(ratio)}×** the server CPU per call (${f3(per('rules'))} ms against ${f3(per('plain'))} ms; per batch: rules ${perBatch.rules.map(f3).join(', ')}, plain ${perBatch.plain.map(f3).join(', ')}) — target <= ${OPTS.logicTarget}×: **${verdict}**.`,
    `- ${OPTS.serial} sequential \`create_response\` calls per batch, alternating plain and rules three times after 30 warm-up calls of each, before the load; server CPU from /proc (the sequencer's background work included, alike for both).`,
  ].join('\n');
  return { ratio, md };
}

runMain(main, teardown);

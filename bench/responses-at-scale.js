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
const { isDeepStrictEqual } = require('node:util');
const os = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { Client } = require('pg');
const {
  DIST,
  CLI,
  MAIN,
  RATE_LIMIT,
  COUNTING_LIMITS,
  log,
  envNumber,
  envFlag,
  loadOptions,
  requireBuilt,
  run,
  freePort,
  cleanEnv,
  serviceEnv,
  Server,
  post,
  startRun,
  migrateAndSeed,
  Teardown,
  runMain,
  loadTarget,
  percentile,
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
} = require('./lib');

const OPTS = {
  ...loadOptions({ connections: 10, rounds: 3 }),
  responses: envNumber('BENCH_RESPONSES', 1_000_000, { integer: true, min: 1000 }),
  serial: envNumber('BENCH_SERIAL', 100, { integer: true, min: 1 }),
  naiveRuns: envNumber('BENCH_NAIVE_RUNS', 3, { integer: true, min: 1 }),
  targetSummary: envNumber('BENCH_TARGET_SUMMARY', 1.5),
  targetDeep: envNumber('BENCH_TARGET_DEEP', 3),
  keepDb: envFlag('BENCH_KEEP_DB'),
};
const PAGE = 200;
/** The deep page: the last full page of the bulk load (999,800 for 1,000,000). */
const DEEP_OFFSET = OPTS.responses - PAGE;
const FORM_TITLE = 'Customer feedback';

const teardown = new Teardown();

/** A SQL string literal (values here come from our own database, but quote them properly anyway). */
const lit = (s) => `'${String(s).replace(/'/g, "''")}'`;

// --- the bulk load ------------------------------------------------------------------------------

const NAMES = ['Ada', 'Grace', 'Linus', 'Margaret', 'Alan', 'Barbara', 'Ken', 'Radia', 'Dennis', 'Frances'];
const COMMENTS = [
  'Love it',
  'The API is very clear',
  'More block types please',
  'Summaries saved me hours',
  'Works great with my agent',
];
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
  for (let i = 0; i < pairs.length; i += 40)
    chunks.push(
      `jsonb_build_object(${pairs
        .slice(i, i + 40)
        .map(([k, v]) => `${lit(k)}, ${v}`)
        .join(', ')})`,
    );
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
  const pairs = [
    ['total', 'count(*)'],
    ['first', 'min(submitted_at)'],
    ['last', 'max(submitted_at)'],
  ];
  for (const b of blocks) {
    if (b.type === 'statement') continue;
    const id = lit(b.id);
    pairs.push([`${b.id}:answered`, `count(*) FILTER (WHERE answers ? ${id})`]);
    const choices = (b.settings && b.settings.choices) || [];
    if (b.type === 'checkboxes') {
      for (const c of choices)
        pairs.push([`${b.id}:${c.id}`, `count(*) FILTER (WHERE answers -> ${id} ? ${lit(c.id)})`]);
    } else if (b.type === 'multiple_choice' || b.type === 'dropdown') {
      for (const c of choices)
        pairs.push([`${b.id}:${c.id}`, `count(*) FILTER (WHERE answers ->> ${id} = ${lit(c.id)})`]);
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
      if (times.length !== runs)
        throw new Error(`psql printed ${times.length} timings for ${runs} runs: ${r.stdout.slice(-500)}`);
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
      output = res.rows
        .map((r) =>
          r
            .map((v) => (v !== null && typeof v === 'object' && !(v instanceof Date) ? JSON.stringify(v) : String(v)))
            .join('|'),
        )
        .join('\n');
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
    .filter(
      (l) =>
        /^\s*(->\s*)?[A-Z]/.test(l) &&
        !/^\s*(Filter|Index Cond|Sort Key|Workers|Group Key|Recheck Cond|Heap Fetches)\b/.test(
          l.replace(/^\s*->\s*/, ''),
        ),
    )
    .map((l) => l.replace(/^\s*->\s*/, '').trim())
    .join(' → ');
}

// --- figures and checks --------------------------------------------------------------------------

const median = (xs) => percentile(Float64Array.from(xs).sort(), 50);
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;
const int = (n) => Number(n).toLocaleString('en-US');
const mib = (bytes) => `${(Number(bytes) / 2 ** 20).toFixed(1)} MiB`;

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
  if (firstBad >= 0)
    wrong.push(
      `response ${firstBad} is ${got[firstBad] ? got[firstBad].id : 'missing'}, expected ${expected[firstBad].id} (seq ${expected[firstBad].seq})`,
    );
  const badAnswers = expected.findIndex(
    (row, i) =>
      got[i] &&
      got[i].id === row.id &&
      (!isDeepStrictEqual(got[i].answers, expectedView(blocks, row.answers)) ||
        got[i].submittedAt !== row.submitted_at.toISOString()),
  );
  if (badAnswers >= 0)
    wrong.push(
      `response ${badAnswers} (${expected[badAnswers].id}) has answers ${JSON.stringify(got[badAnswers].answers)} at ${got[badAnswers].submittedAt}, expected ${JSON.stringify(expectedView(blocks, expected[badAnswers].answers))} at ${expected[badAnswers].submitted_at.toISOString()}`,
    );
  return wrong.map((w) => `${name}: ${w}`);
}

/** What is wrong with a summarize_responses answer, compared with the naive recount (empty when right). */
function checkSummary(json, ref, latest, blocks, publicId) {
  const wrong = [];
  const near = (a, b) =>
    a === b || (Number.isFinite(a) && Number.isFinite(b) && Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(b)));
  if (json.publicId !== publicId) wrong.push(`publicId ${json.publicId}`);
  if (json.total !== ref.total) wrong.push(`total ${json.total}, expected ${ref.total}`);
  if (json.firstSubmittedAt !== new Date(ref.first).toISOString())
    wrong.push(`firstSubmittedAt ${json.firstSubmittedAt}, expected ${new Date(ref.first).toISOString()}`);
  if (json.lastSubmittedAt !== new Date(ref.last).toISOString())
    wrong.push(`lastSubmittedAt ${json.lastSubmittedAt}, expected ${new Date(ref.last).toISOString()}`);
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
    if (s.skipped !== ref.total - answered)
      wrong.push(`${b.id} (${b.type}) skipped ${s.skipped}, expected ${ref.total - answered}`);
    const choices = (b.settings && b.settings.choices) || [];
    if (choices.length) {
      let sum = 0;
      for (const c of choices) {
        const got = (s.choices || []).find((x) => x.id === c.id);
        const want = ref[`${b.id}:${c.id}`];
        sum += got ? got.count : 0;
        if (!got || got.count !== want)
          wrong.push(`${b.id} (${b.type}) choice "${c.label}" count ${got ? got.count : 'missing'}, expected ${want}`);
      }
      // A single choice sums to the answered count; checkboxes to at least it (one or more each).
      if (b.type === 'checkboxes' ? sum < answered : sum !== answered)
        wrong.push(`${b.id} (${b.type}) choice counts sum to ${sum} for ${answered} answered`);
    } else if (b.type === 'yes_no') {
      if (s.yes !== ref[`${b.id}:true`] || s.no !== ref[`${b.id}:false`])
        wrong.push(`${b.id} yes/no ${s.yes}/${s.no}, expected ${ref[`${b.id}:true`]}/${ref[`${b.id}:false`]}`);
      if (s.yes + s.no !== answered) wrong.push(`${b.id} yes + no = ${s.yes + s.no} for ${answered} answered`);
    } else if (['number', 'rating', 'linear_scale'].includes(b.type)) {
      const wantMean = answered ? ref[`${b.id}:sum`] / answered : null;
      if (s.min !== ref[`${b.id}:min`] || s.max !== ref[`${b.id}:max`])
        wrong.push(
          `${b.id} (${b.type}) min/max ${s.min}/${s.max}, expected ${ref[`${b.id}:min`]}/${ref[`${b.id}:max`]}`,
        );
      if (!(wantMean === null ? s.mean === null : near(s.mean, Math.round(wantMean * 10_000) / 10_000)))
        wrong.push(`${b.id} (${b.type}) mean ${s.mean}, expected ${wantMean}`);
    } else if (b.type === 'date') {
      if (s.min !== ref[`${b.id}:min`] || s.max !== ref[`${b.id}:max`])
        wrong.push(`${b.id} (date) min/max ${s.min}/${s.max}, expected ${ref[`${b.id}:min`]}/${ref[`${b.id}:max`]}`);
    } else if (latest.has(b.id)) {
      const want = latest.get(b.id);
      const got = (s.latest || []).map((l) => [l.value, l.submittedAt]);
      if (!isDeepStrictEqual(got, want))
        wrong.push(`${b.id} (${b.type}) latest ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
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
    lines.push(
      `| ${b}${r.round}${b} | ${r.label} | ${f0(r.rps)} | ${b}${f2(r.p50)}${b} | ${f2(r.p99)} | ${f2(r.meanLat)} | ${r.total} | ${r.non2xx} | ${r.errors} | ${f0(r.cpuPct)} | ${f3(r.cpuPerReq)} | ${f3(r.pgPerReq)} | ${f0(r.otherPct)} |`,
    );
  }
  return lines.join('\n');
}

// --- main ---------------------------------------------------------------------------------------

async function main() {
  const { started, ts, database } = startRun('formwork_bench', OPTS);
  const { name: dbName, url: dbUrl } = database;
  const notes = [];
  const problems = [];
  const checks = [];
  const loadBefore = os.loadavg();
  /** Connections to close before the database can be dropped cleanly (DROP ... WITH (FORCE) would end them anyway). */
  const closers = teardown.closers;
  teardown.onSignals('stopping the server and dropping the database');

  requireBuilt(
    [CLI, MAIN, join(DIST, 'responses', 'response-stats.repository.js'), join(DIST, 'database', 'data-source.js')],
    'bench:responses',
  );

  // --- database: create, migrate, seed -------------------------------------------------------
  teardown.database = database;
  const { version: pgVersion, settings: pgSettings } = await database.create([
    'shared_buffers',
    'work_mem',
    'max_wal_size',
    'synchronous_commit',
  ]);

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
      `**The CLI \`demo --json\` failed**, so the database was seeded with \`bench/seed-demo.js\` (the same compiled \`DemoService.create()\`). CLI error: \`${cliDemoError.replace(/`/g, "'")}\``,
    );
  }

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
  const blocks = (
    await db.query(`SELECT id, type, required, settings FROM blocks WHERE form_id = $1 ORDER BY position`, [form.id])
  ).rows;
  const publicId = form.public_id;
  const demoCount = form.total;
  const expectedTotal = demoCount + OPTS.responses;
  log(
    `form under test: ${publicId} "${form.title}" (${blocks.length} blocks: ${blocks.map((b) => b.type).join(', ')}; ${demoCount} demo responses, last seq ${form.last_seq})`,
  );

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
  log(
    `loading ${int(OPTS.responses)} responses with one INSERT ... SELECT FROM generate_series (expect tens of seconds)`,
  );
  await timed(
    `Bulk load: ${int(OPTS.responses)} rows, one \`INSERT ... SELECT ... FROM generate_series\` + counter update, one transaction`,
    async () => {
      await db.query('BEGIN');
      try {
        const [c] = (
          await db.query(
            'SELECT last_seq::bigint AS last_seq, last_submitted_at FROM response_counters WHERE form_id = $1 FOR UPDATE',
            [form.id],
          )
        ).rows;
        const r = await db.query(insertSql, [
          form.id,
          c.last_seq,
          c.last_submitted_at || lastAt,
          stepUs,
          OPTS.responses,
        ]);
        if (r.rowCount !== OPTS.responses)
          throw new Error(`the bulk INSERT inserted ${r.rowCount} rows, expected ${OPTS.responses}`);
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
    },
  );

  // Build the aggregates with the service's own code, as after any bulk import.
  require('reflect-metadata');
  const { dataSourceOptions } = require(join(DIST, 'database', 'data-source.js'));
  const { ResponseStatsRepository } = require(join(DIST, 'responses', 'response-stats.repository.js'));
  const { DataSource } = require('typeorm');
  const dataSource = new DataSource(dataSourceOptions(dbUrl, 2, false));
  await dataSource.initialize();
  const closeDs = () => dataSource.destroy();
  closers.add(closeDs);
  try {
    await timed(
      'Aggregates: `recomputeResponseStats()` (dist/src/responses/response-stats.repository.js), one transaction',
      () => dataSource.transaction((tx) => new ResponseStatsRepository().recomputeResponseStats(tx, form.id)),
    );
  } finally {
    closers.delete(closeDs);
    await dataSource.destroy();
  }
  // Settle the table as it would be after autovacuum, so that no vacuum or checkpoint runs during the rounds.
  await timed('`VACUUM (ANALYZE)` of the database', () => db.query('VACUUM (ANALYZE)'));
  try {
    await timed('`CHECKPOINT`', () => db.query('CHECKPOINT'));
  } catch (err) {
    notes.push(
      `\`CHECKPOINT\` failed (${err.message}); a checkpoint of the load's WAL may have run during the rounds.`,
    );
  }

  const counter = (
    await db.query(
      'SELECT total::bigint AS total, last_seq::bigint AS last_seq, last_submitted_at FROM response_counters WHERE form_id = $1',
      [form.id],
    )
  ).rows[0];
  if (Number(counter.total) !== expectedTotal || Number(counter.last_seq) !== Number(form.last_seq) + OPTS.responses) {
    throw new Error(
      `after the load the counter says total ${counter.total}, last_seq ${counter.last_seq}; expected ${expectedTotal} and ${Number(form.last_seq) + OPTS.responses}`,
    );
  }
  const sizes = (
    await db.query(
      `SELECT t AS table, pg_total_relation_size(t::regclass) AS total, pg_relation_size(t::regclass) AS heap, pg_indexes_size(t::regclass) AS indexes,
              (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I', t), false, true, '')))[1]::text::bigint AS rows
         FROM unnest(ARRAY['responses', 'response_counters', 'response_buckets', 'block_stats', 'answer_counts']) t`,
    )
  ).rows;
  const buckets = Number(
    (await db.query('SELECT count(*) AS n FROM response_buckets WHERE form_id = $1', [form.id])).rows[0].n,
  );

  // --- the naive SQL the maintained structures avoid (psql), and the reference values -----------
  const fid = lit(form.id);
  const naive = [
    {
      key: 'count',
      label: '`SELECT count(*) FROM responses WHERE form_id = …`',
      sql: `SELECT count(*) FROM responses WHERE form_id = ${fid}`,
      avoided: 'the total of list_responses and summarize_responses (read from response_counters)',
    },
    {
      key: 'offset0',
      label: '`SELECT id, submitted_at, answers … ORDER BY seq OFFSET 0 LIMIT 200`',
      sql: `SELECT id, submitted_at, answers FROM responses WHERE form_id = ${fid} AND seq IS NOT NULL ORDER BY seq OFFSET 0 LIMIT ${PAGE}`,
      avoided: '(for comparison: the shallow page)',
    },
    {
      key: 'deep',
      label: `\`SELECT id, submitted_at, answers … ORDER BY seq OFFSET ${DEEP_OFFSET} LIMIT 200\``,
      sql: `SELECT id, submitted_at, answers FROM responses WHERE form_id = ${fid} AND seq IS NOT NULL ORDER BY seq OFFSET ${DEEP_OFFSET} LIMIT ${PAGE}`,
      avoided: 'the deep page (response_buckets: sum bucket counts, walk at most one bucket)',
    },
    {
      key: 'summary',
      label: 'one-scan summary: `count(*) FILTER (…)`, `sum`, `min`, `max` per block and choice',
      sql: naiveSummarySql(form.id, blocks),
      avoided: 'summarize_responses (block_stats, answer_counts)',
    },
  ];
  for (const q of naive) {
    log(`naive SQL (${OPTS.naiveRuns} runs): ${q.key}`);
    Object.assign(q, await timedSql(dbUrl, q.sql, OPTS.naiveRuns));
    q.plan = await planOf(db, q.sql);
  }
  if (naive.some((q) => q.via === 'pg'))
    notes.push(
      'psql was not found: the naive queries were timed with the pg client around each query (includes the client round trip and parsing).',
    );
  const ref = JSON.parse(naive.find((q) => q.key === 'summary').output);
  const naiveCount = Number(naive.find((q) => q.key === 'count').output);
  if (naiveCount !== expectedTotal || ref.total !== expectedTotal)
    throw new Error(`the form has ${naiveCount} responses (recount ${ref.total}), expected ${expectedTotal}`);
  const pageRows = async (offset) =>
    (
      await db.query(
        `SELECT id, seq::bigint AS seq, submitted_at, answers FROM responses WHERE form_id = $1 AND seq IS NOT NULL ORDER BY seq OFFSET $2 LIMIT $3`,
        [form.id, offset, PAGE],
      )
    ).rows;
  const expectedShallow = await pageRows(0);
  const expectedDeep = await pageRows(DEEP_OFFSET);
  const latest = new Map();
  for (const b of blocks.filter((x) => ['short_text', 'long_text', 'email', 'url', 'phone'].includes(x.type))) {
    const rows = (
      await db.query(
        `SELECT answers ->> $2 AS value, submitted_at FROM responses WHERE form_id = $1 AND seq IS NOT NULL AND answers ? $2 ORDER BY seq DESC LIMIT 5`,
        [form.id, b.id],
      )
    ).rows;
    latest.set(
      b.id,
      rows.map((r) => [r.value, r.submitted_at.toISOString()]),
    );
  }

  // --- the server ------------------------------------------------------------------------------
  const port = await freePort();
  const server = new Server('formwork', [MAIN], serviceEnv(baseEnv, port, dbUrl, COUNTING_LIMITS));
  teardown.servers.push(server);
  const base = `http://127.0.0.1:${port}/api/v1/tools`;
  const headers = { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' };
  const target = (key, label, tool, args) => ({
    key,
    label,
    server,
    url: `${base}/${tool}`,
    headers,
    body: JSON.stringify(args),
  });
  const targets = [
    target('shallow', `list_responses offset 0`, 'list_responses', { publicId, limit: PAGE, offset: 0 }),
    target('deep', `list_responses offset ${int(DEEP_OFFSET)}`, 'list_responses', {
      publicId,
      limit: PAGE,
      offset: DEEP_OFFSET,
    }),
    target('summary', 'summarize_responses', 'summarize_responses', { publicId }),
  ];
  const byKey = Object.fromEntries(targets.map((t) => [t.key, t]));
  await server.waitUntil(
    async () => (await post(targets[0].url, headers, targets[0].body, 5_000)).status === 200,
    60_000,
  );
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
  const rows = [];
  await alternateRounds(targets, OPTS, {
    // Every 2xx latency is kept (exact), and postgres's CPU is reported per request.
    measure: async (t, seconds) => {
      const fig = figures(await loadTarget(t, seconds, { connections: OPTS.connections, dbName, exact: true }));
      server.assertAlive();
      return fig;
    },
    ...roundLog(OPTS, {
      label: (t) => t.label,
      fields: (t) => ({ key: t.key, label: t.label }),
      line: (fig) =>
        `${f0(fig.rps)} req/s, p50 ${f2(fig.p50)} ms, p99 ${f2(fig.p99)} ms, server ${f3(fig.cpuPerReq)} ms/req, postgres ${f3(fig.pgPerReq)} ms/req, other processes ${f0(fig.otherPct)}%`,
      problems,
      rows,
    }),
  });

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
  const limits = rateLimitsAfterLoad(after);
  problems.push(...limits.problems);
  if (limits.counted)
    notes.push(
      `Rate limits were on and counting: after the load, \`X-RateLimit-Limit: ${limits.limit}\`, \`X-RateLimit-Remaining: ${limits.remaining}\`.`,
    );
  server.assertAlive();

  // --- report ------------------------------------------------------------------------------------
  const means = {};
  const table = [];
  for (const t of targets) {
    const rs = rows.filter((r) => r.key === t.key);
    means[t.key] = meanRow(rs, ['rps', 'p50', 'p99', 'meanLat', 'cpuPct', 'cpuPerReq', 'pgPerReq', 'otherPct']);
    table.push(...rs, { round: 'mean', label: t.label, ...means[t.key] });
  }
  const perRound = (num, den, k) =>
    Array.from(
      { length: OPTS.rounds },
      (_, i) =>
        rows.find((r) => r.round === String(i + 1) && r.key === num)[k] /
        rows.find((r) => r.round === String(i + 1) && r.key === den)[k],
    );
  const serialP50 = Object.fromEntries(targets.map((t) => [t.key, median(serial[t.key])]));
  const ratios = [
    {
      name: 'summarize / list page (offset 0)',
      num: 'summary',
      den: 'shallow',
      target: OPTS.targetSummary,
      goal: 'about the time of one page',
    },
    {
      name: `list page offset ${int(DEEP_OFFSET)} / offset 0`,
      num: 'deep',
      den: 'shallow',
      target: OPTS.targetDeep,
      goal: 'no more than 3x',
    },
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
  const verdicts = ratios.map(
    (r) =>
      `- ${r.name}, p50 latency at ${OPTS.connections} connections: **${f2(r.p50)}×** (per round: ${r.perRound.map(f2).join(', ')}) — target <= ${r.target} (${r.goal}): **${outcome(r)}**`,
  );
  const overall = problems.length ? 'NOT VALID' : ratios.every((r) => r.pass) ? 'PASS' : 'FAIL';
  const noise = noiseLine(rows, (r) => `${r.round} ${r.label}`);
  const sizeRows = sizes.map(
    (s) => `| ${s.table} | ${int(s.rows)} | ${mib(s.total)} | ${mib(s.heap)} | ${mib(s.indexes)} |`,
  );
  const naiveRows = naive.map(
    (q) =>
      `| ${q.label} | ${q.times.map(f1).join(', ')} | **${f1(Math.min(...q.times))}** | ${q.plan} | ${q.avoided} |`,
  );
  const serviceFor = { count: undefined, offset0: 'shallow', deep: 'deep', summary: 'summary' };
  const naiveVs = naive
    .filter((q) => serviceFor[q.key])
    .map(
      (q) =>
        `${q.key === 'offset0' ? 'offset 0' : q.key === 'deep' ? `offset ${int(DEEP_OFFSET)}` : 'summary'}: naive SQL ${f1(Math.min(...q.times))} ms vs the service's whole request ${f2(serialP50[serviceFor[q.key]])} ms unloaded`,
    );

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
    ...timings.map(
      ([label, ms], i) =>
        `| ${label}${i === 0 ? ` (${int(Math.round(OPTS.responses / (ms / 1000)))} rows/s)` : ''} | **${secs(ms)}** |`,
    ),
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
    ...ratios.map(
      (r) =>
        `| ${r.name} | **${f2(r.p50)}** | ${r.perRound.map(f2).join(', ')} | ${f2(r.meanLat)} | ${f2(r.p99)} | ${f2(r.rps)} | ${f2(r.cpu)} | ${f2(r.serial)} |`,
    ),
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
    `- Load generator: autocannon ${autocannonVersion()} in this process; client, server and PostgreSQL share the machine. Compare the ratios measured in one run, not absolute numbers across runs.`,
    machineLine(
      `${pgVersion} (${Object.entries(pgSettings)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')})`,
      loadBefore,
    ),
    ...notes.map((n) => `- ${n}`),
    ...(problems.length ? ['', '## Problems', '', ...problems.map((p) => `- ${p}`)] : []),
    '',
  ].join('\n');

  log(`written ${writeReport(`responses-at-scale-${ts}.md`, md)}`);
  if (problems.length) {
    log(`BROKEN: ${problems.length} problem(s):\n  ${problems.join('\n  ')}`);
    process.exitCode = 1;
  }
}

runMain(main, teardown);

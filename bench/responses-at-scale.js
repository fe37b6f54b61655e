'use strict';
/**
 * Responses at scale: list_responses, summarize_responses, filters and the CSV export on a form
 * with 10,000,000 responses. See bench/README.md. Run with `npm run bench:responses` (builds first).
 *
 * Targets (issue 26, ratios measured in one run):
 *  - P2 summarize_responses vs one list_responses page of 200: <= 0.5x (p50 at 10 connections);
 *  - P3 the page at offset 9,999,800 vs the page at offset 0: <= 1.5x;
 *  - a filtered list_responses (one choice block, ~10% of the responses match) first page and page
 *    at offset 500,000 of the matches, and a filtered summarize_responses, each vs the same query
 *    hand-written in SQL on the same rows run from the bench: <= 2x;
 *  - export of 1,000,000 responses as CSV: rows/s through the export link vs `COPY (SELECT ...) TO
 *    STDOUT WITH CSV` of the same rows (psql): >= 0.5x; RSS of the instance during the export at
 *    most 50 MB above idle.
 * The filtered and export parts are skipped, with a loud message, while the tools do not offer them.
 *
 * 1. creates a fresh database formwork_bench_<timestamp>, migrates it with the CLI and seeds it
 *    with the CLI's demo (token + forms; the form under test is "Customer feedback", which already
 *    has the demo's responses); starts the built service (dist/src/main.js) and makes the export's
 *    form (a copy of its blocks with a hidden field, create_form + publish_form);
 * 2. bulk-loads BENCH_RESPONSES (10,000,000) responses into the form under test and
 *    BENCH_EXPORT_RESPONSES (1,000,000) into the export's form with `INSERT ... SELECT ... FROM
 *    generate_series` in chunks on BENCH_LOAD_WORKERS connections (valid, varied answers built from
 *    the form's blocks; the first choice of a single-choice block is given in 10% of the rows),
 *    advances the response counters, then builds the maintained aggregates with the service's own
 *    compiled recomputeResponseStats() (one transaction per form), then VACUUM ANALYZE and
 *    CHECKPOINT; each step timed with the WAL it wrote, and the table and index sizes reported;
 * 3. times the naive SQL that the maintained structures avoid (count(*), OFFSET 9999800 LIMIT 200,
 *    a one-scan summary) in psql, which also gives the reference values for the checks;
 * 4. checks the service's answers: the shallow and the deep page hold exactly the rows of the naive
 *    queries (ids, order and answers), the summary equals the naive recount;
 * 5. warms up, then alternates list(offset 0), list(offset 9999800), summarize, BENCH_ROUNDS rounds
 *    of BENCH_DURATION s at BENCH_CONNECTIONS connections (autocannon's programmatic API), then
 *    measures each once more unloaded (1 connection, sequential requests, interleaved);
 * 6. filters (when list_responses and summarize_responses take `where`): checks the filtered pages
 *    and summary against hand-written SQL, then times each against that SQL, alternating;
 * 7. export (when export_responses exists): the whole export form as CSV through the link, against
 *    psql's COPY of the same rows and columns, alternating, sampling the instance's VmRSS;
 * 8. writes: BENCH_WRITE_SECONDS of create_response on the big form (throughput, CPU, WAL per
 *    response, the sequencer's backlog), for docs/scaling.md;
 * 9. prints a Markdown report with PASS/FAIL for every ratio and writes it to
 *    bench/results/responses-at-scale-<timestamp>.md; stops the server and drops the database, also
 *    after a failure or Ctrl-C.
 *
 * Exit code: 0 whether the ratios pass or not; 1 when something broke (setup, a server died, a
 * wrong answer, a response that is not 200, errors or timeouts).
 */
const { isDeepStrictEqual } = require('node:util');
const os = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { spawn } = require('node:child_process');
const { readFileSync } = require('node:fs');
const { Client } = require('pg');
const lib = require('./lib');
const {
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
  Teardown,
  runMain,
  loadTarget,
  percentile,
  median: midpoint,
  figures,
  sampleAnswers,
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
  loadText,
  writeReport,
  runJson,
  csvRows,
} = lib;
/** BENCH_DIST: a build elsewhere (`tsc -p tsconfig.build.json --outDir <dir>`), instead of dist/. */
const DIST = process.env.BENCH_DIST ? join(require('node:path').resolve(process.env.BENCH_DIST), 'src') : lib.DIST;
const CLI = join(DIST, 'cli', 'main.js');
const MAIN = join(DIST, 'main.js');

const OPTS = {
  ...loadOptions({ connections: 10, rounds: 3 }),
  responses: envNumber('BENCH_RESPONSES', 10_000_000, { integer: true, min: 1000 }),
  exportResponses: envNumber('BENCH_EXPORT_RESPONSES', 1_000_000, { integer: true, min: 0 }),
  loadWorkers: envNumber('BENCH_LOAD_WORKERS', 2, { integer: true, min: 1 }),
  serial: envNumber('BENCH_SERIAL', 100, { integer: true, min: 1 }),
  naiveRuns: envNumber('BENCH_NAIVE_RUNS', 3, { integer: true, min: 1 }),
  filterRuns: envNumber('BENCH_FILTER_RUNS', 3, { integer: true, min: 1 }),
  exportRuns: envNumber('BENCH_EXPORT_RUNS', 2, { integer: true, min: 1 }),
  writeSeconds: envNumber('BENCH_WRITE_SECONDS', 10, { min: 0 }),
  filterTimeoutMs: envNumber('BENCH_FILTER_TIMEOUT_MS', 600_000, { integer: true, min: 1000 }),
  targetSummary: envNumber('BENCH_TARGET_SUMMARY', 0.5),
  targetDeep: envNumber('BENCH_TARGET_DEEP', 1.5),
  targetFiltered: envNumber('BENCH_TARGET_FILTERED', 2),
  targetExport: envNumber('BENCH_TARGET_EXPORT', 0.5),
  exportRssMb: envNumber('BENCH_EXPORT_RSS_MB', 50),
  keepDb: envFlag('BENCH_KEEP_DB'),
  /** A database a run made with BENCH_KEEP_DB=1: migrated, then measured again without loading anything. */
  reuseDb: process.env.BENCH_REUSE_DB || '',
  /** Calls of each filtered read (their p50 is the figure); the hand-written SQL runs BENCH_FILTER_RUNS times. */
  filterCalls: envNumber('BENCH_FILTER_CALLS', 20, { integer: true, min: 1 }),
};
const PAGE = 200;
/** The deep page: the last full page of the bulk load (9,999,800 for 10,000,000). */
const DEEP_OFFSET = OPTS.responses - PAGE;
/** The deep page of the filtered walk (fewer when fewer responses match). */
const FILTER_DEEP_OFFSET = 500_000;
/** Rows loaded per INSERT statement (a chunk), so that the load shows progress and uses every worker. */
const LOAD_CHUNK = 500_000;
const FORM_TITLE = 'Customer feedback';

const { lit, jsonbObject, answersSql, exportSelectSql, TEXT_TYPES } = require('./answers-sql');

const teardown = new Teardown();

// --- the bulk load: answers made by SQL (bench/answers-sql.js) --------------------------------

// --- the naive SQL baseline (psql) ---------------------------------------------------------------

/**
 * The one-scan recount of what summarize_responses reports, as one jsonb object (also the reference
 * for the checks). With `where` (SQL over a row of responses), of the matching responses only, and
 * with the latest 5 texts of every text block among them (`latest:<block id>`, [[value, ISO time]]).
 */
function naiveSummarySql(formId, blocks, where) {
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
  const rows = `responses WHERE form_id = ${lit(formId)}${where ? ` AND seq IS NOT NULL AND ${where}` : ''}`;
  if (where)
    for (const b of blocks.filter((x) => TEXT_TYPES.includes(x.type)))
      pairs.push([
        `latest:${b.id}`,
        `(SELECT COALESCE(jsonb_agg(jsonb_build_array(l.v, l.t) ORDER BY l.seq DESC), '[]') FROM (
           SELECT answers ->> ${lit(b.id)} AS v, to_char(submitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t, seq
             FROM ${rows} AND answers ? ${lit(b.id)} ORDER BY seq DESC LIMIT 5) l)`,
      ]);
  return `SELECT ${jsonbObject(pairs)} FROM ${rows}`;
}

/**
 * The filtered page as one hand-written statement: the number of matches and the page of them at
 * `offset` in seq order (one row per response, the total on each; one row of NULLs past the end).
 */
function filteredPageSql(formId, where, offset) {
  const rows = `responses WHERE form_id = ${lit(formId)} AND seq IS NOT NULL AND ${where}`;
  return `WITH m AS (SELECT count(*)::int AS total FROM ${rows})
    SELECT m.total, p.id, p.seq::bigint AS seq, p.submitted_at, p.answers, p.hidden
      FROM m LEFT JOIN LATERAL (SELECT id, seq, submitted_at, answers, hidden FROM ${rows} ORDER BY seq OFFSET ${Number(offset)} LIMIT ${PAGE}) p ON true`;
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
// midpoint: the mean of the two middle values of an even count (median() takes the lower), for the few runs of the filtered reads and the export.
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

/** The report's section on the filtered reads (none when they were not measured). */
function filteredSection(filtered, { expectedTotal }) {
  if (!filtered.length) return [];
  return [
    '## Filtered reads against hand-written SQL (1 connection)',
    '',
    `Of ${int(expectedTotal)} responses. Each read: a first run of the tool and of each hand-written form of the condition (cache warm-up, the answer checked; the faster form is kept), then ${OPTS.filterCalls} calls of the tool (the whole HTTP request over loopback, client-side) with ${OPTS.filterRuns} runs of the SQL between the first ones (the pg client in this process, rows fetched; the page's SQL also counts the matches, as the tool's \`total\` does). p50: median of the calls; ratio: p50 over the SQL's median. Load: the 1-minute load average, median over the calls.`,
    '',
    '| Read | Matches | As deployed (5 s statement timeout) | Tool p50 (ms) | Tool min-max (ms) | SQL runs (ms) | Ratio | Load | First runs of the SQL forms | Plan of the kept SQL | Tool body (bytes) |',
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |',
    ...filtered.map(
      (c) =>
        `| ${c.label} | ${int(c.matches)} | ${c.deployed ? `**${c.deployed}**` : 'answered'} | **${f0(c.p50)}** | ${f0(Math.min(...c.toolMs))}-${f0(Math.max(...c.toolMs))} | ${c.sqlMs.map(f0).join(', ')} | **${f2(c.ratio)}** | ${f1(c.load)} | ${c.tried} | ${c.plan} | ${c.bytes} |`,
    ),
    '',
    ...(filtered.some((c) => c.deployed)
      ? [
          `A read that the deployed statement timeout cut off (503) was timed, with its first run and check, on a second instance started with \`DATABASE_STATEMENT_TIMEOUT_MS=${OPTS.filterTimeoutMs}\`, otherwise the same.`,
          '',
        ]
      : []),
  ];
}

/** The report's section on the export (none when it was not measured). */
function exportSection(exportRuns, copyRuns, info) {
  if (!exportRuns.length) return [];
  const rps = (r) => int(Math.round(r.rows / (r.ms / 1000)));
  return [
    '## Export: CSV through the link against COPY',
    '',
    `Runs alternate: \`export_responses {publicId, format: "csv"}\` (its own time apart), then \`GET\` of the link read to its end by this process (fetch), then psql \`COPY (SELECT …) TO STDOUT WITH (FORMAT csv)\` of the same responses in seq order with the export's columns written by hand in SQL (id, submittedAt in RFC 3339 UTC, choices by label, checkboxes joined by "; ", texts and hidden values starting with = + - @ tab or CR prefixed with '), read to its end from psql's standard output. VmRSS of the instance (\`/proc/<pid>/status\`) sampled every 50 ms during the download; idle is the median of 10 samples over the second before it.`,
    '',
    '| Run | Rows | Bytes | Time | Rows/s | First byte | Link made in | VmRSS idle | VmRSS peak | Above idle |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...exportRuns.flatMap((e, i) => [
      `| export ${i + 1} | ${int(e.rows)} | ${mib(e.bytes)} | ${secs(e.ms)} | **${rps(e)}** | ${f0(e.ttfb)} ms | ${f0(e.linkMs)} ms | ${mib(e.idle)} | ${mib(e.peak)} | **${mib(e.peak - e.idle)}** |`,
      ...(copyRuns[i]
        ? [
            `| COPY ${i + 1} | ${int(copyRuns[i].rows)} | ${mib(copyRuns[i].bytes)} | ${secs(copyRuns[i].ms)} | **${rps(copyRuns[i])}** | ${f0(copyRuns[i].ttfb)} ms | | | | |`,
          ]
        : []),
    ]),
    '',
    `Export: \`Content-Type: ${info.type}\`, \`Content-Disposition: ${info.disposition}\`, ${info.bom ? 'a byte order mark' : 'no byte order mark'}, header ${JSON.stringify(info.header)}.${info.badCells ? ` ${info.badCells} of the first ${info.compared} rows differ from the hand-written columns in some cell (so COPY did not do exactly the same work), e.g. ${info.example}.` : ` The first ${info.compared} rows equal COPY's cell for cell.`}`,
    '',
  ];
}

/** The report's section on the writes (none when they were not measured). */
function writesSection(w) {
  if (!w) return [];
  return [
    '## Writes on the big form',
    '',
    `\`create_response\` on the form under test (every block answered), ${OPTS.writeSeconds} s at ${OPTS.connections} connections, after everything else; the sequencer runs in the background as deployed.`,
    '',
    '| req/s | p50 (ms) | p99 (ms) | server CPU ms/req | postgres CPU ms/req | server CPU (% of a core) | WAL per response | most responses waiting for their seq | backlog sequenced within | other processes (% of a core) |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    `| ${f0(w.rps)} | ${f2(w.p50)} | ${f2(w.p99)} | ${f3(w.cpuPerReq)} | ${f3(w.pgPerReq)} | ${f0(w.cpuPct)} | ${int(Math.round(w.wal / w.total))} bytes | ${int(w.maxWaiting)} | ${f0(w.drainMs)} ms | ${f0(w.otherPct)} |`,
    '',
  ];
}

// --- what the filtered reads select: a hidden field and a rare choice -------------------------------

/** The hidden field of the form under test: "spring" in 10% of the rows, "pilot" in 0.1%, 48 others share the rest. */
const CAMPAIGN = 'campaign';
const CAMPAIGN_COMMON = 'spring';
const CAMPAIGN_RARE = 'pilot';
function campaignSql() {
  const h = `((hashint8(g::bigint * 64 + 62) & 2147483647) % 1000)`;
  return `jsonb_build_object(${lit(CAMPAIGN)}, CASE WHEN ${h} < 100 THEN ${lit(CAMPAIGN_COMMON)} WHEN ${h} = 100 THEN ${lit(CAMPAIGN_RARE)} ELSE 'c' || (${h} % 48) END)`;
}

/** The required single-choice block: its first choice is in 10% of the rows (answers-sql.js), its last made rare here. */
function choiceBlockOf(blocks) {
  return blocks.find(
    (b) =>
      ['multiple_choice', 'dropdown'].includes(b.type) &&
      b.required &&
      ((b.settings && b.settings.choices) || []).length >= 3,
  );
}

/**
 * The answers of the form under test: answers-sql.js's, with the last choice of the single-choice
 * block kept in 1 of 300 of the rows that had it (about 0.1% of all), the others given the second.
 */
function rareChoiceAnswers(blocks) {
  const b = choiceBlockOf(blocks);
  if (!b) return answersSql(blocks);
  const ids = b.settings.choices.map((c) => c.id);
  const keep = `(hashint8(g::bigint * 64 + 61) & 2147483647) % 300 = 0`;
  return `(SELECT CASE WHEN a ->> ${lit(b.id)} = ${lit(ids[ids.length - 1])} AND NOT ${keep}
                       THEN jsonb_set(a, ARRAY[${lit(b.id)}], to_jsonb(${lit(ids[1])}::text)) ELSE a END
             FROM (SELECT ${answersSql(blocks)} AS a) x)`;
}

// --- the database: made, or reused ---------------------------------------------------------------

/** What a reused run needs of the first: the demo's token and forms, the export's form (JSON, in the bench's database). */
const REUSE_TABLE = 'bench_reuse';

/** The CLI's migrate and demo, with this bench's build (BENCH_DIST). */
async function migrateAndSeed(cliEnv) {
  const migrated = await runJson('migrate (CLI)', [CLI, 'migrate', '--json'], cliEnv);
  log(`migrated: ${(migrated.migrations || []).join(', ') || 'nothing to run'}`);
  const demo = await runJson('demo (CLI)', [CLI, 'demo', '--json'], cliEnv);
  if (typeof demo.token !== 'string' || !Array.isArray(demo.forms) || demo.forms.length === 0)
    throw new Error(`the demo output has no token or forms: ${JSON.stringify(demo).slice(0, 500)}`);
  return { demo };
}

/** Migrates a kept database (timed: a new index is built on the loaded table) and reads what the first run saved. */
async function migrateReused(cliEnv, dbUrl) {
  const t0 = performance.now();
  const migrated = await runJson('migrate (CLI)', [CLI, 'migrate', '--json'], cliEnv);
  log(`migrated in ${secs(performance.now() - t0)}: ${(migrated.migrations || []).join(', ') || 'nothing to run'}`);
  const c = new Client({ connectionString: dbUrl });
  await c.connect();
  try {
    const [row] = (await c.query(`SELECT value FROM ${REUSE_TABLE} WHERE key = 'run'`)).rows;
    return { demo: row.value.demo, saved: row.value };
  } finally {
    await c.end();
  }
}

/** The server's version and settings, for a reused database. */
async function showSettings(dbUrl, names) {
  const c = new Client({ connectionString: dbUrl });
  await c.connect();
  try {
    const settings = {};
    for (const n of names) settings[n] = (await c.query(`SHOW ${n}`)).rows[0][n];
    return { version: (await c.query('SHOW server_version')).rows[0].server_version, settings };
  } finally {
    await c.end();
  }
}

// --- main ---------------------------------------------------------------------------------------

async function main() {
  const run0 = startRun('formwork_bench', OPTS);
  const { started, ts } = run0;
  // BENCH_REUSE_DB: the kept database of an earlier run (never dropped: created stays false).
  const reuse = Boolean(OPTS.reuseDb);
  const database = reuse ? new lib.BenchDatabase(OPTS.adminUrl, OPTS.reuseDb, { keep: true }) : run0.database;
  const { name: dbName, url: dbUrl } = database;
  const notes = [];
  const problems = [];
  const checks = [];
  const loadBefore = os.loadavg();
  // The machine's load average over the run (1 min), sampled every 5 s.
  const loadSamples = [];
  const loadTimer = setInterval(() => loadSamples.push(os.loadavg()[0]), 5000);
  loadTimer.unref();
  /** Connections to close before the database can be dropped cleanly (DROP ... WITH (FORCE) would end them anyway). */
  const closers = teardown.closers;
  teardown.onSignals('stopping the server and dropping the database');

  requireBuilt(
    [CLI, MAIN, join(DIST, 'summaries', 'response-stats.repository.js'), join(DIST, 'database', 'data-source.js')],
    'bench:responses',
  );

  // --- database: create, migrate, seed -------------------------------------------------------
  teardown.database = database;
  const pgShown = ['shared_buffers', 'work_mem', 'max_wal_size', 'synchronous_commit'];
  const { version: pgVersion, settings: pgSettings } = reuse
    ? await showSettings(dbUrl, pgShown)
    : await database.create(pgShown);

  const baseEnv = cleanEnv();
  const cliEnv = {
    ...baseEnv,
    DATABASE_URL: dbUrl,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    BOOTSTRAP_DEMO: 'false',
  };
  // A reused database is migrated (a new migration runs on the loaded data) and keeps its demo.
  const { demo, cliDemoError, saved } = reuse ? await migrateReused(cliEnv, dbUrl) : await migrateAndSeed(cliEnv);
  if (reuse)
    notes.push(`Reused the database \`${dbName}\` (BENCH_REUSE_DB) as an earlier run left it: nothing loaded.`);
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
  const demoCount = reuse ? saved.demoCount : form.total;
  // A reused form also holds the responses the write part of earlier runs added.
  const expectedTotal = reuse ? form.total : demoCount + OPTS.responses;
  log(
    `form under test: ${publicId} "${form.title}" (${blocks.length} blocks: ${blocks.map((b) => b.type).join(', ')}; ${demoCount} demo responses, last seq ${form.last_seq})`,
  );

  // --- the server (idle during the load) and the export's form -----------------------------------
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const server = new Server(
    'formwork',
    [MAIN],
    serviceEnv(baseEnv, port, dbUrl, { ...COUNTING_LIMITS, PUBLIC_URL: origin }),
  );
  teardown.servers.push(server);
  const base = `${origin}/api/v1/tools`;
  const headers = { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' };
  const call = async (tool, args) => {
    const r = await post(`${base}/${tool}`, headers, JSON.stringify(args), 300_000);
    if (r.status !== 200) throw new Error(`${tool} answered ${r.status}: ${r.text.slice(0, 500)}`);
    return JSON.parse(r.text);
  };
  await server.waitUntil(
    async () => (await post(`${base}/get_form`, headers, JSON.stringify({ publicId }), 5_000)).status === 200,
    60_000,
  );
  log(`formwork answers on ${base}`);
  // What the tools offer today: the filters and the export are built alongside this benchmark.
  const described = await (await fetch(`${origin}/api/v1/tools`)).json();
  const toolNamed = (name) => (described.tools || []).find((t) => t.name === name);
  const takesWhere = (name) => Boolean(toolNamed(name)?.inputSchema?.properties?.where);
  const hasFilters = takesWhere('list_responses') && takesWhere('summarize_responses');
  const hasExport = Boolean(toolNamed('export_responses'));
  const skipped = [];
  if (!hasFilters)
    skipped.push(
      `**SKIPPED: the filtered reads.** This build's list_responses ${takesWhere('list_responses') ? 'takes' : 'does not take'} \`where\` and summarize_responses ${takesWhere('summarize_responses') ? 'takes' : 'does not take'} it (GET /api/v1/tools): no figure for the filtered targets.`,
    );
  if (!hasExport)
    skipped.push(
      '**SKIPPED: the export.** This build has no `export_responses` tool (GET /api/v1/tools): no figure for the export targets.',
    );
  for (const s of skipped) log(`\n\n${'!'.repeat(100)}\n${s.replace(/\*\*/g, '')}\n${'!'.repeat(100)}\n`);

  let exportForm = reuse ? saved.exportForm : undefined;
  if (!reuse) {
    // The hidden field the filtered reads select on (campaign: 10% "spring", 0.1% "pilot").
    await call('update_form', { publicId, hiddenFields: [CAMPAIGN] });
  }
  if (OPTS.exportResponses > 0 && !reuse) {
    const shown = await call('get_form', { publicId });
    const blockInput = shown.blocks.map(({ id: _id, choices, ...b }) => ({
      ...b,
      ...(choices ? { choices: choices.map((c) => c.label) } : {}),
    }));
    const made = await call('create_form', { title: 'Export bench', hiddenFields: ['source'], blocks: blockInput });
    await call('publish_form', { publicId: made.publicId });
    const [row] = (await db.query('SELECT id FROM forms WHERE public_id = $1', [made.publicId])).rows;
    exportForm = {
      id: row.id,
      publicId: made.publicId,
      hiddenFields: ['source'],
      blocks: (
        await db.query(`SELECT id, type, required, settings FROM blocks WHERE form_id = $1 ORDER BY position`, [row.id])
      ).rows,
    };
  }

  // --- bulk load -------------------------------------------------------------------------------
  const timings = [];
  const walLsn = async () => (await db.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn;
  const walSince = async (lsn) =>
    Number((await db.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint AS n', [lsn])).rows[0].n);
  /** Runs a step, timing it and measuring the WAL it wrote; `rows` for a rows/s figure. */
  const timed = async (label, fn, rows) => {
    const lsn = await walLsn();
    const t0 = performance.now();
    const r = await fn();
    const ms = performance.now() - t0;
    const wal = await walSince(lsn);
    timings.push({ label, ms, wal, rows });
    log(`${label}: ${secs(ms)}, ${mib(wal)} of WAL`);
    return r;
  };
  let stepUs = reuse ? saved.stepUs : undefined;
  if (!reuse) {
    // submitted_at: after the form's last one, evenly spaced up to (at most) now, never decreasing in seq.
    const now = (await db.query('SELECT clock_timestamp() AS now')).rows[0].now;
    /** Loads `count` responses into form `f` in chunks on OPTS.loadWorkers connections, then advances its counter; returns the spacing (µs). */
    const bulkLoad = async (f, fBlocks, count, hiddenSql, answersExpr = answersSql(fBlocks)) => {
      const [c] = (
        await db.query(
          'SELECT last_seq::bigint AS last_seq, last_submitted_at FROM response_counters WHERE form_id = $1',
          [f.id],
        )
      ).rows;
      const from = c.last_submitted_at || new Date(now.getTime() - 3600_000);
      const step = Math.max(1, Math.floor(((now.getTime() - from.getTime()) * 1000) / (count + 1)));
      const sql = `INSERT INTO responses (form_id, seq, submitted_at, answers, hidden, source)
      SELECT $1::uuid, $2::bigint + g, $3::timestamptz + g * make_interval(secs => $4::float8 / 1e6), ${answersExpr}, ${hiddenSql}, 'import'
        FROM generate_series($5::int, $6::int) g`;
      const chunks = [];
      for (let lo = 1; lo <= count; lo += LOAD_CHUNK) chunks.push([lo, Math.min(count, lo + LOAD_CHUNK - 1)]);
      let done = 0;
      const worker = async () => {
        const w = new Client({ connectionString: dbUrl });
        await w.connect();
        const close = () => w.end();
        closers.add(close);
        try {
          for (let chunk = chunks.shift(); chunk; chunk = chunks.shift()) {
            const r = await w.query(sql, [f.id, c.last_seq, from, step, chunk[0], chunk[1]]);
            if (r.rowCount !== chunk[1] - chunk[0] + 1)
              throw new Error(`a bulk INSERT inserted ${r.rowCount} rows, expected ${chunk[1] - chunk[0] + 1}`);
            done += r.rowCount;
            log(`  ${int(done)} / ${int(count)} loaded`);
          }
        } finally {
          closers.delete(close);
          await w.end();
        }
      };
      await Promise.all(Array.from({ length: Math.min(OPTS.loadWorkers, chunks.length) }, worker));
      await db.query(
        `UPDATE response_counters SET last_seq = last_seq + $2::bigint,
              last_submitted_at = (SELECT submitted_at FROM responses WHERE form_id = $1 AND seq = last_seq + $2::bigint)
        WHERE form_id = $1`,
        [f.id, count],
      );
      return step;
    };
    log(
      `loading ${int(OPTS.responses)} responses (INSERT ... SELECT FROM generate_series, chunks of ${int(LOAD_CHUNK)} on ${OPTS.loadWorkers} connections)`,
    );
    const loadHow = `\`INSERT ... SELECT ... FROM generate_series\`, chunks of ${int(LOAD_CHUNK)} rows on ${OPTS.loadWorkers} connections`;
    stepUs = await timed(
      `Bulk load: ${int(OPTS.responses)} responses into the form under test, ${loadHow}, then its counter`,
      () => bulkLoad(form, blocks, OPTS.responses, campaignSql(), rareChoiceAnswers(blocks)),
      OPTS.responses,
    );
    if (exportForm)
      await timed(
        `Bulk load: ${int(OPTS.exportResponses)} responses into the export's form (answers and a hidden field), the same way`,
        () =>
          bulkLoad(
            exportForm,
            exportForm.blocks,
            OPTS.exportResponses,
            // Values a CSV must quote (a comma) or guard (a formula), in a quarter of the rows each.
            `jsonb_build_object('source', (ARRAY['newsletter', 'search', '=HYPERLINK("x")', 'partner, Inc.'])[1 + (hashint8(g::bigint * 64 + 63) & 2147483647) % 4])`,
          ),
        OPTS.exportResponses,
      );

    // Build the aggregates with the service's own code, as after any bulk import.
    require('reflect-metadata');
    const { dataSourceOptions } = require(join(DIST, 'database', 'data-source.js'));
    const { ResponseStatsRepository } = require(join(DIST, 'summaries', 'response-stats.repository.js'));
    const { DataSource } = require('typeorm');
    // The service bounds each statement of a recount by LONG_STATEMENT_MS (10 min); at 10M on a busy
    // machine one statement may take longer: this is the benchmark's setup, not a measured path.
    const longStatements = require(join(DIST, 'database', 'long-statements.js'));
    if (longStatements.LONG_STATEMENT_MS < 3_600_000) longStatements.LONG_STATEMENT_MS = 3_600_000;
    const dataSource = new DataSource(dataSourceOptions(dbUrl, 2, false));
    await dataSource.initialize();
    const closeDs = () => dataSource.destroy();
    closers.add(closeDs);
    try {
      for (const [f, n, what] of [
        [form, expectedTotal, 'the form under test'],
        ...(exportForm ? [[exportForm, OPTS.exportResponses, "the export's form"]] : []),
      ])
        await timed(
          `Aggregates of ${what} (${int(n)} responses): \`recomputeResponseStats()\` (dist/src/summaries/response-stats.repository.js), one transaction`,
          () => dataSource.transaction((tx) => new ResponseStatsRepository().recomputeResponseStats(tx, f.id)),
          n,
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

    await db.query(`CREATE TABLE ${REUSE_TABLE} (key text PRIMARY KEY, value jsonb NOT NULL)`);
    await db.query(`INSERT INTO ${REUSE_TABLE} VALUES ('run', $1)`, [
      JSON.stringify({ demo, demoCount, stepUs, exportForm, responses: OPTS.responses }),
    ]);
  }
  const counter = (
    await db.query(
      'SELECT total::bigint AS total, last_seq::bigint AS last_seq, last_submitted_at FROM response_counters WHERE form_id = $1',
      [form.id],
    )
  ).rows[0];
  if (
    Number(counter.total) !== expectedTotal ||
    (!reuse && Number(counter.last_seq) !== Number(form.last_seq) + OPTS.responses)
  ) {
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
  const toast = (
    await db.query(
      `SELECT COALESCE(pg_total_relation_size(reltoastrelid), 0) AS toast FROM pg_class WHERE oid = 'responses'::regclass`,
    )
  ).rows[0].toast;
  const indexSizes = (
    await db.query(
      `SELECT c.relname AS name, pg_relation_size(c.oid) AS bytes, pg_get_indexdef(c.oid) AS def
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'responses'::regclass ORDER BY pg_relation_size(c.oid) DESC`,
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

  // --- the targets ---------------------------------------------------------------------------
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

  // --- filters: the tools against the same reads hand-written in SQL --------------------------------
  const filtered = [];
  const choiceBlock = choiceBlockOf(blocks);
  if (hasFilters && !choiceBlock)
    skipped.push('**SKIPPED: the filtered reads.** The form has no required single-choice block of 3 choices or more.');
  /** The filters measured: one choice and one hidden value, each common (about 10%) and rare (about 0.1%). */
  const filters = [];
  if (hasFilters && choiceBlock) {
    const choices = choiceBlock.settings.choices;
    const choiceFilter = (c, share) => ({
      name: `choice "${c.label}" (${share})`,
      where: { block: choiceBlock.id, op: 'equals', value: c.id },
      // The hand-written condition, also as containment (which an index on answers may serve): the faster is kept.
      variants: [
        { name: `answers ->> '…' = '…'`, sql: `answers ->> ${lit(choiceBlock.id)} = ${lit(c.id)}` },
        {
          name: `answers @> '{"…": "…"}'`,
          sql: `answers @> ${lit(JSON.stringify({ [choiceBlock.id]: c.id }))}::jsonb`,
        },
      ],
    });
    const hiddenFilter = (value, share) => ({
      name: `hidden ${CAMPAIGN} = "${value}" (${share})`,
      where: { hidden: CAMPAIGN, op: 'equals', value },
      variants: [
        { name: `hidden ->> '…' = '…'`, sql: `hidden ->> ${lit(CAMPAIGN)} = ${lit(value)}` },
        { name: `hidden @> '{"…": "…"}'`, sql: `hidden @> ${lit(JSON.stringify({ [CAMPAIGN]: value }))}::jsonb` },
      ],
    });
    filters.push(
      choiceFilter(choices[0], '10%'),
      choiceFilter(choices[choices.length - 1], '0.1%'),
      hiddenFilter(CAMPAIGN_COMMON, '10%'),
      hiddenFilter(CAMPAIGN_RARE, '0.1%'),
    );
  }
  const cases = filters.flatMap((f, i) => [
    ...[0, ...(i === 0 ? [Math.min(FILTER_DEEP_OFFSET, Math.floor(OPTS.responses / 20))] : [])].map((offset) => ({
      filter: f,
      label: `list_responses offset ${int(offset)}, ${f.name}`,
      tool: 'list_responses',
      args: { publicId, limit: PAGE, offset, where: f.where },
      sql: (w) => filteredPageSql(form.id, w, offset),
      offset,
    })),
    {
      filter: f,
      label: `summarize_responses, ${f.name}`,
      tool: 'summarize_responses',
      args: { publicId, where: f.where },
      sql: (w) => naiveSummarySql(form.id, blocks, w),
    },
  ]);
  if (cases.length) {
    const sqlClient = new Client({ connectionString: dbUrl });
    await sqlClient.connect();
    const closeSql = () => sqlClient.end();
    closers.add(closeSql);
    const timeSql = async (text) => {
      const t0 = performance.now();
      const r = await sqlClient.query(text);
      return { ms: performance.now() - t0, rows: r.rows };
    };
    /**
     * A read that the deployed statement timeout (DATABASE_STATEMENT_TIMEOUT_MS, 5 s) cuts off is
     * 503; it is then timed on a second instance whose timeout is BENCH_FILTER_TIMEOUT_MS, so that
     * the ratio is still measured (and the 503 reported).
     */
    let longServer;
    const longBase = async () => {
      if (!longServer) {
        const p = await freePort();
        longServer = new Server(
          'formwork (long statement timeout)',
          [MAIN],
          serviceEnv(baseEnv, p, dbUrl, {
            ...COUNTING_LIMITS,
            PUBLIC_URL: `http://127.0.0.1:${p}`,
            DATABASE_STATEMENT_TIMEOUT_MS: String(OPTS.filterTimeoutMs),
          }),
        );
        teardown.servers.push(longServer);
        longServer.base = `http://127.0.0.1:${p}/api/v1/tools`;
        await longServer.waitUntil(
          async () =>
            (await post(`${longServer.base}/get_form`, headers, JSON.stringify({ publicId }), 5_000)).status === 200,
          60_000,
        );
        log(
          `a second instance with DATABASE_STATEMENT_TIMEOUT_MS=${OPTS.filterTimeoutMs} answers on ${longServer.base}`,
        );
      }
      return longServer.base;
    };
    const timeTool = async (c) => {
      const at = c.long ? await longBase() : base;
      const t0 = performance.now();
      const r = await post(`${at}/${c.tool}`, headers, JSON.stringify(c.args), OPTS.filterTimeoutMs + 60_000);
      const ms = performance.now() - t0;
      if (r.status === 503 && !c.long) {
        c.deployed = `503 after ${f0(ms)} ms: ${JSON.parse(r.text).error?.message}`;
        log(`  as deployed: ${c.deployed}; timing it on an instance with a longer statement timeout`);
        c.long = true;
        return timeTool(c);
      }
      if (r.status !== 200) throw new Error(`${c.label} answered ${r.status}: ${r.text.slice(0, 500)}`);
      return { ms, json: JSON.parse(r.text), bytes: Buffer.byteLength(r.text) };
    };
    try {
      for (const c of cases) {
        try {
          log(
            `filtered: ${c.label} (a first run of each, then ${OPTS.filterCalls} calls, ${OPTS.filterRuns} SQL runs between)`,
          );
          // First runs: warm the cache, pick the faster hand-written variant, check the answer.
          const first = await timeTool(c);
          const tried = [];
          for (const v of c.filter.variants) tried.push({ ...v, ...(await timeSql(c.sql(v.sql))) });
          tried.sort((a, b) => a.ms - b.ms);
          c.variant = tried[0];
          c.tried = tried.map((t) => `${t.name} ${f0(t.ms)} ms`).join(', ');
          c.plan = await planOf(db, c.sql(c.variant.sql));
          c.bytes = first.bytes;
          let wrong;
          if (c.tool === 'list_responses') {
            const rows = c.variant.rows;
            const expected = rows.filter((r) => r.id !== null);
            wrong = checkPage(c.label, first.json, expected, Number(rows[0].total), c.offset, blocks);
          } else {
            const ref = Object.values(c.variant.rows[0])[0];
            const latestRef = new Map(
              blocks.filter((b) => TEXT_TYPES.includes(b.type)).map((b) => [b.id, ref[`latest:${b.id}`]]),
            );
            wrong = checkSummary(first.json, ref, latestRef, blocks, publicId).map((w) => `filtered ${w}`);
          }
          if (wrong.length) {
            for (const w of wrong) problems.push(`wrong answer: ${w}`);
            log(`WRONG ANSWERS:\n  ${wrong.join('\n  ')}`);
          } else
            checks.push(
              c.tool === 'list_responses'
                ? `\`${c.label}\` (where ${JSON.stringify(c.filter.where)}): total ${int(first.json.total)} (the matches), exactly the rows of the hand-written \`… AND ${c.variant.sql} ORDER BY seq OFFSET ${c.offset} LIMIT ${PAGE}\`.`
                : `\`${c.label}\`: total ${int(first.json.total)}; every count, min/max/mean, first/last submittedAt and the latest texts equal the one-scan recount of the matching responses.`,
            );
          c.toolMs = [];
          c.sqlMs = [];
          c.matches = first.json.total;
          const load = [];
          for (let i = 0; i < Math.max(OPTS.filterCalls, OPTS.filterRuns); i++) {
            load.push(os.loadavg()[0]);
            if (i < OPTS.filterCalls) c.toolMs.push((await timeTool(c)).ms);
            if (i < OPTS.filterRuns) c.sqlMs.push((await timeSql(c.sql(c.variant.sql))).ms);
          }
          c.load = midpoint(load);
          c.p50 = midpoint(c.toolMs);
          c.ratio = c.p50 / midpoint(c.sqlMs);
          log(
            `  tool p50 ${f0(c.p50)} ms of ${c.toolMs.length} (${f0(Math.min(...c.toolMs))}-${f0(Math.max(...c.toolMs))}); SQL ${c.sqlMs.map(f0).join(', ')} ms; ratio ${f2(c.ratio)}; load ${f1(c.load)}`,
          );
          filtered.push(c);
        } catch (err) {
          problems.push(`filtered: ${err.message}`);
          log(`filtered: FAILED ${err.message}`);
        }
      }
    } finally {
      closers.delete(closeSql);
      await sqlClient.end();
      if (longServer) {
        await longServer.stop();
        teardown.servers.splice(teardown.servers.indexOf(longServer), 1);
      }
    }
  }

  // --- export: the link's CSV against COPY of the same rows -----------------------------------------
  const exportRuns = [];
  const copyRuns = [];
  const exportInfo = {};
  if (hasExport && exportForm) {
    const vmRss = () => {
      try {
        const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.proc.pid}/status`, 'utf8'));
        return m ? Number(m[1]) * 1024 : NaN;
      } catch {
        return NaN;
      }
    };
    const KEEP = 512 * 1024;
    /** Reads a stream of bytes to its end: bytes, newlines, time to the first byte, and its first KEEP bytes. */
    const drain = async (stream, t0) => {
      let bytes = 0;
      let lines = 0;
      let ttfb;
      let last = 0;
      const head = [];
      let kept = 0;
      for await (const chunk of stream) {
        const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        if (ttfb === undefined) ttfb = performance.now() - t0;
        bytes += buf.length;
        for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) lines++;
        if (buf.length) last = buf[buf.length - 1];
        if (kept < KEEP) {
          head.push(buf.subarray(0, KEEP - kept));
          kept += Math.min(buf.length, KEEP - kept);
        }
      }
      return { bytes, lines: lines + (bytes && last !== 10 ? 1 : 0), ttfb, head: Buffer.concat(head).toString('utf8') };
    };
    const exportOnce = async () => {
      const t0 = performance.now();
      const link = await call('export_responses', { publicId: exportForm.publicId, format: 'csv' });
      const linkMs = performance.now() - t0;
      const u = new URL(link.url, origin);
      const idle = [];
      for (let i = 0; i < 10; i++) {
        idle.push(vmRss());
        await new Promise((r) => setTimeout(r, 100));
      }
      let peak = 0;
      const timer = setInterval(() => (peak = Math.max(peak, vmRss())), 50);
      const t1 = performance.now();
      try {
        const res = await fetch(`${origin}${u.pathname}${u.search}`);
        if (res.status !== 200)
          throw new Error(`GET of the export link answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
        const d = await drain(res.body, t1);
        const ms = performance.now() - t1;
        peak = Math.max(peak, vmRss());
        return {
          ...d,
          ms,
          linkMs,
          rows: d.lines - 1,
          idle: median(idle),
          peak,
          type: res.headers.get('content-type'),
          disposition: res.headers.get('content-disposition'),
          link,
        };
      } finally {
        clearInterval(timer);
      }
    };
    const copySql = `COPY (${exportSelectSql(exportForm.id, exportForm.blocks, exportForm.hiddenFields)}) TO STDOUT WITH (FORMAT csv)`;
    const copyOnce = async () => {
      const t0 = performance.now();
      const child = spawn('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', dbUrl, '-c', copySql], {
        env: { ...process.env, PGOPTIONS: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c) => (stderr += c));
      const exited = new Promise((resolve, reject) => {
        child.on('error', reject);
        child.on('close', resolve);
      });
      const d = await drain(child.stdout, t0);
      const code = await exited;
      if (code !== 0) throw new Error(`psql COPY failed (exit ${code}): ${stderr.slice(0, 500)}`);
      return { ...d, ms: performance.now() - t0, rows: d.lines };
    };
    try {
      log(
        `export: ${int(OPTS.exportResponses)} responses as CSV, ${OPTS.exportRuns} runs alternating with psql's COPY`,
      );
      for (let i = 0; i < OPTS.exportRuns; i++) {
        const e = await exportOnce();
        exportRuns.push(e);
        log(
          `  export: ${int(e.rows)} rows, ${mib(e.bytes)} in ${secs(e.ms)} (${int(Math.round(e.rows / (e.ms / 1000)))} rows/s, first byte after ${f0(e.ttfb)} ms), VmRSS idle ${mib(e.idle)}, peak ${mib(e.peak)}`,
        );
        const c = await copyOnce();
        copyRuns.push(c);
        log(
          `  COPY: ${int(c.rows)} rows, ${mib(c.bytes)} in ${secs(c.ms)} (${int(Math.round(c.rows / (c.ms / 1000)))} rows/s)`,
        );
      }
      const e = exportRuns[0];
      const c = copyRuns[0];
      if (e.rows !== OPTS.exportResponses)
        problems.push(`export: ${e.rows} data rows (after the header), expected ${OPTS.exportResponses}`);
      if (c.rows !== OPTS.exportResponses) problems.push(`COPY: ${c.rows} rows, expected ${OPTS.exportResponses}`);
      const bom = e.head.startsWith('\ufeff');
      const exp = csvRows(e.head.replace(/^\ufeff/, ''));
      const cop = csvRows(c.head);
      const n = Math.min(1000, exp.length - 1, cop.length);
      let badIds = 0;
      let badCells = 0;
      let example;
      for (let i = 0; i < n; i++) {
        if (exp[i + 1][0] !== cop[i][0]) badIds++;
        else if (!isDeepStrictEqual(exp[i + 1], cop[i])) {
          badCells++;
          example ??= `export ${JSON.stringify(exp[i + 1])} / COPY ${JSON.stringify(cop[i])}`;
        }
      }
      if (badIds)
        problems.push(`export: ${badIds} of its first ${n} rows are not the responses of COPY's rows in seq order`);
      Object.assign(exportInfo, {
        bom,
        header: exp[0],
        compared: n,
        badCells,
        example,
        type: e.type,
        disposition: e.disposition,
      });
      if (!badIds)
        checks.push(
          `Export: ${int(e.rows)} data rows after one header row${bom ? ', a UTF-8 byte order mark' : ' (**no byte order mark**)'}, \`Content-Type: ${e.type}\`; its first ${n} rows are the responses of COPY's first ${n} rows in the same order (ids${badCells ? `; **${badCells} of them differ in some cell** from the hand-written columns, e.g. ${example}` : ', and every cell equal to the hand-written columns'}).`,
        );
    } catch (err) {
      problems.push(`export: ${err.message}`);
      log(`export: FAILED ${err.message}`);
    }
  }

  // --- writes on the big form: what one primary spends per submission ------------------------------
  let writes;
  if (OPTS.writeSeconds > 0) {
    const shown = await call('get_form', { publicId });
    const t = {
      key: 'write',
      label: 'create_response',
      server,
      url: `${base}/create_response`,
      headers,
      body: JSON.stringify({ publicId, answers: sampleAnswers(shown) }),
    };
    const waiting = async () =>
      Number((await db.query('SELECT count(*) AS n FROM responses WHERE seq IS NULL')).rows[0].n);
    log(`writes: create_response on the big form, ${OPTS.writeSeconds} s at ${OPTS.connections} connections`);
    const lsn = await walLsn();
    let maxWaiting = 0;
    let polling = false;
    const poll = setInterval(() => {
      if (polling) return;
      polling = true;
      waiting()
        .then((n) => (maxWaiting = Math.max(maxWaiting, n)))
        .catch(() => undefined)
        .finally(() => (polling = false));
    }, 200);
    let fig;
    try {
      fig = figures(await loadTarget(t, OPTS.writeSeconds, { connections: OPTS.connections, dbName, exact: true }));
    } finally {
      clearInterval(poll);
    }
    const t0 = performance.now();
    while ((await waiting()) > 0 && performance.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 100));
    const drainMs = performance.now() - t0;
    const wal = await walSince(lsn);
    for (const p of fig.problems) problems.push(`writes: ${p}`);
    writes = { ...fig, wal, maxWaiting, drainMs };
    log(
      `  ${f0(fig.rps)} req/s, p50 ${f2(fig.p50)} ms, server ${f3(fig.cpuPerReq)} ms/req, postgres ${f3(fig.pgPerReq)} ms/req, WAL ${f0(wal / fig.total)} bytes/response, most waiting for their seq ${maxWaiting}`,
    );
    server.assertAlive();
  }

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
      goal: 'P2',
    },
    {
      name: `list page offset ${int(DEEP_OFFSET)} / offset 0`,
      num: 'deep',
      den: 'shallow',
      target: OPTS.targetDeep,
      goal: 'P3',
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
  for (const c of filtered) {
    // A read the deployed configuration cuts off does not meet the target, whatever its ratio.
    c.pass = !c.deployed && c.ratio <= OPTS.targetFiltered;
    verdicts.push(
      `- ${c.label} / the same hand-written SQL, median of ${OPTS.filterRuns} unloaded runs: **${f2(c.ratio)}×** (${f0(midpoint(c.toolMs))} ms vs ${f0(midpoint(c.sqlMs))} ms) — target <= ${OPTS.targetFiltered}: **${outcome(c)}**${c.deployed ? `; **as deployed it fails**: ${c.deployed} (the statement timeout, DATABASE_STATEMENT_TIMEOUT_MS, 5 s by default): timed on a second instance with ${OPTS.filterTimeoutMs} ms` : ''}`,
    );
  }
  const rowsPerSec = (r) => r.rows / (r.ms / 1000);
  let exportVerdict;
  if (exportRuns.length && copyRuns.length) {
    const e = midpoint(exportRuns.map(rowsPerSec));
    const c = midpoint(copyRuns.map(rowsPerSec));
    const rss = Math.max(...exportRuns.map((r) => r.peak - r.idle));
    exportVerdict = [
      { ratio: e / c, pass: e / c >= OPTS.targetExport, e, c },
      { rss, pass: rss <= OPTS.exportRssMb * 2 ** 20 },
    ];
    verdicts.push(
      `- export of ${int(OPTS.exportResponses)} responses as CSV / psql's \`COPY (SELECT …) TO STDOUT WITH CSV\` of the same rows, rows per second (median of ${OPTS.exportRuns} runs each): **${f2(e / c)}×** (${int(Math.round(e))} vs ${int(Math.round(c))} rows/s) — target >= ${OPTS.targetExport}: **${outcome(exportVerdict[0])}**`,
      `- the instance's VmRSS during the export, above idle (the most of ${OPTS.exportRuns} runs): **${mib(rss)}** — target <= ${OPTS.exportRssMb} MiB: **${outcome(exportVerdict[1])}**`,
    );
  }
  const judged = [...ratios, ...filtered, ...(exportVerdict || [])];
  const overall = problems.length ? 'NOT VALID' : judged.every((r) => r.pass) ? 'PASS' : 'FAIL';
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
    `**${overall}**${skipped.length ? ' (of what was measured: parts were skipped, below)' : ''}`,
    '',
    ...verdicts,
    '',
    ...skipped.flatMap((x) => [x, '']),
    noise,
    '',
    '## Data',
    '',
    `Form \`${publicId}\` "${form.title}" (${blocks.length} blocks: ${blocks.map((b) => `${b.type}${b.required ? '*' : ''}`).join(', ')}; * required) in a fresh database \`${dbName}\`: ${demoCount} demo responses (seq 1…${form.last_seq}) + ${int(OPTS.responses)} loaded by SQL (seq ${Number(form.last_seq) + 1}…${counter.last_seq}, submittedAt every ${stepUs} µs after the demo's last), ${int(expectedTotal)} in all, ${buckets} seek buckets.`,
    '',
    ...(exportForm
      ? [
          `The export's form \`${exportForm.publicId}\` "Export bench" (the same blocks, and a hidden field \`source\` whose values include \`partner, Inc.\` and \`=HYPERLINK("x")\`): ${int(OPTS.exportResponses)} responses loaded the same way.`,
          '',
        ]
      : []),
    '| Step | Time | Rows per second | WAL written |',
    '| --- | ---: | ---: | ---: |',
    ...timings.map(
      (t) =>
        `| ${t.label} | **${secs(t.ms)}** | ${t.rows ? int(Math.round(t.rows / (t.ms / 1000))) : ''} | ${mib(t.wal)}${t.rows ? ` (${int(Math.round(t.wal / t.rows))} bytes/row)` : ''} |`,
    ),
    '',
    '| Table | Rows | Total (pg_total_relation_size) | Heap | Indexes |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...sizeRows,
    '',
    `\`responses\`: TOAST ${mib(toast)}; its indexes:`,
    '',
    '| Index | Size | Bytes per row | Definition |',
    '| --- | ---: | ---: | --- |',
    ...indexSizes.map(
      (i) =>
        `| ${i.name} | ${mib(i.bytes)} | ${f1(Number(i.bytes) / Number(sizes[0].rows))} | \`${i.def.replace(/ USING btree/, '').replace(/^CREATE (UNIQUE )?INDEX \S+ ON \S+ /, (m, u) => (u ? 'UNIQUE ' : ''))}\` |`,
    ),
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
    ...filteredSection(filtered, { expectedTotal }),
    ...exportSection(exportRuns, copyRuns, exportInfo),
    ...writesSection(writes),
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
    `- Load average (1 min) during the run, sampled every 5 s: ${loadSamples.length ? `min ${f2(Math.min(...loadSamples))}, median ${f2(median(loadSamples))}, max ${f2(Math.max(...loadSamples))}` : '-'}; at the end ${loadText(os.loadavg())} (1/5/15 min). The machine has ${os.cpus().length} cores.`,
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

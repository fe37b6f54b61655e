'use strict';
/**
 * Forms that compute (issue 46). Run with `npm run bench:compute` (or `npm run build && node
 * bench/compute.js`; BENCH_DIST points at another build's dist/). In one run, in-process (the
 * service's compiled AppModule in an application context, no HTTP), on a fresh database:
 *
 *  A. Service CPU of storing a response (ResponsesService.submit: create_response's validation and
 *     store path) on a form with 20 variables and 200 calculations (10 number blocks with 20 each:
 *     add, multiply, set and divide, half of them under an `if` on a variable) vs the same blocks
 *     with none: this process's CPU (process.cpuUsage) per call, BENCH_OPS calls per round,
 *     BENCH_ROUNDS rounds, the two alternating so that drift hits both alike. Target: <= 1.2x.
 *  B. list_responses (ResponsesService.list, limit 50) filtered on a number variable, at
 *     BENCH_COMPUTE_N responses loaded by SQL (their variables as create_response stores them),
 *     the form's aggregates recounted: gte on 0.1% of the rows and equals on 10% (both totals
 *     read from answer_counts), beside the same equals on a hidden field (hidden_counts) as the
 *     baseline: wall time per call, p50 of BENCH_CALLS, alternating. The target is
 *     1 s p50 at 10M responses; this measures at BENCH_COMPUTE_N (1M by default): see docs/benchmarks.md.
 *
 * Env: BENCH_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_DIST,
 * BENCH_COMPUTE_N (1,000,000), BENCH_OPS (300), BENCH_ROUNDS (5), BENCH_CALLS (20), BENCH_KEEP_DB=1.
 * Prints a Markdown report and writes it to bench/results/compute-<timestamp>.md. Exit code 1 when
 * something broke, 0 whether the targets pass or not.
 */
require('reflect-metadata');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { NestFactory } = require('@nestjs/core');
const { Client } = require('pg');
const { log, envNumber, startRun, runJson, Teardown, runMain, writeReport } = require('./lib');

const DIST = process.env.BENCH_DIST ? join(process.env.BENCH_DIST, 'src') : join(__dirname, '..', 'dist', 'src');
const ADMIN_URL = process.env.BENCH_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const N = envNumber('BENCH_COMPUTE_N', 1_000_000, { integer: true });
const OPS = envNumber('BENCH_OPS', 300, { integer: true });
const ROUNDS = envNumber('BENCH_ROUNDS', 5, { integer: true });
const CALLS = envNumber('BENCH_CALLS', 20, { integer: true });

/** Ten number blocks; with `compute`, 20 calculations each over 20 variables (200 in all). */
function blocks(compute) {
  return Array.from({ length: 10 }, (_, b) => ({
    ref: `n${b}`,
    type: 'number',
    title: `Number ${b}`,
    ...(compute
      ? {
          calculate: Array.from({ length: 20 }, (_, k) => {
            const variable = `v${(b * 20 + k) % 20}`;
            const op = ['add', 'multiply', 'set', 'divide'][k % 4];
            const value =
              op === 'add' ? { block: `n${b}` } : op === 'set' ? { variable: `v${(k + 1) % 20}` } : 1 + (k % 3);
            return { ...(k % 2 ? { if: { variable, op: 'lt', value: 1e9 } } : {}), variable, op, value };
          }),
        }
      : {}),
  }));
}
const VARIABLES = Array.from({ length: 20 }, (_, i) => ({ name: `v${i}`, type: 'number', initial: i }));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function main(teardown) {
  const run = startRun('formwork_bench_compute', { adminUrl: ADMIN_URL, keepDb: process.env.BENCH_KEEP_DB === '1' });
  teardown.database = run.database;
  await run.database.create();
  const url = run.database.url;
  await runJson('migrate (CLI)', [join(DIST, 'cli', 'main.js'), 'migrate', '--json'], {
    ...process.env,
    DATABASE_URL: url,
  });
  const { loadConfig } = require(join(DIST, 'config', 'config'));
  const { AppModule } = require(join(DIST, 'app.module'));
  const { WorkspacesService } = require(join(DIST, 'workspaces', 'workspaces.service'));
  const { FormsService } = require(join(DIST, 'forms', 'forms.service'));
  const { ResponsesService } = require(join(DIST, 'responses', 'responses.service'));
  const { ResponseStatsRepository } = require(join(DIST, 'summaries', 'response-stats.repository'));
  const { allowLongStatements } = require(join(DIST, 'database', 'long-statements'));
  const { DataSource } = require('typeorm');
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: url,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    BOOTSTRAP_DEMO: 'false',
    WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
  });
  const ctx = await NestFactory.createApplicationContext(AppModule.forRoot(config, url), {
    logger: ['error', 'fatal'],
    abortOnError: false,
  });
  teardown.closers.add(() => ctx.close());
  const forms = ctx.get(FormsService);
  const responses = ctx.get(ResponsesService);
  const db = ctx.get(DataSource);
  const { workspace } = await ctx
    .get(WorkspacesService)
    .create({ name: 'Bench', slug: `bench-${run.ts.replace('-', '')}`, plan: 'pro', ownerEmail: 'bench@example.com' });
  const makeForm = async (input) => {
    const f = await forms.create(workspace.id, input);
    await forms.setStatus(f.id, 'published');
    return forms.get(workspace.id, f.publicId);
  };

  // ---- A. CPU of create_response with and without calculations ----
  const computing = await makeForm({ title: 'Computes', variables: VARIABLES, blocks: blocks(true) });
  const plain = await makeForm({ title: 'Plain', blocks: blocks(false) });
  const answers = (f, i) => Object.fromEntries(f.blocks.map((b, k) => [b.id, (i + k) % 7]));
  const check = await responses.submit(computing.publicId, answers(computing, 1), {});
  if (!check.variables || Object.keys(check.variables).length !== 20)
    throw new Error('the computing form computed nothing');
  const kinds = {
    'no calculations': (i) => responses.submit(plain.publicId, answers(plain, i), {}),
    '20 variables, 200 calculations': (i) => responses.submit(computing.publicId, answers(computing, i), {}),
  };
  for (let i = 0; i < 50; i++) for (const k of Object.keys(kinds)) await kinds[k](i);
  const perCall = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++)
    for (const k of Object.keys(kinds)) {
      const c0 = cpuMs();
      for (let i = 0; i < OPS; i++) await kinds[k](i);
      perCall[k].push((cpuMs() - c0) / OPS);
      log(`A round ${round + 1}/${ROUNDS} ${k}: ${perCall[k].at(-1).toFixed(3)} ms CPU per call`);
    }
  const base = median(perCall['no calculations']);
  const cpuRatio = median(perCall['20 variables, 200 calculations']) / base;

  // ---- B. a filter on a number variable at N responses ----
  const quiz = await makeForm({
    title: 'Filter',
    hiddenFields: ['campaign'],
    variables: [{ name: 'score', type: 'number', initial: 0 }],
    blocks: [
      { ref: 'n', type: 'number', title: 'n', calculate: [{ variable: 'score', op: 'add', value: { block: 'n' } }] },
    ],
  });
  const t0 = performance.now();
  await db.transaction(async (tx) => {
    await allowLongStatements(tx, 60 * 60_000);
    // score: 0..999 evenly (gte 999 is 0.1%); 10% have score 7 ... via g % 10 = 0 -> 7 (see below); campaign "spring" on 10%.
    await tx.query(
      `INSERT INTO responses (form_id, seq, submitted_at, answers, hidden, variables, ending, source)
       SELECT $1, g, timestamptz '2026-01-01' + g * interval '1 second', jsonb_build_object($3::text, s), 
              jsonb_build_object('campaign', CASE WHEN g % 10 = 0 THEN 'spring' ELSE 'c' || (g % 50) END),
              jsonb_build_object('score', s), NULL, 'import'
         FROM generate_series(1, $2::int) g, LATERAL (SELECT CASE WHEN g % 10 = 0 THEN 7 ELSE g % 1000 END AS s) x`,
      [quiz.id, N, quiz.blocks[0].id],
    );
    await tx.query(
      `UPDATE response_counters SET last_seq = $2::int, last_submitted_at = timestamptz '2026-01-01' + $2::int * interval '1 second' WHERE form_id = $1`,
      [quiz.id, N],
    );
    await new ResponseStatsRepository().recomputeResponseStats(tx, quiz.id);
  });
  log(`B loaded ${N} responses in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const admin = new Client({ connectionString: url });
  await admin.connect();
  await admin.query('VACUUM ANALYZE');
  await admin.end();
  const filters = {
    'hidden campaign equals "spring" (10%, counted)': { hidden: 'campaign', op: 'equals', value: 'spring' },
    'variable score equals 7 (10%, counted)': { variable: 'score', op: 'equals', value: 7 },
    'variable score gte 999 (0.1%, counted by range)': { variable: 'score', op: 'gte', value: 999 },
  };
  const list = (where) =>
    responses.list(workspace.id, quiz.publicId, { limit: 50, offset: 0, order: 'oldest', filter: { where } });
  const totals = {};
  for (const [k, where] of Object.entries(filters)) totals[k] = (await list(where)).total;
  const times = Object.fromEntries(Object.keys(filters).map((k) => [k, []]));
  for (let i = 0; i < CALLS; i++)
    for (const [k, where] of Object.entries(filters)) {
      const s = performance.now();
      await list(where);
      times[k].push(performance.now() - s);
    }
  const summarizeTimes = [];
  for (let i = 0; i < CALLS; i++) {
    const s = performance.now();
    await responses.summarize(workspace.id, quiz.publicId);
    summarizeTimes.push(performance.now() - s);
  }

  const pass = (ok) => (ok ? 'PASS' : 'FAIL');
  const md = [
    `# Forms that compute bench (${run.ts}; dist: ${DIST})`,
    '',
    `## A. Service CPU per create_response (median of ${ROUNDS} rounds of ${OPS}; this process, in-process calls)`,
    '',
    '| form | CPU ms per call | vs none |',
    '| --- | ---: | ---: |',
    ...Object.keys(kinds).map(
      (k) => `| ${k} | ${median(perCall[k]).toFixed(3)} | ${(median(perCall[k]) / base).toFixed(2)}x |`,
    ),
    '',
    `Target: <= 1.2x: **${pass(cpuRatio <= 1.2)}** (${cpuRatio.toFixed(2)}x).`,
    '',
    `## B. list_responses (limit 50) at ${N.toLocaleString('en')} responses (p50 of ${CALLS}, alternating)`,
    '',
    '| where | total | p50 ms |',
    '| --- | ---: | ---: |',
    ...Object.keys(filters).map((k) => `| ${k} | ${totals[k]} | ${median(times[k]).toFixed(1)} |`),
    `| (summarize_responses, unfiltered, variables included) | | ${median(summarizeTimes).toFixed(1)} |`,
    '',
    `Target (issue 46, at 10M): 1 s p50. At ${N.toLocaleString('en')}: worst p50 ${Math.max(...Object.values(times).map(median)).toFixed(1)} ms.`,
    '',
  ].join('\n');
  writeReport(`compute-${run.ts}.md`, md);
}

const teardown = new Teardown();
teardown.onSignals('compute bench interrupted');
runMain(() => main(teardown), teardown);

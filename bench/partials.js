'use strict';
/**
 * Partial responses (issue 36). Run with `npm run build && node bench/partials.js` (or point
 * BENCH_DIST at another build's dist/). In one run, in-process (the service's own compiled
 * AppModule in an application context, no HTTP), on a fresh database:
 *
 *  A. Service CPU of saving one page of a partial (PartialResponsesService.save: the respondent
 *     page's call on Next; a first page with a new secret, and a next page of the same partial)
 *     vs storing a response (ResponsesService.submit, the same validation and store path as
 *     create_response): this process's CPU (process.cpuUsage) per call, BENCH_SAVE_ROUNDS rounds of
 *     BENCH_SAVE_OPS calls each, the three alternating so that drift hits all alike. Target: <= 1.5x.
 *  B. summarize_responses (ResponsesService.summarize) on a form with BENCH_PARTIALS_N completed
 *     responses and as many partials vs a form with the same completed responses and no partials:
 *     wall time per call (median of BENCH_SUMMARY_CALLS, alternating). Target: <= 1.2x.
 *
 * Env: BENCH_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_DIST,
 * BENCH_PARTIALS_N (default 1,000,000), BENCH_SAVE_OPS (300), BENCH_SAVE_ROUNDS (5),
 * BENCH_SUMMARY_CALLS (40), BENCH_KEEP_DB=1. Prints a Markdown report and writes it to
 * bench/results/partials-<timestamp>.md. Exit code 1 when something broke, 0 whether the targets pass or not.
 */
require('reflect-metadata');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { NestFactory } = require('@nestjs/core');
const { Client } = require('pg');
const { log, envNumber, startRun, runJson, Teardown, runMain, writeReport } = require('./lib');

const DIST = process.env.BENCH_DIST ? join(process.env.BENCH_DIST, 'src') : join(__dirname, '..', 'dist', 'src');
const ADMIN_URL = process.env.BENCH_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const N = envNumber('BENCH_PARTIALS_N', 1_000_000, { integer: true });
const SAVE_OPS = envNumber('BENCH_SAVE_OPS', 300, { integer: true });
const SAVE_ROUNDS = envNumber('BENCH_SAVE_ROUNDS', 5, { integer: true });
const SUMMARY_CALLS = envNumber('BENCH_SUMMARY_CALLS', 40, { integer: true });

const BLOCKS = [
  { ref: 'name', type: 'short_text', title: 'Name', required: true },
  { ref: 'colour', type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Green', 'Blue'] },
  { ref: 'rating', type: 'rating', title: 'Rating', max: 5 },
  { ref: 'p2', type: 'page_break', title: 'More' },
  { ref: 'age', type: 'number', title: 'Age', min: 0, max: 150 },
  { ref: 'why', type: 'long_text', title: 'Why?' },
];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function main(teardown) {
  const run = startRun('formwork_bench_partials', { adminUrl: ADMIN_URL, keepDb: process.env.BENCH_KEEP_DB === '1' });
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
  const { PartialResponsesService } = require(join(DIST, 'responses', 'partial-responses.service'));
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
  const partials = ctx.get(PartialResponsesService);
  const db = ctx.get(DataSource);

  const { workspace } = await ctx
    .get(WorkspacesService)
    .create({ name: 'Bench', slug: `bench-${run.ts.replace('-', '')}`, plan: 'pro', ownerEmail: 'bench@example.com' });
  const makeForm = async (title) => {
    const f = await forms.create(workspace.id, { title, blocks: BLOCKS, partialResponses: true });
    await forms.setStatus(f.id, 'published');
    return forms.get(workspace.id, f.publicId);
  };

  // ---- A. CPU of a save vs a submission ----
  const form = await makeForm('Save vs submit');
  const id = Object.fromEntries(form.blocks.map((b) => [b.ref, b.id]));
  const page1 = (i) => ({ [id.name]: `Person ${i}`, [id.colour]: 'Green', [id.rating]: 1 + (i % 5) });
  const full = (i) => ({ ...page1(i), [id.age]: 20 + (i % 50), [id.why]: 'Because it is good' });
  const secrets = [];
  const kinds = {
    submit: async (i) => responses.submit(form.publicId, full(i), {}),
    'save (first page, new partial)': async (i) => {
      const r = await partials.save(form, { answers: page1(i), hidden: {}, pagesReached: [''], lastPage: '' });
      secrets.push(r.resumeSecret);
    },
    'save (next page, same partial)': async (i) => {
      const secret = secrets.pop();
      await partials.save(form, {
        resumeSecret: secret,
        answers: full(i),
        hidden: {},
        pagesReached: ['', id.p2],
        lastPage: id.p2,
      });
    },
  };
  // Warm up each.
  for (let i = 0; i < 50; i++) for (const k of Object.keys(kinds)) await kinds[k](i);
  const perCall = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
  for (let round = 0; round < SAVE_ROUNDS; round++)
    for (const k of Object.keys(kinds)) {
      const c0 = cpuMs();
      for (let i = 0; i < SAVE_OPS; i++) await kinds[k](i);
      perCall[k].push((cpuMs() - c0) / SAVE_OPS);
      log(`A round ${round + 1}/${SAVE_ROUNDS} ${k}: ${perCall[k].at(-1).toFixed(3)} ms CPU per call`);
    }
  const base = median(perCall.submit);
  const saveRows = Object.keys(kinds).map((k) => ({ k, ms: median(perCall[k]), ratio: median(perCall[k]) / base }));

  // ---- B. summarize at N completed + N partials vs N completed ----
  const plain = await makeForm('Completed only');
  const mixed = await makeForm('Completed and partials');
  const load = async (f, withPartials) => {
    const b = Object.fromEntries(f.blocks.map((x) => [x.ref, x]));
    const choices = b.colour.choices.map((c) => c.id);
    const t0 = performance.now();
    await db.transaction(async (tx) => {
      // A bulk load: statements as long as it takes (the service's own bound for long statements).
      await allowLongStatements(tx, 30 * 60_000);
      await tx.query(
        `INSERT INTO responses (form_id, seq, submitted_at, answers, source)
         SELECT $1, g, timestamptz '2026-01-01' + g * interval '1 second',
                jsonb_build_object($3::text, 'Person ' || g, $4::text, ($5::text[])[1 + g % 3], $6::text, 1 + g % 5), 'import'
           FROM generate_series(1, $2::int) g`,
        [f.id, N, b.name.id, b.colour.id, choices, b.rating.id],
      );
      await tx.query(
        `UPDATE response_counters SET last_seq = $2::int, last_submitted_at = timestamptz '2026-01-01' + $2::int * interval '1 second' WHERE form_id = $1`,
        [f.id, N],
      );
      await new ResponseStatsRepository().recomputeResponseStats(tx, f.id);
      if (withPartials) {
        await tx.query(
          `INSERT INTO partial_responses (id, form_id, answers, pages_reached, last_page)
           SELECT gen_random_uuid(), $1, jsonb_build_object($3::text, 'Partial ' || g, $4::text, ($5::text[])[1 + g % 3]),
                  CASE WHEN g % 2 = 0 THEN ARRAY['', $6::text] ELSE ARRAY[''] END, CASE WHEN g % 2 = 0 THEN $6::text ELSE '' END
             FROM generate_series(1, $2::int) g`,
          [f.id, N, b.name.id, b.colour.id, choices, b.p2.id],
        );
        await tx.query(
          `INSERT INTO partial_page_counts (form_id, page, n) VALUES ($1, '*', $2::int), ($1, '', $2::int), ($1, $3, $2::int / 2)`,
          [f.id, N, b.p2.id],
        );
      }
    });
    log(
      `B loaded ${N} completed${withPartials ? ` + ${N} partials` : ''} in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
  };
  await load(plain, false);
  await load(mixed, true);
  const admin = new Client({ connectionString: url });
  await admin.connect();
  await admin.query('VACUUM ANALYZE');
  await admin.end();
  const summarize = (f) => responses.summarize(workspace.id, f.publicId);
  const [sPlain, sMixed] = [await summarize(plain), await summarize(mixed)];
  if (sPlain.total !== N || sMixed.total !== N) throw new Error(`wrong totals: ${sPlain.total}, ${sMixed.total}`);
  const times = { plain: [], mixed: [] };
  for (let i = 0; i < SUMMARY_CALLS; i++)
    for (const [k, f] of [
      ['plain', plain],
      ['mixed', mixed],
    ]) {
      const t0 = performance.now();
      await summarize(f);
      times[k].push(performance.now() - t0);
    }
  const sumRatio = median(times.mixed) / median(times.plain);

  const pass = (ok) => (ok ? 'PASS' : 'FAIL');
  const worstSave = Math.max(...saveRows.filter((r) => r.k !== 'submit').map((r) => r.ratio));
  const md = [
    `# Partial responses bench (${run.ts}; dist: ${DIST})`,
    '',
    `## A. Service CPU per call (median of ${SAVE_ROUNDS} rounds of ${SAVE_OPS}; this process, in-process calls)`,
    '',
    '| call | CPU ms per call | vs submit |',
    '| --- | ---: | ---: |',
    ...saveRows.map((r) => `| ${r.k} | ${r.ms.toFixed(3)} | ${r.ratio.toFixed(2)}x |`),
    '',
    `Target: a save <= 1.5x a submission: **${pass(worstSave <= 1.5)}** (worst ${worstSave.toFixed(2)}x).`,
    '',
    `## B. summarize_responses, ${N.toLocaleString('en')} completed (+ as many partials) (median of ${SUMMARY_CALLS}, alternating)`,
    '',
    '| form | ms per call |',
    '| --- | ---: |',
    `| ${N} completed | ${median(times.plain).toFixed(2)} |`,
    `| ${N} completed + ${N} partials | ${median(times.mixed).toFixed(2)} |`,
    '',
    `Target: <= 1.2x: **${pass(sumRatio <= 1.2)}** (${sumRatio.toFixed(2)}x).`,
    '',
  ].join('\n');
  writeReport(`partials-${run.ts}.md`, md);
}

const teardown = new Teardown();
teardown.onSignals('partials bench interrupted');
runMain(() => main(teardown), teardown);

'use strict';
/**
 * Segment summaries (issue 38 item 3): two builds on one loaded database, alternated, as
 * bench/hidden-counts.js does. BENCH_DIST_BEFORE is a build without segment aggregates, BENCH_DIST
 * one with them. The database is one that `bench/responses-at-scale.js` kept (BENCH_KEEP_DB=1),
 * named by BENCH_REUSE_DB: its form "Customer feedback" has the hidden field campaign ("spring" in
 * 10% of the rows, "pilot" in 0.1%) and a required single-choice block (its first choice in 10% of
 * the rows, its last in 0.1%).
 *
 * 1. migrates it with BENCH_DIST's CLI, timed;
 * 2. starts one instance of each build (no writes meanwhile) and, for each of the four filters,
 *    drops the form's segments, times the first summarize_responses of each build (BENCH_DIST's
 *    makes the segment), checks that both answer the same, then BENCH_CALLS calls each,
 *    alternating the builds call by call: p50;
 * 3. the fold alone, in PostgreSQL: BENCH_FOLD_ROUNDS rounds, each a transaction per variant (rolled
 *    back) that inserts BENCH_FOLD_N unsequenced copies of loaded responses (their campaigns and
 *    choices as loaded: 10% spring, 10% the first choice) and times the build's own
 *    sequenceResponses() over them (wall time of the statements on an otherwise idle connection,
 *    and the WAL they insert), variants alternating: the build before, BENCH_DIST without
 *    segments, BENCH_DIST with the four segments the summaries made;
 * 4. (not with BENCH_SKIP_WRITES=1) BENCH_ROUNDS rounds of BENCH_DURATION s of create_response (campaign one of
 *    10 values, "spring" among them; the choice block's first choice, as lib.sampleAnswers gives),
 *    one instance at a time, three variants alternating: the build before, BENCH_DIST with no
 *    segment on the form, BENCH_DIST with the four segments (made again before each of its rounds,
 *    as the build before's writes leave them out of step): req/s, the server's and PostgreSQL's
 *    CPU per request and WAL bytes per response (responses sequenced included).
 *
 * Prints a Markdown table; the database is kept (its segments dropped at the end).
 */
const { join, resolve } = require('node:path');
const { performance } = require('node:perf_hooks');
const os = require('node:os');
const { Client } = require('pg');
const lib = require('./lib');

const { log, envNumber, loadOptions, runJson, freePort, cleanEnv, serviceEnv, Server, post, COUNTING_LIMITS } = lib;
const OPTS = {
  ...loadOptions({ connections: 10, rounds: 3 }),
  calls: envNumber('BENCH_CALLS', 20, { integer: true, min: 1 }),
  reuseDb: process.env.BENCH_REUSE_DB || '',
  foldRounds: envNumber('BENCH_FOLD_ROUNDS', 5, { integer: true, min: 1 }),
  foldN: envNumber('BENCH_FOLD_N', 2000, { integer: true, min: 1 }),
  skipWrites: lib.envFlag('BENCH_SKIP_WRITES'),
};
const distOf = (dir) => join(resolve(dir), 'src');
const BUILDS = [
  { name: 'before', dist: distOf(process.env.BENCH_DIST_BEFORE || '') },
  { name: 'after', dist: distOf(process.env.BENCH_DIST || 'dist') },
];
const { median } = lib;

async function main() {
  if (!OPTS.reuseDb || !process.env.BENCH_DIST_BEFORE) throw new Error('set BENCH_REUSE_DB and BENCH_DIST_BEFORE');
  const db = new lib.BenchDatabase(OPTS.adminUrl, OPTS.reuseDb, { keep: true });
  const baseEnv = cleanEnv();
  const cliEnv = {
    ...baseEnv,
    DATABASE_URL: db.url,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    BOOTSTRAP_DEMO: 'false',
  };
  const out = [];
  const loads = [os.loadavg()[0]];

  let t0 = performance.now();
  const migrated = await runJson(
    'migrate (CLI)',
    [join(BUILDS[1].dist, 'cli', 'main.js'), 'migrate', '--json'],
    cliEnv,
  );
  out.push(
    `migrate (${(migrated.migrations || []).join(', ') || 'nothing to run'}): ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  log(out.at(-1));

  const c = new Client({ connectionString: db.url });
  await c.connect();
  const saved = (await c.query(`SELECT value FROM bench_reuse WHERE key = 'run'`)).rows[0].value;
  const headers = { Authorization: `Bearer ${saved.demo.token}`, 'Content-Type': 'application/json' };
  const [form] = (
    await c.query(
      `SELECT f.id, f.public_id, c.total::int AS total FROM forms f JOIN response_counters c ON c.form_id = f.id
        WHERE f.title = 'Customer feedback' AND f.public_id = ANY($1::text[]) ORDER BY f.created_at LIMIT 1`,
      [saved.demo.forms],
    )
  ).rows;
  out.push(`form ${form.public_id}: ${form.total} responses`);
  log(out.at(-1));
  const dropSegments = () => c.query('DELETE FROM response_segments WHERE form_id = $1', [form.id]);

  const start = async (build) => {
    const port = await freePort();
    const s = new Server(
      build.name,
      [join(build.dist, 'main.js')],
      serviceEnv(baseEnv, port, db.url, { ...COUNTING_LIMITS, PUBLIC_URL: `http://127.0.0.1:${port}` }),
    );
    s.base = `http://127.0.0.1:${port}/api/v1/tools`;
    await s.waitUntil(
      async () =>
        (await post(`${s.base}/get_form`, headers, JSON.stringify({ publicId: form.public_id }), 5000)).status === 200,
      60_000,
    );
    return s;
  };
  const call = async (s, tool, args) => {
    const t = performance.now();
    const r = await post(`${s.base}/${tool}`, headers, JSON.stringify(args), 600_000);
    if (r.status !== 200) throw new Error(`${s.name} ${tool}: ${r.status} ${r.text.slice(0, 300)}`);
    return { ms: performance.now() - t, body: JSON.parse(r.text) };
  };

  // --- the filtered summaries, builds alternating call by call -------------------------------------
  const server0 = await start(BUILDS[1]);
  const got = (await call(server0, 'get_form', { publicId: form.public_id })).body;
  await server0.stop();
  const choiceBlock = got.blocks.find((b) => b.type === 'multiple_choice' && b.required);
  const filters = [
    ['hidden campaign = "spring" (10%)', { hidden: 'campaign', op: 'equals', value: 'spring' }],
    ['hidden campaign = "pilot" (0.1%)', { hidden: 'campaign', op: 'equals', value: 'pilot' }],
    [
      `choice "${choiceBlock.choices[0].label}" (10%)`,
      { block: choiceBlock.id, op: 'equals', value: choiceBlock.choices[0].id },
    ],
    [
      `choice "${choiceBlock.choices.at(-1).label}" (0.1%)`,
      { block: choiceBlock.id, op: 'equals', value: choiceBlock.choices.at(-1).id },
    ],
  ];
  const servers = [];
  try {
    for (const b of BUILDS) servers.push(await start(b));
    out.push(
      '',
      `summarize_responses, where (first call, then p50 of ${OPTS.calls} calls alternating the builds):`,
      '',
      '| where | total | before first (ms) | after first (ms, makes the segment) | before p50 (ms) | after p50 (ms) | load |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const [label, where] of filters) {
      await dropSegments();
      const args = { publicId: form.public_id, where };
      const first = [];
      for (const s of servers) first.push(await call(s, 'summarize_responses', args));
      const [a, b] = first.map((f) => JSON.stringify(f.body));
      if (a !== b) throw new Error(`${label}: the builds' summaries differ\n${a}\n${b}`);
      const times = servers.map(() => []);
      for (let i = 0; i < OPTS.calls; i++)
        for (const j of i % 2 ? [1, 0] : [0, 1])
          times[j].push((await call(servers[j], 'summarize_responses', args)).ms);
      for (const j of [0, 1]) {
        const again = JSON.stringify((await call(servers[j], 'summarize_responses', args)).body);
        if (again !== a) throw new Error(`${label}: ${servers[j].name} changed its answer`);
      }
      out.push(
        `| ${label} | ${first[0].body.total} | ${first[0].ms.toFixed(0)} | ${first[1].ms.toFixed(0)} | ${median(times[0]).toFixed(0)} | ${median(times[1]).toFixed(0)} | ${os.loadavg()[0].toFixed(1)} |`,
      );
      log(out.at(-1));
    }
    // The four segments, for the fold below.
    for (const [, where] of filters) await call(servers[1], 'summarize_responses', { publicId: form.public_id, where });
  } finally {
    for (const s of servers) await s.stop();
  }

  // --- the fold alone, rolled back ----------------------------------------------------------------
  const { DataSource } = require('typeorm');
  const folders = [];
  for (const b of BUILDS) {
    const { dataSourceOptions } = require(join(b.dist, 'database', 'data-source.js'));
    const { ResponseStatsRepository } = require(join(b.dist, 'summaries', 'response-stats.repository.js'));
    const ds = new DataSource(dataSourceOptions(db.url, 1, false));
    await ds.initialize();
    folders.push({ ds, repo: new ResponseStatsRepository() });
  }
  const FOLDS = [
    { name: 'before', at: 0, segments: true },
    { name: 'after, no segment', at: 1, segments: false },
    { name: 'after, 4 segments', at: 1, segments: true },
  ];
  const foldRows = [];
  for (let round = 0; round <= OPTS.foldRounds; round++)
    for (const i of [0, 1, 2].map((k) => (k + round) % 3)) {
      const v = FOLDS[i];
      const { ds, repo } = folders[v.at];
      const runner = ds.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      try {
        const tx = runner.manager;
        if (!v.segments) await tx.query('DELETE FROM response_segments WHERE form_id = $1', [form.id]);
        const [{ kept }] = await tx.query('SELECT count(*)::int AS kept FROM response_segments WHERE form_id = $1', [
          form.id,
        ]);
        await tx.query(
          `INSERT INTO responses (form_id, answers, hidden, shown, source)
           SELECT form_id, answers, hidden, shown, source FROM responses
            WHERE form_id = $1 AND seq IS NOT NULL AND seq <= $2 ORDER BY seq DESC LIMIT $3`,
          [form.id, 1_000_000 + round * OPTS.foldN, OPTS.foldN],
        );
        await repo.lockSequencer(tx, form.id);
        const [{ l0 }] = await tx.query('SELECT pg_current_wal_insert_lsn()::text AS l0');
        const t = performance.now();
        const n = await repo.sequenceResponses(tx, [form.id]);
        const ms = performance.now() - t;
        const [{ wal }] = await tx.query(
          'SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::float8 AS wal',
          [l0],
        );
        if (n !== OPTS.foldN) throw new Error(`${v.name}: sequenced ${n}, not ${OPTS.foldN}`);
        if (round > 0) foldRows.push({ name: v.name, usPer: (ms * 1000) / n, walPer: wal / n, kept });
        log(
          `fold round ${round} ${v.name} (${kept} segments): ${((ms * 1000) / n).toFixed(1)} us and ${(wal / n).toFixed(0)} WAL bytes per response`,
        );
      } finally {
        await runner.rollbackTransaction();
        await runner.release();
      }
    }
  for (const { ds } of folders) await ds.destroy();
  out.push(
    '',
    `The fold alone: sequenceResponses() of ${OPTS.foldN} unsequenced copies of loaded responses, one transaction each (rolled back), ${OPTS.foldRounds} rounds alternating, medians:`,
    '',
    '| variant | us per response | WAL bytes per response | rounds (us / WAL) |',
    '| --- | ---: | ---: | --- |',
  );
  for (const v of FOLDS) {
    const rs = foldRows.filter((r) => r.name === v.name);
    out.push(
      `| ${v.name} | ${median(rs.map((r) => r.usPer)).toFixed(1)} | ${median(rs.map((r) => r.walPer)).toFixed(0)} | ${rs.map((r) => `${r.usPer.toFixed(1)} / ${r.walPer.toFixed(0)}`).join('; ')} |`,
    );
  }
  log(out.slice(-5).join('\n'));

  // --- writes, one instance at a time ------------------------------------------------------------
  const answers = lib.sampleAnswers(got);
  let n = 0;
  const body = () =>
    JSON.stringify({ publicId: form.public_id, answers, hidden: { campaign: n++ % 10 ? `c${n % 10}` : 'spring' } });
  const waiting = async () =>
    Number((await c.query('SELECT count(*) AS n FROM responses WHERE seq IS NULL')).rows[0].n);
  const lsn = async () => (await c.query('SELECT pg_current_wal_lsn()::text AS l')).rows[0].l;
  const VARIANTS = [
    { name: 'before', build: BUILDS[0], segments: false },
    { name: 'after, no segment', build: BUILDS[1], segments: false },
    { name: 'after, 4 segments', build: BUILDS[1], segments: true },
  ];
  const rows = [];
  for (let round = 0; !OPTS.skipWrites && round <= OPTS.rounds; round++) {
    const order = [0, 1, 2].map((i) => VARIANTS[(i + round) % 3]);
    for (const variant of order) {
      await dropSegments();
      const s = await start(variant.build);
      try {
        if (variant.segments)
          for (const [, where] of filters) await call(s, 'summarize_responses', { publicId: form.public_id, where });
        const kept = Number(
          (await c.query('SELECT count(*) AS n FROM response_segments WHERE form_id = $1', [form.id])).rows[0].n,
        );
        await c.query('CHECKPOINT'); // full-page images alike for every variant
        const l0 = await lsn();
        const result = await lib.loadRun(
          {
            url: `${s.base}/create_response`,
            connections: OPTS.connections,
            duration: round === 0 ? OPTS.warmup : OPTS.duration,
            requests: [{ method: 'POST', headers, setupRequest: (req) => ({ ...req, body: body() }) }],
          },
          { serverPid: s.proc.pid, dbName: OPTS.reuseDb, exact: true },
        );
        const fig = lib.figures(result);
        const t1 = performance.now();
        while ((await waiting()) > 0 && performance.now() - t1 < 60_000) await new Promise((r) => setTimeout(r, 100));
        const wal = Number(
          (await c.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint AS n', [l0])).rows[0].n,
        );
        const row = { round, variant: variant.name, ...fig, walPer: wal / fig.total, load: os.loadavg()[0] };
        if (fig.problems.length) log(`${variant.name}: ${fig.problems.join('; ')}`);
        if (round > 0) rows.push(row);
        log(
          `round ${round} ${variant.name} (${kept} segments): ${fig.rps.toFixed(0)} req/s, server ${fig.cpuPerReq.toFixed(3)} ms/req, postgres ${fig.pgPerReq.toFixed(3)} ms/req, WAL ${row.walPer.toFixed(0)} B/response, other ${fig.otherPct.toFixed(0)}%, load ${row.load.toFixed(1)}`,
        );
        if (variant.segments) {
          // The folds kept them in step: each still equals what a scan gives (the build before's answer).
          const segs = await c.query(
            `SELECT g.total::int AS total, (SELECT count(*)::int FROM responses r WHERE r.form_id = g.form_id AND r.seq IS NOT NULL
                    AND (CASE g.kind WHEN 'hidden' THEN r.hidden ELSE r.answers END) @> g.match) AS rows
               FROM response_segments g JOIN response_counters c ON c.form_id = g.form_id AND c.last_seq = g.form_seq
              WHERE g.form_id = $1`,
            [form.id],
          );
          if (segs.rows.length !== filters.length || segs.rows.some((r) => r.total !== r.rows))
            throw new Error(`segments out of step after the round: ${JSON.stringify(segs.rows)}`);
        }
      } finally {
        await s.stop();
      }
    }
  }
  if (!OPTS.skipWrites)
    out.push(
      '',
      `create_response (campaign one of 10 values, "spring" among them; the choice block's 10% choice), ${OPTS.rounds} rounds of ${OPTS.duration} s at ${OPTS.connections} connections, medians:`,
      '',
      '| variant | req/s | server CPU ms/req | PostgreSQL CPU ms/req | WAL bytes/response | rounds (server / postgres / WAL) |',
      '| --- | ---: | ---: | ---: | ---: | --- |',
    );
  for (const v of OPTS.skipWrites ? [] : VARIANTS) {
    const rs = rows.filter((r) => r.variant === v.name);
    const m = (k) => median(rs.map((r) => r[k]));
    out.push(
      `| ${v.name} | ${m('rps').toFixed(0)} | ${m('cpuPerReq').toFixed(3)} | ${m('pgPerReq').toFixed(3)} | ${m('walPer').toFixed(0)} | ${rs.map((r) => `${r.cpuPerReq.toFixed(3)} / ${r.pgPerReq.toFixed(3)} / ${r.walPer.toFixed(0)}`).join('; ')} |`,
    );
  }
  await dropSegments();
  loads.push(os.loadavg()[0]);
  out.push('', `load average (1 min) at the start and end: ${loads.map((l) => l.toFixed(1)).join(', ')}`);
  await c.end();
  process.stdout.write(`${out.join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});

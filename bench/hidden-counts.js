'use strict';
/**
 * Hidden-field totals (issue 38 item 3, session 16): two builds on one loaded database, alternated.
 * BENCH_DIST_BEFORE is a build without hidden_counts, BENCH_DIST one with it. The database is one
 * that `bench/responses-at-scale.js` kept (BENCH_KEEP_DB=1), named by BENCH_REUSE_DB: its form
 * "Customer feedback" has the hidden field campaign ("spring" in 10% of the rows, "pilot" in 0.1%).
 *
 * 1. migrates it with BENCH_DIST's CLI, timed (the backfill of hidden_counts on the loaded rows);
 * 2. starts one instance of each build (no writes meanwhile) and times list_responses with
 *    where { hidden: campaign, equals: spring | pilot }, BENCH_CALLS calls each, alternating the
 *    builds call by call, after checking that both give the same total and first page;
 * 3. stops them, then BENCH_ROUNDS rounds of BENCH_DURATION s of create_response with a hidden
 *    campaign value, one instance at a time (each instance's sequencer would fold the other's
 *    responses), builds alternating (A B, B A, ...): req/s, the server's and PostgreSQL's CPU per
 *    request, and WAL bytes per response (responses sequenced included). Values: one of 50 (as the
 *    loaded rows) or, with BENCH_UNIQUE=1, a new value per response (a new hidden_counts row each).
 *
 * The instances of BENCH_DIST_BEFORE write responses without keeping hidden_counts: afterwards the
 * form's counts are out of step and BENCH_DIST counts rows for it (as designed) until recomputed,
 * which the next run does first (recomputeResponseStats of BENCH_DIST, timed). Prints a Markdown
 * table; the database is kept.
 */
const { join, resolve } = require('node:path');
const { performance } = require('node:perf_hooks');
const os = require('node:os');
const { Client } = require('pg');
const lib = require('./lib');

const { log, envNumber, envFlag, loadOptions, runJson, freePort, cleanEnv, serviceEnv, Server, post, COUNTING_LIMITS } =
  lib;
const OPTS = {
  ...loadOptions({ connections: 10, rounds: 3 }),
  calls: envNumber('BENCH_CALLS', 20, { integer: true, min: 1 }),
  unique: envFlag('BENCH_UNIQUE'),
  reuseDb: process.env.BENCH_REUSE_DB || '',
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
  const loads = [];
  const load = () => loads.push(os.loadavg()[0]);

  load();
  let t0 = performance.now();
  const migrated = await runJson(
    'migrate (CLI)',
    [join(BUILDS[1].dist, 'cli', 'main.js'), 'migrate', '--json'],
    cliEnv,
  );
  out.push(
    `migrate (${(migrated.migrations || []).join(', ') || 'nothing to run'}): ${((performance.now() - t0) / 1000).toFixed(1)} s, load ${os.loadavg()[0].toFixed(1)}`,
  );
  log(out.at(-1));

  const c = new Client({ connectionString: db.url });
  await c.connect();
  const saved = (await c.query(`SELECT value FROM bench_reuse WHERE key = 'run'`)).rows[0].value;
  const headers = { Authorization: `Bearer ${saved.demo.token}`, 'Content-Type': 'application/json' };
  const [form] = (
    await c.query(
      `SELECT f.id, f.public_id, c.total::int AS total, c.hidden_total = c.total AND c.hidden_seq = c.last_seq AS in_step
         FROM forms f JOIN response_counters c ON c.form_id = f.id
        WHERE f.title = 'Customer feedback' AND f.public_id = ANY($1::text[]) ORDER BY f.created_at LIMIT 1`,
      [saved.demo.forms],
    )
  ).rows;
  out.push(`form ${form.public_id}: ${form.total} responses, hidden_counts in step: ${form.in_step}`);
  log(out.at(-1));
  if (!form.in_step) {
    // An earlier run's writes by the build before: recount with BENCH_DIST's own code, timed.
    const { dataSourceOptions } = require(join(BUILDS[1].dist, 'database', 'data-source.js'));
    const { ResponseStatsRepository } = require(join(BUILDS[1].dist, 'summaries', 'response-stats.repository.js'));
    const { DataSource } = require('typeorm');
    const ds = new DataSource(dataSourceOptions(db.url, 2, false));
    await ds.initialize();
    t0 = performance.now();
    await ds.transaction((tx) => new ResponseStatsRepository().recomputeResponseStats(tx, form.id));
    await ds.destroy();
    out.push(`recomputeResponseStats() of the form: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    log(out.at(-1));
  }

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

  // --- the filtered list, builds alternating call by call -----------------------------------------
  const servers = [];
  try {
    for (const b of BUILDS) servers.push(await start(b));
    out.push('', '| list_responses first page, where | before p50 (ms) | after p50 (ms) | total | load |');
    out.push('| --- | ---: | ---: | ---: | ---: |');
    for (const value of ['spring', 'pilot']) {
      const args = { publicId: form.public_id, where: { hidden: 'campaign', op: 'equals', value }, limit: 200 };
      const first = await Promise.all(servers.map((s) => call(s, 'list_responses', args)));
      const [a, b] = first.map((f) => f.body);
      const [{ n }] = (
        await c.query(
          `SELECT count(*)::int AS n FROM responses WHERE form_id = $1 AND seq IS NOT NULL AND hidden @> $2`,
          [form.id, JSON.stringify({ campaign: value })],
        )
      ).rows;
      if (a.total !== n || b.total !== n || JSON.stringify(a.responses) !== JSON.stringify(b.responses))
        throw new Error(`${value}: totals ${a.total} / ${b.total}, rows ${n}, or the pages differ`);
      const times = servers.map(() => []);
      for (let i = 0; i < OPTS.calls; i++)
        for (const j of i % 2 ? [1, 0] : [0, 1]) times[j].push((await call(servers[j], 'list_responses', args)).ms);
      out.push(
        `| campaign = "${value}" | ${median(times[0]).toFixed(0)} | ${median(times[1]).toFixed(0)} | ${n} | ${os.loadavg()[0].toFixed(1)} |`,
      );
      log(out.at(-1));
    }
  } finally {
    for (const s of servers) await s.stop();
  }

  // --- writes, one instance at a time ----------------------------------------------------------------
  const server0 = await start(BUILDS[1]);
  const answers = lib.sampleAnswers((await call(server0, 'get_form', { publicId: form.public_id })).body);
  await server0.stop();
  let n = 0;
  const body = () =>
    JSON.stringify({
      publicId: form.public_id,
      answers,
      hidden: { campaign: OPTS.unique ? `u${process.pid}-${n++}` : `c${n++ % 50}` },
    });
  const waiting = async () =>
    Number((await c.query('SELECT count(*) AS n FROM responses WHERE seq IS NULL')).rows[0].n);
  const lsn = async () => (await c.query('SELECT pg_current_wal_lsn()::text AS l')).rows[0].l;
  const rows = [];
  for (let round = 0; round <= OPTS.rounds; round++) {
    for (const build of round % 2 ? [...BUILDS].reverse() : BUILDS) {
      const s = await start(build);
      try {
        await c.query('CHECKPOINT'); // full-page images alike for both
        const l0 = await lsn();
        const seconds = round === 0 ? OPTS.warmup : OPTS.duration;
        const result = await lib.loadRun(
          {
            url: `${s.base}/create_response`,
            connections: OPTS.connections,
            duration: seconds,
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
        const row = { round, build: build.name, ...fig, walPer: wal / fig.total, load: os.loadavg()[0] };
        if (fig.problems.length) log(`${build.name}: ${fig.problems.join('; ')}`);
        if (round > 0) rows.push(row);
        log(
          `round ${round} ${build.name}: ${fig.rps.toFixed(0)} req/s, server ${fig.cpuPerReq.toFixed(3)} ms/req, postgres ${fig.pgPerReq.toFixed(3)} ms/req, WAL ${row.walPer.toFixed(0)} B/response, other ${fig.otherPct.toFixed(0)}%, load ${row.load.toFixed(1)}`,
        );
      } finally {
        await s.stop();
      }
    }
  }
  out.push(
    '',
    `create_response with a hidden campaign value (${OPTS.unique ? 'a new value each' : 'one of 50'}), ${OPTS.rounds} rounds of ${OPTS.duration} s at ${OPTS.connections} connections, medians:`,
    '',
    '| build | req/s | server CPU ms/req | PostgreSQL CPU ms/req | WAL bytes/response | rounds (server / postgres / WAL) |',
    '| --- | ---: | ---: | ---: | ---: | --- |',
  );
  for (const b of BUILDS) {
    const rs = rows.filter((r) => r.build === b.name);
    const m = (k) => median(rs.map((r) => r[k]));
    out.push(
      `| ${b.name} | ${m('rps').toFixed(0)} | ${m('cpuPerReq').toFixed(3)} | ${m('pgPerReq').toFixed(3)} | ${m('walPer').toFixed(0)} | ${rs.map((r) => `${r.cpuPerReq.toFixed(3)} / ${r.pgPerReq.toFixed(3)} / ${r.walPer.toFixed(0)}`).join('; ')} |`,
    );
  }
  load();
  out.push('', `load average (1 min) at the start and end: ${loads.map((l) => l.toFixed(1)).join(', ')}`);
  await c.end();
  process.stdout.write(`${out.join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});

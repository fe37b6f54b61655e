'use strict';
/**
 * What observability costs (issue 53): get_form and create_response throughput of three builds of
 * the same service, side by side in one run: metrics off (no METRICS_*), metrics on (METRICS_PORT,
 * scraped every 5 s as Prometheus would), and every request traced too (OTEL_EXPORTER_OTLP_ENDPOINT
 * to a local sink that takes the exports; the default sampler traces every request). Targets:
 * metrics on keeps at least 95% of the off throughput, traced at least 85%.
 * Run with `npm run bench:metrics` (builds first); BENCH_DURATION, BENCH_ROUNDS, BENCH_CONNECTIONS
 * as in bench/lib.js. Rounds alternate (balanced), so that a drifting machine hits all alike.
 */
const { spawn } = require('node:child_process');
const lib = require('./lib');
const { CLI, MAIN } = lib;
const { COUNTING_LIMITS, log, loadOptions, requireBuilt, freePort, cleanEnv, serviceEnv, Server, startRun } = lib;
const { migrateAndSeed, Teardown, runMain, loadTarget, figures, alternateRounds, roundLog, meanRow } = lib;
const { f0, f1, f2, noiseLine, machineLine, writeReport } = lib;

const OPTS = {
  ...loadOptions({ connections: 50, rounds: 3 }),
  redisUrl: process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379',
};
const TARGETS = { metrics: 0.95, traced: 0.85 };
const teardown = new Teardown();

/** A sink for the OTLP exports: takes each body and answers 200, in a process of its own. */
function startSink(port) {
  const code = `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => s.writeHead(200, { 'content-type': 'application/json' }).end('{}')); }).listen(${port}, '127.0.0.1')`;
  const proc = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
  return { name: 'otlp sink', stop: async () => void proc.kill('SIGTERM') };
}

async function main() {
  const { ts, database } = startRun('formwork_bench_metrics', OPTS);
  teardown.database = database;
  teardown.onSignals('stopping servers and dropping the database');
  requireBuilt([CLI, MAIN], 'bench:metrics');
  const loadBefore = require('node:os').loadavg();
  const { version: pgVersion } = await database.create();
  const baseEnv = cleanEnv();
  const { demo } = await migrateAndSeed({
    ...baseEnv,
    DATABASE_URL: database.url,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
  });
  const publicId = demo.forms[0];

  const sinkPort = await freePort();
  teardown.servers.push(startSink(sinkPort));
  const variants = {
    off: {},
    metrics: { METRICS_PORT: String(await freePort()) },
    traced: {
      METRICS_PORT: String(await freePort()),
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sinkPort}`,
      OTEL_SERVICE_NAME: 'formwork-bench',
    },
  };
  const servers = {};
  for (const [name, extra] of Object.entries(variants)) {
    const env = serviceEnv(baseEnv, await freePort(), database.url, {
      ...COUNTING_LIMITS,
      REDIS_URL: OPTS.redisUrl,
      LOG_LEVEL: 'info',
      ...extra,
    });
    // BENCH_CPU_PROF=<dir>: each instance writes a V8 CPU profile there when it stops (where tracing costs).
    const prof = process.env.BENCH_CPU_PROF
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, `--cpu-prof-name=${name}.cpuprofile`]
      : [];
    servers[name] = new Server(name, [...prof, MAIN], env, { stdout: '/dev/null' });
    teardown.servers.push(servers[name]);
  }
  const headers = { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' };
  const url = (s, tool) => `http://127.0.0.1:${s.port}/api/v1/tools/${tool}`;
  for (const s of Object.values(servers)) {
    await s.waitUntil(
      async () => (await lib.post(url(s, 'get_form'), headers, JSON.stringify({ publicId }))).status === 200,
      60_000,
    );
  }
  const form = JSON.parse((await lib.post(url(servers.off, 'get_form'), headers, JSON.stringify({ publicId }))).text);
  const answers = lib.sampleAnswers(form);
  // Prometheus' scrapes (every 5 s) while the load runs, on the instances that serve /metrics.
  const scraping = setInterval(() => {
    for (const [name, extra] of Object.entries(variants))
      if (extra.METRICS_PORT)
        fetch(`http://127.0.0.1:${extra.METRICS_PORT}/metrics`).then(
          (r) => r.text(),
          () => log(`${name}: a scrape failed`),
        );
  }, 5000);
  teardown.closers.add(async () => clearInterval(scraping));

  const report = [
    `# Metrics and tracing: cost (${ts})`,
    '',
    machineLine(pgVersion, loadBefore),
    `- ${OPTS.rounds} rounds of ${OPTS.duration} s, ${OPTS.connections} connections, balanced order.`,
    '',
  ];
  const problems = [];
  const verdicts = [];
  for (const [tool, args] of [
    ['get_form', { publicId }],
    ['create_response', { publicId, answers }],
  ]) {
    const targets = Object.entries(servers).map(([name, server]) => ({
      name,
      server,
      url: url(server, tool),
      headers,
      body: JSON.stringify(args),
    }));
    const rows = [];
    await alternateRounds(targets, OPTS, {
      balanced: true,
      measure: async (t, seconds) =>
        figures(
          await loadTarget(t, seconds, {
            connections: OPTS.connections,
            dbName: database.name,
            alsoOurs: ['redis-server'],
          }),
        ),
      ...roundLog(
        { ...OPTS },
        {
          label: (t) => `${tool} ${t.name}`,
          fields: (t) => ({ server: t.name }),
          line: (fig) => `${f0(fig.rps)} req/s, p99 ${f1(fig.p99)} ms`,
          problems,
          rows,
        },
      ),
    });
    const mean = Object.fromEntries(
      Object.keys(servers).map((name) => [
        name,
        meanRow(
          rows.filter((r) => r.server === name),
          ['rps', 'p50', 'p99', 'cpuPerReq', 'otherPct'],
        ),
      ]),
    );
    report.push(
      `## ${tool}`,
      '',
      '| Round | Variant | req/s | p50 (ms) | p99 (ms) | server CPU ms/req |',
      '| --- | --- | ---: | ---: | ---: | ---: |',
    );
    for (const r of rows)
      report.push(`| ${r.round} | ${r.server} | ${f0(r.rps)} | ${f1(r.p50)} | ${f1(r.p99)} | ${f2(r.cpuPerReq)} |`);
    for (const [name, m] of Object.entries(mean))
      report.push(`| mean | ${name} | ${f0(m.rps)} | ${f1(m.p50)} | ${f1(m.p99)} | ${f2(m.cpuPerReq)} |`);
    report.push('');
    for (const [name, target] of Object.entries(TARGETS)) {
      const ratio = mean[name].rps / mean.off.rps;
      const line = `${tool}, ${name} / off: ${f2(ratio)} (target at least ${target}): ${ratio >= target ? 'PASS' : 'FAIL'}`;
      verdicts.push(line);
      // The server's own CPU per request: what a CPU-bound instance would keep, less swayed by the
      // other processes of a shared machine than req/s.
      const byCpu = mean.off.cpuPerReq / mean[name].cpuPerReq;
      report.push(`- ${line}`, `- ${tool}, ${name} / off by server CPU per request: ${f2(byCpu)}`);
    }
    report.push(`- ${noiseLine(rows, (r) => `${r.server} round ${r.round}`)}`, '');
  }
  if (problems.length) report.push('## Problems', '', ...problems.map((p) => `- ${p}`), '');
  const path = writeReport(`metrics-${ts}.md`, report.join('\n'));
  log(`report: ${path}`);
  for (const v of verdicts) log(v);
  if (problems.length) throw new Error(`${problems.length} problem(s): ${problems[0]}`);
}

runMain(main, teardown);

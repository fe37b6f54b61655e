'use strict';
/**
 * get_form over MCP, on each protocol era, against get_form over REST, on one Formwork instance in
 * one run: the cost of the MCP connector (the SDK's server and transport, per request) on top of the
 * tool call. Run with `npm run bench:mcp` (builds first). See bench/README.md.
 *
 * 1. creates, migrates and seeds a fresh database with the CLI (as bench/get-form.js);
 * 2. starts one Formwork in production configuration, as bench/get-form.js does (dist/src/main.js,
 *    NODE_ENV=production, LOG_LEVEL=info with its standard output to /dev/null or BENCH_SERVER_LOG,
 *    both budgets counted in Redis at BENCH_REDIS_URL, limits raised so that they count but never
 *    refuse);
 * 3. warms each up, then alternates REST, MCP 2025, MCP 2026, REST... (autocannon, BENCH_ROUNDS
 *    rounds of BENCH_DURATION s, BENCH_CONNECTIONS connections, 50 by default):
 *    - rest:     POST /api/v1/tools/get_form {"publicId"};
 *    - mcp-2025: POST /mcp {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_form",...}}
 *      with the headers a 2025-11-25 client sends after initialize (Accept, MCP-Protocol-Version);
 *    - mcp-2026: the same call as a 2026-07-28 client sends it (no initialize: the version and the
 *      client's capabilities in params._meta; MCP-Protocol-Version, Mcp-Method and Mcp-Name headers);
 * 4. writes the table, the ratio of each era to REST (target >= BENCH_TARGET, 0.8) and the server
 *    CPU that MCP adds per call to bench/results/mcp-<timestamp>.md;
 * 5. with BENCH_PROFILE=1, profiles a fresh Formwork over one round of each route (load window
 *    only) and adds the hottest functions and packages to the report (profiles saved beside it).
 *
 * Exit code: 0 whether the ratio passes or not; 1 when something broke.
 */
const os = require('node:os');
const { mkdirSync, readFileSync, renameSync } = require('node:fs');
const { join, relative } = require('node:path');
const cpuProfile = require('./cpu-profile');
const lib = require('./lib');
const {
  CLI,
  MAIN,
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
  target: envNumber('BENCH_TARGET', 0.8),
  redisUrl: process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379',
  serverLog: process.env.BENCH_SERVER_LOG || '/dev/null',
  profile: envFlag('BENCH_PROFILE'),
};
const ROOT = join(__dirname, '..');
const RESULTS = join(__dirname, 'results');
const teardown = new Teardown();
const post = (url, headers, body) => lib.post(url, headers, body, 5_000);

async function main() {
  const { started, ts, database } = startRun('formwork_bench_mcp', OPTS);
  const { name: dbName, url: dbUrl } = database;
  const loadBefore = os.loadavg();
  const problems = [];
  teardown.onSignals('stopping the server and dropping the database');
  requireBuilt([CLI, MAIN], 'bench:mcp');

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

  const port = await freePort();
  // Production configuration, as bench/get-form.js: info logs (one access line per request), Redis budgets.
  const fwEnv = serviceEnv(baseEnv, port, dbUrl, {
    ...COUNTING_LIMITS,
    LOG_LEVEL: 'info',
    REDIS_URL: OPTS.redisUrl,
  });
  const formwork = new Server('formwork', [MAIN], fwEnv, { stdout: OPTS.serverLog });
  teardown.servers.push(formwork);
  const auth = { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' };
  const targets = [
    {
      name: 'rest',
      server: formwork,
      url: `http://127.0.0.1:${port}/api/v1/tools/get_form`,
      headers: auth,
      body: JSON.stringify({ publicId }),
    },
    {
      name: 'mcp-2025',
      server: formwork,
      url: `http://127.0.0.1:${port}/mcp`,
      headers: { ...auth, Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-11-25' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_form', arguments: { publicId } },
      }),
    },
    {
      name: 'mcp-2026',
      server: formwork,
      url: `http://127.0.0.1:${port}/mcp`,
      headers: {
        ...auth,
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'get_form',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'get_form',
          arguments: { publicId },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    },
  ];
  const eras = targets.slice(1).map((t) => t.name);

  // All must answer the same form before the load.
  await formwork.waitUntil(
    async () => (await post(targets[0].url, targets[0].headers, targets[0].body)).status === 200,
  );
  const rest = JSON.parse((await post(targets[0].url, targets[0].headers, targets[0].body)).text);
  for (const t of targets.slice(1)) {
    const mcpAnswer = await post(t.url, t.headers, t.body);
    const mcp = JSON.parse(mcpAnswer.text);
    if (mcpAnswer.status !== 200 || JSON.stringify(mcp.result?.structuredContent) !== JSON.stringify(rest)) {
      throw new Error(
        `/mcp (${t.name}) did not answer get_form as REST does: ${mcpAnswer.status} ${mcpAnswer.text.slice(0, 500)}`,
      );
    }
  }
  log(`both answer form ${publicId} (${rest.blocks.length} blocks)`);

  const ready = await (await fetch(`http://127.0.0.1:${port}/readyz`)).json();
  if (ready.rateLimits !== 'shared') {
    throw new Error(`formwork does not count its budgets in Redis at ${OPTS.redisUrl}: ${JSON.stringify(ready)}`);
  }

  const cannon = (t, seconds) =>
    loadTarget(t, seconds, { connections: OPTS.connections, dbName, alsoOurs: ['redis-server'] });
  const rows = [];
  await alternateRounds(targets, OPTS, {
    measure: async (t, seconds) => {
      const fig = figures(await cannon(t, seconds));
      formwork.assertAlive();
      return fig;
    },
    ...roundLog(OPTS, {
      label: (t) => t.name,
      fields: (t) => ({ server: t.name }),
      line: (fig) =>
        `${f0(fig.rps)} req/s, p50 ${f1(fig.p50)} ms, p99 ${f1(fig.p99)} ms, server CPU ${f3(fig.cpuPerReq)} ms/req`,
      problems,
      rows,
    }),
  });

  // --- optional CPU profiles (a fresh Formwork, each route's load window only; not in the figures) ---
  const profiles = [];
  if (OPTS.profile) {
    await formwork.stop();
    teardown.servers.splice(teardown.servers.indexOf(formwork), 1);
    mkdirSync(RESULTS, { recursive: true });
    const out = join(RESULTS, `mcp-${ts}.cpuprofile`);
    const profPort = await freePort();
    const profiled = new Server(
      'formwork (profiled)',
      ['-r', join(__dirname, 'cpu-profile-hook.js'), MAIN],
      // Standard output piped: the hook says there when it has written a profile.
      { ...fwEnv, PORT: String(profPort), BENCH_CPU_PROFILE_OUT: out },
    );
    teardown.servers.push(profiled);
    const onPort = (t) => ({ ...t, server: profiled, url: t.url.replace(`:${port}/`, `:${profPort}/`) });
    await profiled.waitUntil(async () => (await post(onPort(targets[0]).url, auth, targets[0].body)).status === 200);
    for (const t of targets.map(onPort)) {
      log(`profiling ${t.name}: ${OPTS.warmup} s warm-up, then ${OPTS.duration} s profiled`);
      await cannon(t, OPTS.warmup);
      profiled.proc.kill('SIGUSR2');
      const pf = figures(await cannon(t, OPTS.duration));
      profiled.output = '';
      profiled.proc.kill('SIGUSR2');
      await profiled.waitUntil(async () => profiled.output.includes('cpu-profile-written'), 30_000);
      const file = out.replace(/\.cpuprofile$/, `-${t.name}.cpuprofile`);
      renameSync(out, file);
      const summary = cpuProfile.summarize(JSON.parse(readFileSync(file, 'utf8')), 25);
      profiles.push(
        [
          `### ${t.name}`,
          '',
          `${f0(pf.rps)} req/s while profiled (${pf.total} requests); ${f3(summary.busyMs / (pf.total + pf.non2xx || 1))} ms of sampled CPU per request on the main thread. Profile: \`${relative(ROOT, file)}\`.`,
          '',
          cpuProfile.toMarkdown(summary),
        ].join('\n'),
      );
    }
    await profiled.stop();
  }

  const measured = [...rows];
  const means = {};
  for (const name of targets.map((t) => t.name)) {
    means[name] = meanRow(
      measured.filter((r) => r.server === name),
      ['rps', 'p50', 'p99', 'cpuPct', 'cpuPerReq', 'otherPct'],
    );
    rows.push({ round: 'mean', server: name, ...means[name] });
  }
  const ratios = Object.fromEntries(eras.map((name) => [name, means[name].rps / means.rest.rps]));
  const ratio = Math.min(...Object.values(ratios));
  const outcome = problems.length ? 'NOT VALID, see Problems' : ratio >= OPTS.target ? 'PASS' : 'FAIL';
  const table = [
    '| Round | Route | req/s | p50 (ms) | p99 (ms) | 2xx | non-2xx | errors | server CPU ms/req | other processes (% of a core) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.round} | ${r.server} | ${f0(r.rps)} | ${f1(r.p50)} | ${f1(r.p99)} | ${r.total ?? ''} | ${r.non2xx ?? ''} | ${r.errors ?? ''} | ${f3(r.cpuPerReq)} | ${f0(r.otherPct)} |`,
    ),
  ].join('\n');
  const md = [
    `# get_form over MCP (each protocol era) against REST, ${started.toISOString()}`,
    '',
    `Ratios to rest (mean req/s): ${eras.map((name) => `${name} **${f2(ratios[name])}**`).join(', ')} — target >= ${OPTS.target} for each: **${outcome}**`,
    '',
    `Server CPU per call: rest ${f3(means.rest.cpuPerReq)} ms; ${eras
      .map(
        (name) =>
          `${name} ${f3(means[name].cpuPerReq)} ms (adds ${f3(means[name].cpuPerReq - means.rest.cpuPerReq)} ms)`,
      )
      .join('; ')}.`,
    '',
    noiseLine(measured, (r) => `${r.round} ${r.server}`, 'the ratio is less reliable, '),
    '',
    table,
    '',
    `- rest: \`POST /api/v1/tools/get_form\`; mcp-2025 and mcp-2026: \`POST /mcp\` with \`tools/call\` of get_form as a 2025-11-25 client (after initialize) and a 2026-07-28 client (stateless, \`_meta\` and Mcp-* headers) send it. One Formwork in production configuration: NODE_ENV=production, LOG_LEVEL=info (standard output to ${OPTS.serverLog}), both budgets counted in Redis at ${OPTS.redisUrl}.`,
    `- Load: autocannon ${autocannonVersion()}, ${OPTS.connections} connections, ${OPTS.duration} s per round, ${OPTS.rounds} rounds alternating ${targets.map((t) => t.name).join(', ')}, after ${OPTS.warmup} s of warm-up each.`,
    machineLine(pgVersion, loadBefore),
    ...(problems.length ? ['', '## Problems', '', ...problems.map((p) => `- ${p}`)] : []),
    ...(profiles.length
      ? [
          '',
          '## CPU profiles (BENCH_PROFILE=1)',
          '',
          'A fresh Formwork after the measured rounds, profiled over one round of each route (boot and warm-up excluded); profiling slows it down. Self time.',
          '',
          profiles.join('\n\n'),
        ]
      : []),
    '',
  ].join('\n');
  log(`written ${writeReport(`mcp-${ts}.md`, md)}`);
  log(`ratios to rest: ${eras.map((name) => `${name} ${f2(ratios[name])}`).join(', ')}: ${outcome}`);
  if (problems.length) process.exitCode = 1;
}

runMain(main, teardown);

'use strict';
/**
 * get_form over MCP against get_form over REST, on one Formwork instance in one run: the cost of
 * the MCP connector (the SDK's server and transport, per request) on top of the tool call. Run with
 * `npm run bench:mcp` (builds first). See bench/README.md.
 *
 * 1. creates, migrates and seeds a fresh database with the CLI (as bench/get-form.js);
 * 2. starts one Formwork (dist/src/main.js, NODE_ENV=production, rate limits raised so that they
 *    count but never refuse);
 * 3. warms both up, then alternates REST, MCP, REST, MCP... (autocannon, BENCH_ROUNDS rounds of
 *    BENCH_DURATION s, BENCH_CONNECTIONS connections, 50 by default):
 *    - rest: POST /api/v1/tools/get_form {"publicId"};
 *    - mcp:  POST /mcp {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_form",...}}
 *      with the headers an MCP client sends (Accept, MCP-Protocol-Version);
 * 4. writes the table and the ratio mcp/rest (target >= BENCH_TARGET, 0.8) to
 *    bench/results/mcp-<timestamp>.md.
 *
 * Exit code: 0 whether the ratio passes or not; 1 when something broke.
 */
const os = require('node:os');
const lib = require('./lib');
const {
  CLI,
  MAIN,
  COUNTING_LIMITS,
  log,
  envNumber,
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

const OPTS = { ...loadOptions({ connections: 50, rounds: 3 }), target: envNumber('BENCH_TARGET', 0.8) };
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
  const formwork = new Server('formwork', [MAIN], serviceEnv(baseEnv, port, dbUrl, COUNTING_LIMITS));
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
      name: 'mcp',
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
  ];

  // Both must answer the same form before the load.
  await formwork.waitUntil(
    async () => (await post(targets[0].url, targets[0].headers, targets[0].body)).status === 200,
  );
  const rest = JSON.parse((await post(targets[0].url, targets[0].headers, targets[0].body)).text);
  const mcpAnswer = await post(targets[1].url, targets[1].headers, targets[1].body);
  const mcp = JSON.parse(mcpAnswer.text);
  if (mcpAnswer.status !== 200 || JSON.stringify(mcp.result?.structuredContent) !== JSON.stringify(rest)) {
    throw new Error(`/mcp did not answer get_form as REST does: ${mcpAnswer.status} ${mcpAnswer.text.slice(0, 500)}`);
  }
  log(`both answer form ${publicId} (${rest.blocks.length} blocks)`);

  const rows = [];
  await alternateRounds(targets, OPTS, {
    measure: async (t, seconds) => {
      const fig = figures(await loadTarget(t, seconds, { connections: OPTS.connections, dbName }));
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

  const measured = [...rows];
  const means = {};
  for (const name of ['rest', 'mcp']) {
    means[name] = meanRow(
      measured.filter((r) => r.server === name),
      ['rps', 'p50', 'p99', 'cpuPct', 'cpuPerReq', 'otherPct'],
    );
    rows.push({ round: 'mean', server: name, ...means[name] });
  }
  const ratio = means.mcp.rps / means.rest.rps;
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
    `# get_form over MCP against REST, ${started.toISOString()}`,
    '',
    `Ratio mcp/rest (mean req/s): **${f2(ratio)}** — target >= ${OPTS.target}: **${outcome}**`,
    '',
    noiseLine(measured, (r) => `${r.round} ${r.server}`, 'the ratio is less reliable, '),
    '',
    table,
    '',
    '- rest: `POST /api/v1/tools/get_form`; mcp: `POST /mcp` with `tools/call` of get_form (a fresh SDK server and transport per request, stateless). One Formwork, NODE_ENV=production, LOG_LEVEL=warn, rate limits counting.',
    `- Load: autocannon ${autocannonVersion()}, ${OPTS.connections} connections, ${OPTS.duration} s per round, ${OPTS.rounds} rounds alternating rest, mcp, after ${OPTS.warmup} s of warm-up each.`,
    machineLine(pgVersion, loadBefore),
    ...(problems.length ? ['', '## Problems', '', ...problems.map((p) => `- ${p}`)] : []),
    '',
  ].join('\n');
  log(`written ${writeReport(`mcp-${ts}.md`, md)}`);
  log(`ratio mcp/rest ${f2(ratio)}: ${outcome}`);
  if (problems.length) process.exitCode = 1;
}

runMain(main, teardown);

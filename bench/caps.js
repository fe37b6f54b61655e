'use strict';
/**
 * Caps and quotas on the batched insert (issue 47): create_response throughput on a form with a
 * cap and three quotas against the same form without, side by side in one run. Run with
 * `npm run bench:caps`.
 *
 * 1. creates a fresh database, migrates it and seeds it with the CLI's demo; copies the demo's
 *    form twice: "plain", and "capped" with maxResponses 1,000,000,000 and three quotas that every
 *    submission matches (so each one locks and counts four counter rows, the most work a capped
 *    submission does);
 * 2. warms up, then alternates the two (BENCH_ROUNDS rounds of BENCH_DURATION s, BENCH_CONNECTIONS
 *    connections; every other round in reverse order);
 * 3. checks that the counters equal the stored rows (nothing over, nothing lost), prints a Markdown
 *    report (target: capped >= BENCH_TARGET x plain's req/s, 0.8 by default) and writes it to
 *    bench/results/caps-<ts>.md; drops the database.
 *
 * Exit code: 0 whether the target is met or not; 1 when the run is not valid.
 */
const os = require('node:os');
const { Client } = require('pg');
const lib = require('./lib');

const { CLI, MAIN, COUNTING_LIMITS, log, envNumber, loadOptions, requireBuilt, freePort, cleanEnv, serviceEnv } = lib;
const { Server, startRun, migrateAndSeed, Teardown, runMain, loadRun, figures, alternateRounds, roundLog, mean } = lib;
const { f0, f1, f2, f3, noiseLine, machineLine, writeReport, post } = lib;

const OPTS = { ...loadOptions({ connections: 50, rounds: 4 }), target: envNumber('BENCH_TARGET', 0.8) };
const teardown = new Teardown();

async function main() {
  const { started, ts, database } = startRun('formwork_bench_caps', OPTS);
  const dbUrl = database.url;
  const loadBefore = os.loadavg();
  requireBuilt([CLI, MAIN], 'bench:caps');
  teardown.onSignals('stopping servers and dropping the database');
  teardown.database = database;
  const { version: pgVersion } = await database.create([]);
  const baseEnv = cleanEnv();
  const { demo } = await migrateAndSeed({
    ...baseEnv,
    DATABASE_URL: dbUrl,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    BOOTSTRAP_DEMO: 'false',
  });
  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  teardown.closers.add(() => db.end());

  const port = await freePort();
  const server = new Server('formwork', [MAIN], serviceEnv(baseEnv, port, dbUrl, COUNTING_LIMITS));
  teardown.servers.push(server);
  const url = (tool) => `http://127.0.0.1:${port}/api/v1/tools/${tool}`;
  const headers = { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' };
  const call = async (tool, args) => {
    const r = await post(url(tool), headers, JSON.stringify(args));
    if (r.status !== 200) throw new Error(`${tool} answered ${r.status}: ${r.text.slice(0, 500)}`);
    return JSON.parse(r.text);
  };
  await server.waitUntil(
    async () => (await post(url('get_form'), headers, JSON.stringify({ publicId: demo.forms[0] }))).status === 200,
    60_000,
  );

  // --- the two forms: the demo's blocks, with and without a cap and three quotas --------------------
  const demoForm = await call('get_form', { publicId: demo.forms[0] });
  const blocks = demoForm.blocks.map(({ id: _id, choices, ...b }) => ({
    ...b,
    ...(choices ? { choices: choices.map((c) => c.label) } : {}),
  }));
  const forms = [];
  for (const key of ['plain', 'capped']) {
    let made = await call('create_form', { title: `Caps bench ${key}`, blocks });
    if (key === 'capped')
      made = await call('update_form', {
        publicId: made.publicId,
        maxResponses: 1_000_000_000,
        // Conditions every sample answer meets: each submission counts toward the cap and all three.
        quotas: made.blocks
          .filter((b) => b.type !== 'statement')
          .slice(0, 3)
          .map((b, i) => ({ name: `quota ${i + 1}`, limit: 1_000_000_000, when: { block: b.id, op: 'answered' } })),
      });
    await call('publish_form', { publicId: made.publicId });
    const id = (await db.query('SELECT id FROM forms WHERE public_id = $1', [made.publicId])).rows[0].id;
    forms.push({ key, label: key === 'plain' ? 'no cap' : 'cap + 3 quotas', publicId: made.publicId, id, made });
  }
  const answers = lib.sampleAnswers(forms[0].made);
  const capped = forms[1];
  capped.body = JSON.stringify({ publicId: capped.publicId, answers: lib.sampleAnswers(capped.made) });
  forms[0].body = JSON.stringify({ publicId: forms[0].publicId, answers });

  // --- alternating rounds --------------------------------------------------------------------------
  const problems = [];
  const rows = [];
  await alternateRounds(forms, OPTS, {
    measure: async (f, seconds) =>
      figures(
        await loadRun(
          {
            url: url('create_response'),
            connections: OPTS.connections,
            duration: seconds,
            requests: [{ method: 'POST', headers, body: f.body, setupRequest: (req) => ({ ...req }) }],
          },
          { serverPid: server.proc.pid, dbName: database.name, exact: true },
        ),
      ),
    balanced: true,
    ...roundLog(OPTS, {
      label: (f) => f.label,
      fields: (f) => ({ key: f.key, label: f.label }),
      line: (fig) =>
        `${f0(fig.rps)} req/s, p50 ${f1(fig.p50)} ms, p99 ${f1(fig.p99)} ms, server ${f3(fig.cpuPerReq)} ms/req, postgres ${f3(fig.pgPerReq)} ms/req`,
      problems,
      rows,
    }),
  });

  // --- the counters against the rows ---------------------------------------------------------------
  const [stored] = (
    await db.query('SELECT count(*)::int AS n FROM responses WHERE form_id = $1', [capped.id])
  ).rows.map((r) => r.n);
  const counters = (
    await db.query('SELECT name, count FROM response_limits WHERE form_id = $1 ORDER BY name', [capped.id])
  ).rows;
  if (counters.length !== 4 || counters.some((c) => c.count !== stored))
    problems.push(`the capped form has ${stored} rows but its counters say ${JSON.stringify(counters)}`);

  const per = (key, field) => mean(rows.filter((r) => r.key === key).map((r) => r[field]));
  const ratio = per('capped', 'rps') / per('plain', 'rps');
  const pass = ratio >= OPTS.target;
  const outcome = problems.length ? 'NOT VALID, see Problems' : pass ? 'PASS' : 'FAIL';
  const md = [
    `# Caps and quotas on the batched insert, ${started.toISOString()}`,
    '',
    `- create_response on a form with maxResponses and three quotas (each submission counts toward all four) against the same form without: **${f2(ratio)}×** the req/s — target >= ${OPTS.target}×: **${outcome}**`,
    '',
    noiseLine(rows, (r) => `${r.round} ${r.label}`, 'the ratio is less reliable, '),
    '',
    '| Round | Form | req/s | p50 (ms) | p99 (ms) | 2xx | server CPU ms/req | postgres CPU ms/req |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.round} | ${r.label} | ${f0(r.rps)} | ${f1(r.p50)} | ${f1(r.p99)} | ${r.total} | ${f3(r.cpuPerReq)} | ${f3(r.pgPerReq)} |`,
    ),
    '',
    `- Checks: the capped form's four counters each equal its ${stored} stored rows.`,
    `- Load: ${OPTS.connections} connections, ${OPTS.duration} s per round, ${OPTS.rounds} rounds alternating (every other one reversed) after ${OPTS.warmup} s of warm-up each; one instance (dist/), NODE_ENV=production, default pool.`,
    machineLine(pgVersion, loadBefore),
    ...(problems.length ? ['', '## Problems', '', ...problems.map((p) => `- ${p}`)] : []),
    '',
  ].join('\n');
  log(`written ${writeReport(`caps-${ts}.md`, md)}`);
  log(`cap + 3 quotas / none: ${f2(ratio)}x (target >= ${OPTS.target}x: ${outcome})`);
  if (problems.length) {
    log(`BROKEN: ${problems.length} problem(s):\n  ${problems.join('\n  ')}`);
    process.exitCode = 1;
  }
}

runMain(main, teardown);

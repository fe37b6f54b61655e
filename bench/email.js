'use strict';
/**
 * What email notifications cost the write path, and how fast one instance sends, in one run:
 *
 *   write path   create_response's service CPU (the instance's and PostgreSQL's, per response) on a
 *                form one member is notified of (each response: the trigger writes an outbox row
 *                with the response), and on a form nobody is notified of, vs the same without
 *                the trigger at all (disabled for those rounds)              target: ratio <= 1.10
 *   throughput   messages sent per second by one instance to a local SMTP server   target: >= 50/s
 *
 * Usage: npm run bench:email   (builds first; needs PostgreSQL on this machine)
 * Settings: BENCH_DURATION (8 s), BENCH_ROUNDS (4), BENCH_CONNECTIONS (10), BENCH_WARMUP (3 s),
 * BENCH_ADMIN_URL, BENCH_MESSAGES (2000: the backlog sent in the throughput phase).
 *
 * 1. a fresh database formwork_bench_email_<stamp>, migrated and seeded with the CLI's demo;
 * 2. one instance of dist/ without SMTP_URL (messages wait in the outbox: the write path alone);
 *    two identical forms, the demo owner notified of each response of one;
 * 3. rotates baseline (trigger disabled) / without / with (warm-up, then BENCH_ROUNDS rounds each),
 *    CPU from /proc;
 * 4. keeps BENCH_MESSAGES of the queued notifications, restarts the instance with SMTP_URL set to
 *    an SMTP server in this process (smtp-server, no TLS), and times until all are sent;
 * 5. prints the figures (Markdown) and writes them to bench/results/email-<stamp>.md.
 */
const { join } = require('node:path');
const { mkdirSync, writeFileSync } = require('node:fs');
const { Client } = require('pg');
const { SMTPServer } = require('smtp-server');
const {
  CLI,
  MAIN,
  RESULTS,
  log,
  envNumber,
  loadOptions,
  requireBuilt,
  runJson,
  freePort,
  serviceEnv,
  Server,
  post,
  startRun,
  Teardown,
  runMain,
  loadRun,
  median,
  BENCH_WEBHOOK_SECRET_KEY,
} = require('./lib');

const OPTS = {
  ...loadOptions({ connections: 10, rounds: 4 }),
  duration: envNumber('BENCH_DURATION', 8),
  warmup: envNumber('BENCH_WARMUP', 3),
  messages: envNumber('BENCH_MESSAGES', 2000, { integer: true, min: 1 }),
};
const CPU_TARGET = 1.1;
const RATE_TARGET = 50;
const teardown = new Teardown();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const { ts, database } = startRun('formwork_bench_email', OPTS);
  const { name: dbName, url: dbUrl } = database;
  teardown.onSignals('stopping the servers and dropping the database');
  requireBuilt([CLI, MAIN], 'bench:email');
  teardown.database = database;
  await database.create();
  const baseEnv = { PATH: process.env.PATH, HOME: process.env.HOME, WEBHOOK_SECRET_KEY: BENCH_WEBHOOK_SECRET_KEY };
  const cliEnv = { ...baseEnv, DATABASE_URL: dbUrl, NODE_ENV: 'production', LOG_LEVEL: 'warn' };
  await runJson('migrate (CLI)', [CLI, 'migrate', '--json'], cliEnv);
  const demo = await runJson('demo (CLI)', [CLI, 'demo', '--json'], cliEnv);

  const start = async (extra) => {
    const server = new Server(
      'formwork',
      [MAIN],
      serviceEnv(baseEnv, await freePort(), dbUrl, { RATE_LIMIT_ENABLED: 'false', ...extra }),
    );
    teardown.servers.push(server);
    await server.waitUntil(() => fetch(`http://127.0.0.1:${server.port}/readyz`).then((r) => r.ok));
    return server;
  };
  let server = await start({});
  const call = async (tool, body) => {
    const r = await post(
      `http://127.0.0.1:${server.port}/api/v1/tools/${tool}`,
      { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' },
      JSON.stringify(body),
    );
    if (r.status !== 200) throw new Error(`${tool} answered ${r.status}: ${r.text}`);
    return JSON.parse(r.text);
  };
  const blocks = [
    { type: 'short_text', title: 'Name', required: true },
    { type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Green', 'Blue'] },
  ];
  const target = async (name) => {
    const form = await call('create_form', { title: `Bench ${name}`, blocks });
    await call('publish_form', { publicId: form.publicId });
    return {
      name,
      form,
      body: JSON.stringify({
        publicId: form.publicId,
        answers: { [form.blocks[0].id]: 'Ada', [form.blocks[1].id]: 'Green' },
      }),
    };
  };
  const notified = await target('with');
  const quiet = await target('without');
  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  teardown.closers.add(() => db.end());
  await db.query(
    `INSERT INTO email_subscriptions (workspace_id, form_id, user_id, mode)
     SELECT f.workspace_id, f.id, m.user_id, 'each' FROM forms f JOIN memberships m ON m.workspace_id = f.workspace_id
      WHERE f.public_id = $1 AND m.role = 'owner'`,
    [notified.form.publicId],
  );

  const load = (t, seconds) =>
    loadRun(
      {
        url: `http://127.0.0.1:${server.port}`,
        connections: OPTS.connections,
        duration: seconds,
        requests: [
          {
            method: 'POST',
            path: '/api/v1/tools/create_response',
            headers: { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' },
            body: t.body,
          },
        ],
      },
      { serverPid: server.proc.pid, dbName },
    );
  const perResponse = { with: [], without: [], baseline: [] };
  const baseline = { ...quiet, name: 'baseline' };
  const trigger = (on) => db.query(`ALTER TABLE responses ${on ? 'ENABLE' : 'DISABLE'} TRIGGER "TRG_responses_email"`);
  for (const t of [quiet, notified]) await load(t, OPTS.warmup);
  const sides = [baseline, quiet, notified];
  for (let round = 0; round < OPTS.rounds; round++) {
    for (const t of [...sides.slice(round % 3), ...sides.slice(0, round % 3)]) {
      await db.query('VACUUM (ANALYZE)');
      await trigger(t !== baseline);
      const r = await load(t, OPTS.duration);
      const ok = r['2xx'];
      if (r.non2xx) throw new Error(`${r.non2xx} answers were not 2xx in a ${t.name} round`);
      const cpuUs = ((r.cpu.server + r.cpu.backends) * 1000) / ok;
      perResponse[t.name].push(cpuUs);
      log(`round ${round + 1} ${t.name}: ${ok} responses, ${cpuUs.toFixed(0)} us service CPU each`);
    }
  }
  const queued = (await db.query(`SELECT count(*)::int AS n FROM email_outbox`)).rows[0].n;
  await trigger(true);
  const withUs = median(perResponse.with);
  const withoutUs = median(perResponse.without);
  const baseUs = median(perResponse.baseline);
  const ratio = withUs / baseUs;

  // Throughput: BENCH_MESSAGES of the notifications queued, sent to a local server.
  await server.stop();
  await db.query(
    `DELETE FROM email_outbox WHERE id NOT IN (SELECT id FROM email_outbox ORDER BY created_at LIMIT $1)`,
    [OPTS.messages],
  );
  const total = (await db.query(`SELECT count(*)::int AS n FROM email_outbox`)).rows[0].n;
  let accepted = 0;
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    onData: (stream, _session, callback) => {
      stream.on('data', () => undefined);
      stream.on('end', () => {
        accepted++;
        callback();
      });
    },
  });
  const smtpPort = await freePort();
  await new Promise((resolve) => smtp.listen(smtpPort, '127.0.0.1', resolve));
  teardown.closers.add(() => new Promise((resolve) => smtp.close(resolve)));
  const t0 = Date.now();
  server = await start({ SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, MAIL_FROM: 'Bench <bench@example.com>' });
  const ready = Date.now();
  const pending = async () =>
    (await db.query(`SELECT count(*)::int AS n FROM email_outbox WHERE status = 'pending'`)).rows[0].n;
  while ((await pending()) > 0) {
    if (Date.now() - ready > 300_000) throw new Error('the backlog was not sent within 300 s');
    await sleep(100);
  }
  const seconds = (Date.now() - ready) / 1000;
  const sent = (await db.query(`SELECT count(*)::int AS n FROM email_outbox WHERE status = 'sent'`)).rows[0].n;
  const rate = sent / seconds;

  const report = [
    `# bench:email, ${ts}`,
    '',
    `Load average at the end: ${require('node:os')
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(', ')} (2 cores shared with other work: CPU per response grows with contention).`,
    '',
    `${OPTS.connections} connections, ${OPTS.rounds} rounds of ${OPTS.duration} s per side; start-up of the sending instance ${((ready - t0) / 1000).toFixed(1)} s (not counted).`,
    '',
    '| figure | value | target |',
    '| --- | --- | --- |',
    `| create_response service CPU, no trigger (median us) | ${baseUs.toFixed(0)} | |`,
    `| create_response service CPU, trigger, nobody notified (median us) | ${withoutUs.toFixed(0)} | ratio ${(withoutUs / baseUs).toFixed(3)} |`,
    `| create_response service CPU, one member notified (median us) | ${withUs.toFixed(0)} | |`,
    `| ratio notified / no trigger | ${ratio.toFixed(3)} | <= ${CPU_TARGET} ${ratio <= CPU_TARGET ? 'met' : 'NOT met'} |`,
    `| notifications queued by the rounds | ${queued} | |`,
    `| messages sent / accepted by the server | ${sent} / ${accepted} of ${total} | all |`,
    `| throughput (messages/s) | ${rate.toFixed(1)} | >= ${RATE_TARGET} ${rate >= RATE_TARGET ? 'met' : 'NOT met'} |`,
    '',
  ].join('\n');
  console.log(report);
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, `email-${ts}.md`), report);
}

runMain(main, teardown);

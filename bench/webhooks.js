'use strict';
/**
 * What webhooks cost the write path, and how fast one instance delivers, in one run:
 *
 *   write path    create_response on a form whose workspace has an active webhook endpoint
 *                 (subscribed to response.created, deliveries running on the same instance)
 *                 vs on a form of a workspace without one              target: p50 with / without <= 1.2x
 *   throughput    events delivered per second by one instance to a local receiver   target: >= 200/s
 *
 * Usage: npm run bench:webhooks   (builds first; needs PostgreSQL on this machine)
 * Settings: BENCH_DURATION (10 s), BENCH_ROUNDS (6), BENCH_CONNECTIONS (10), BENCH_WARMUP (5 s),
 * BENCH_ADMIN_URL, BENCH_EVENTS (5000: events queued for the throughput phase), BENCH_PROFILE=1
 * (after the figures, a backlog and one more round per side with the server's main thread
 * profiled: where its time goes; the delivery thread is not in it; not part of the figures).
 *
 * 1. creates a fresh database formwork_bench_webhooks_<timestamp>, migrates it and seeds the demo
 *    with the CLI; a second Pro workspace and its token come from the CLI too;
 * 2. starts one instance of dist/ (NODE_ENV=production, rate limits off,
 *    WEBHOOKS_ALLOW_PRIVATE_URLS=true so it may post to the receiver on loopback) and the receiver,
 *    which answers 200 "ok": nginx (Debian's; one process, no log), or with BENCH_RECEIVER=node or
 *    without nginx, bench/webhook-receiver.js. A receiver normally runs on another machine; here it
 *    shares the two cores with the instance, and nginx costs them 25 us a request where the Node
 *    receiver costs 66 us (measured on this machine), so the figures are more nearly the instance's;
 * 3. creates the same two-question form in both workspaces, and a webhook endpoint for
 *    response.created in the demo workspace only;
 * 4. alternates without / with (warm-up, then BENCH_ROUNDS rounds, autocannon, exact latencies),
 *    letting the delivery backlog of a "with" round drain before the next round starts;
 * 5. queues BENCH_EVENTS deliveries at once (SQL, as the outbox writes them) and times how long
 *    the instance takes to deliver them all;
 * 6. checks every answer was 200 and every event reached the receiver; prints a Markdown report and
 *    writes it to bench/results/webhooks-<timestamp>.md; stops the processes, drops the database.
 *
 * Exit code: 0 whether the targets are met or not; 1 when the run is not valid.
 */
const { join, relative } = require('node:path');
const {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} = require('node:fs');
const os = require('node:os');
const cpuProfile = require('./cpu-profile');
const { Client } = require('pg');
const {
  CLI,
  MAIN,
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
  figures,
  alternateRounds,
  roundLog,
  mean,
  median,
  f0,
  f1,
  f2,
  f3,
  noiseLine,
  ROOT,
  RESULTS,
  envFlag,
  cpusText,
  loadText,
  autocannonVersion,
  writeReport,
  cpuSnapshot,
  BENCH_WEBHOOK_SECRET_KEY,
} = require('./lib');

const OPTS = {
  ...loadOptions({ connections: 10, rounds: 6 }),
  events: envNumber('BENCH_EVENTS', 5000, { integer: true, min: 1 }),
  profile: envFlag('BENCH_PROFILE'),
  receiver: process.env.BENCH_RECEIVER || 'nginx',
};
if (!['nginx', 'node'].includes(OPTS.receiver)) {
  console.error(`BENCH_RECEIVER must be nginx or node, not ${OPTS.receiver}`);
  process.exit(2);
}
const P50_TARGET = 1.2;
const RATE_TARGET = 200;

const teardown = new Teardown();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const { started, ts, database } = startRun('formwork_bench_webhooks', OPTS);
  const { name: dbName, url: dbUrl } = database;
  const problems = [];
  const notes = [];
  teardown.onSignals('stopping the servers and dropping the database');
  requireBuilt([CLI, MAIN], 'bench:webhooks');
  teardown.database = database;
  await database.create();

  const baseEnv = { PATH: process.env.PATH, HOME: process.env.HOME, WEBHOOK_SECRET_KEY: BENCH_WEBHOOK_SECRET_KEY };
  const cliEnv = { ...baseEnv, DATABASE_URL: dbUrl, NODE_ENV: 'production', LOG_LEVEL: 'warn' };
  await runJson('migrate (CLI)', [CLI, 'migrate', '--json'], cliEnv);
  const demo = await runJson('demo (CLI)', [CLI, 'demo', '--json'], cliEnv);
  await runJson(
    'workspace create (CLI)',
    [
      CLI,
      'workspace',
      'create',
      '--name',
      'Quiet',
      '--slug',
      'quiet',
      '--plan',
      'pro',
      '--owner-email',
      'quiet@example.com',
      '--json',
    ],
    cliEnv,
  );
  const quiet = await runJson(
    'token create (CLI)',
    [CLI, 'token', 'create', '--workspace', 'quiet', '--name', 'bench', '--role', 'admin', '--json'],
    cliEnv,
  );

  const receiver = await startReceiver(await freePort(), notes);
  teardown.servers.push(receiver);
  // With BENCH_PROFILE, the hook is loaded from the start but idle until a profiled round signals it.
  const profileOut = join(RESULTS, `webhooks-${ts}.cpuprofile`);
  if (OPTS.profile) mkdirSync(RESULTS, { recursive: true });
  const server = new Server(
    'formwork',
    [...(OPTS.profile ? ['-r', join(__dirname, 'cpu-profile-hook.js')] : []), MAIN],
    serviceEnv(baseEnv, await freePort(), dbUrl, {
      RATE_LIMIT_ENABLED: 'false',
      WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
      ...(OPTS.profile ? { BENCH_CPU_PROFILE_OUT: profileOut } : {}),
    }),
  );
  teardown.servers.push(server);
  await server.waitUntil(() => fetch(`http://127.0.0.1:${server.port}/readyz`).then((r) => r.ok));
  // The server's CPU profiler, started and stopped by SIGUSR2 (bench/cpu-profile-hook.js).
  const startProfile = () => {
    const written = server.output.split('cpu-profile-written').length;
    server.proc.kill('SIGUSR2');
    return written;
  };
  const stopProfile = async (written, label) => {
    server.proc.kill('SIGUSR2');
    await server.waitUntil(async () => server.output.split('cpu-profile-written').length > written, 30_000);
    const file = profileOut.replace(/\.cpuprofile$/, `-${label}.cpuprofile`);
    renameSync(profileOut, file);
    return { ...cpuProfile.summarize(JSON.parse(readFileSync(file, 'utf8')), 20), file };
  };

  const call = async (token, tool, body) => {
    const r = await post(
      `http://127.0.0.1:${server.port}/api/v1/tools/${tool}`,
      { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      JSON.stringify(body),
    );
    if (r.status !== 200) throw new Error(`${tool} answered ${r.status}: ${r.text}`);
    return JSON.parse(r.text);
  };
  const blocks = [
    { type: 'short_text', title: 'Name', required: true },
    { type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Green', 'Blue'] },
  ];
  const target = async (name, token) => {
    const form = await call(token, 'create_form', { title: `Bench ${name}`, blocks });
    const body = JSON.stringify({
      publicId: form.publicId,
      answers: { [form.blocks[0].id]: 'Ada', [form.blocks[1].id]: 'Green' },
    });
    return { name, token, body };
  };
  const withHook = await target('with', demo.token);
  const without = await target('without', quiet.token);
  const hook = await call(demo.token, 'create_webhook', {
    url: `http://127.0.0.1:${receiver.port}/hook`,
    events: ['response.created'],
  });

  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  teardown.closers.add(() => db.end());
  const pending = async () =>
    // One count per partial index (due, paused): a count over both statuses would read the whole table
    // every 100 ms, and its CPU would count as the deliveries' PostgreSQL cost.
    (
      await db.query(
        `SELECT ((SELECT count(*) FROM webhook_deliveries WHERE status = 'pending')
              + (SELECT count(*) FROM webhook_deliveries WHERE status = 'paused'))::int AS n`,
      )
    ).rows[0].n;
  const drain = async (timeoutMs) => {
    const until = Date.now() + timeoutMs;
    while ((await pending()) > 0) {
      if (Date.now() > until) return false;
      await sleep(100);
    }
    return true;
  };

  // 1. the write path, with and without an endpoint
  const load = (side, seconds) => {
    const t = side === 'with' ? withHook : without;
    return loadRun(
      {
        url: `http://127.0.0.1:${server.port}`,
        connections: OPTS.connections,
        duration: seconds,
        requests: [
          {
            method: 'POST',
            path: '/api/v1/tools/create_response',
            headers: { Authorization: `Bearer ${t.token}`, 'Content-Type': 'application/json' },
            body: t.body,
          },
        ],
      },
      { serverPid: server.proc.pid, dbName, alsoOurs: [], exact: true },
    );
  };
  const rows = [];
  let created = 0;
  await alternateRounds(['without', 'with'], OPTS, {
    balanced: true,
    measure: async (side, seconds) => {
      if (!(await drain(120_000)))
        problems.push(`the delivery backlog did not drain within 120 s before a ${side} round`);
      // What autovacuum does in production between busy minutes (this machine's server runs with
      // autovacuum off): without it the delivered rows of earlier rounds slow each next round.
      await db.query('VACUUM (ANALYZE)');
      const fig = figures(await load(side, seconds));
      if (side === 'with') {
        created += fig.total + fig.non2xx;
        // How far deliveries fell behind the round, and how soon they caught up.
        const stopped = Date.now();
        fig.pendingAtEnd = await pending();
        if (!(await drain(120_000)))
          problems.push('the delivery backlog did not drain within 120 s after a with round');
        fig.drainS = (Date.now() - stopped) / 1000;
      }
      return fig;
    },
    ...roundLog(OPTS, {
      label: (side) => side,
      fields: (side) => ({ side }),
      line: (fig) =>
        `${f0(fig.rps)} req/s, p50 ${f2(fig.p50)} ms, p99 ${f1(fig.p99)} ms, ${f2(fig.cpuPerReq)} ms CPU/req`,
      problems,
      rows,
    }),
  });
  if (!(await drain(120_000))) problems.push('the delivery backlog did not drain within 120 s after the last round');
  const hookDeliveries = (
    await db.query(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 'delivered')::int AS ok FROM webhook_deliveries WHERE endpoint_id = $1`,
      [hook.id],
    )
  ).rows[0];
  if (hookDeliveries.n < created)
    problems.push(
      `${created} responses were created with the endpoint active, but only ${hookDeliveries.n} deliveries were written`,
    );
  if (hookDeliveries.ok !== hookDeliveries.n)
    problems.push(`${hookDeliveries.n - hookDeliveries.ok} of ${hookDeliveries.n} deliveries were not delivered`);
  notes.push(
    `Write path: ${hookDeliveries.n} events written for the ${created} responses created on the "with" side (rounds and warm-up), ${hookDeliveries.ok} delivered.`,
  );

  // 2. delivery throughput: a backlog queued at once, as the outbox writes it
  const receivedBefore = await receiver.count();
  const [sample] = (
    await db.query(
      `SELECT workspace_id, endpoint_id, event_type, payload FROM webhook_deliveries WHERE endpoint_id = $1 LIMIT 1`,
      [hook.id],
    )
  ).rows;
  const queue = (prefix) =>
    db.query(
      `INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
       SELECT $1, $2, $6 || g, $3, $4, now() FROM generate_series(1, $5::int) g`,
      [sample.workspace_id, sample.endpoint_id, sample.event_type, sample.payload, OPTS.events, prefix],
    );
  await queue('msg_bench_');
  const cpu0 = cpuSnapshot(dbName);
  const t0 = Date.now();
  if (!(await drain(300_000))) problems.push(`${OPTS.events} queued events were not all delivered within 300 s`);
  const seconds = (Date.now() - t0) / 1000;
  const rate = OPTS.events / seconds;
  const cpu1 = cpuSnapshot(dbName);
  // CPU per delivered event, by process: what one delivery costs this machine, whatever the load.
  const perEvent = (pid) => (cpu1.servers.get(pid) - cpu0.servers.get(pid)) / OPTS.events;
  let pgMs = 0;
  for (const [pid, ms] of cpu1.backends) pgMs += ms - (cpu0.backends.get(pid) || 0);
  const eventCpu = { server: perEvent(server.proc.pid), pg: pgMs / OPTS.events, receiver: perEvent(receiver.proc.pid) };
  const receivedNow = (await receiver.count()) - receivedBefore;
  if (receivedNow < OPTS.events) problems.push(`the receiver got ${receivedNow} of the ${OPTS.events} queued events`);
  log(
    `throughput: ${OPTS.events} events in ${f2(seconds)} s = ${f0(rate)} events/s; CPU per event: server ${f3(eventCpu.server)} ms, PostgreSQL ${f3(eventCpu.pg)} ms, receiver ${f3(eventCpu.receiver)} ms`,
  );

  // 3. optional: where the server's CPU goes in a round of each side (not part of the figures)
  const profiles = [];
  if (OPTS.profile) {
    const profiled = startProfile();
    await queue('msg_profiled_');
    if (!(await drain(300_000))) problems.push('the profiled backlog was not delivered within 300 s');
    const summary = await stopProfile(profiled, 'backlog');
    profiles.push(
      '### the delivery backlog',
      '',
      `${OPTS.events} queued events delivered while profiled: ${f3(summary.busyMs / OPTS.events)} ms of sampled main-thread CPU per event. Profile: \`${relative(ROOT, summary.file)}\`.`,
      '',
      cpuProfile.toMarkdown(summary),
      '',
    );
    for (const side of ['without', 'with']) {
      if (!(await drain(120_000)))
        problems.push(`the delivery backlog did not drain before the profiled ${side} round`);
      const started = startProfile();
      const pf = figures(await load(side, OPTS.duration));
      const summary = await stopProfile(started, side);
      profiles.push(
        `### ${side}`,
        '',
        `${f0(pf.rps)} req/s while profiled, p50 ${f2(pf.p50)} ms; ${f2(summary.busyMs / (pf.total + pf.non2xx || 1))} ms of sampled main-thread CPU per request (the delivery loop's included on the "with" side). Profile: \`${relative(ROOT, summary.file)}\`.`,
        '',
        cpuProfile.toMarkdown(summary),
        '',
      );
    }
  }

  // report
  const side = (s) => rows.filter((r) => r.side === s);
  const p50With = mean(side('with').map((r) => r.p50));
  const p50Without = mean(side('without').map((r) => r.p50));
  // Each round's two sides ran back to back (in alternating order): their ratio compares them on
  // the machine as it was then. The verdict is the median of those ratios, which neither the
  // machine's drift over the run nor one disturbed round moves much; the ratio of the means is shown too.
  const roundRatios = side('with').map((w) => w.p50 / side('without').find((o) => o.round === w.round).p50);
  const ratio = median(roundRatios);
  const verdict = (ok) => (problems.length ? 'NOT VALID' : ok ? 'PASS' : 'FAIL');
  const lines = [
    `# Webhooks: write-path cost and delivery throughput, ${started.toISOString()}`,
    '',
    '| measure | figure | target | verdict |',
    '| --- | ---: | ---: | --- |',
    `| create_response p50, with an active endpoint / without (${OPTS.connections} connections, deliveries on the same instance): median of the ${roundRatios.length} rounds' ratios | **${f2(ratio)}x** (rounds: ${roundRatios.map(f2).join(', ')}; ratio of the mean p50s ${f2(p50With / p50Without)}x, ${f2(p50With)} / ${f2(p50Without)} ms) | <= ${P50_TARGET}x | ${verdict(ratio <= P50_TARGET)} |`,
    `| events delivered per second by one instance to a local receiver (${OPTS.events} queued at once) | **${f0(rate)}/s** (${f2(seconds)} s) | >= ${RATE_TARGET}/s | ${verdict(rate >= RATE_TARGET)} |`,
    '',
    `CPU per delivered event in that backlog: the server (its delivery loop) ${f3(eventCpu.server)} ms, PostgreSQL ${f3(eventCpu.pg)} ms, the receiver ${f3(eventCpu.receiver)} ms.`,
    '',
    '| round | side | req/s | p50 (ms) | p99 (ms) | 2xx | server CPU ms/req | PostgreSQL CPU ms/req | events pending at the end, drained in | other processes (% of a core) | hypervisor steal (% of a core) |',
    '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.round} | ${r.side} | ${f0(r.rps)} | ${f2(r.p50)} | ${f1(r.p99)} | ${r.total} | ${f2(r.cpuPerReq)} | ${f2(r.pgPerReq)} | ${r.side === 'with' ? `${r.pendingAtEnd}, ${f1(r.drainS)} s` : '-'} | ${f0(r.otherPct)} | ${f0(r.stealPct)} |`,
    ),
  ];
  notes.push(noiseLine(rows, (r) => `${r.side} ${r.round}`, 'the ratio is less reliable, '));
  lines.push(
    '',
    `- Load: autocannon ${autocannonVersion()}, ${OPTS.connections} connections, ${OPTS.rounds} rounds of ${OPTS.duration} s per side, alternating, one side first in odd rounds, the other in even ones, after ${OPTS.warmup} s of warm-up; p50 from every response's own time. Client, server, receiver and PostgreSQL share the machine (compare within this run).`,
    `- Server: one dist/ instance, NODE_ENV=production, LOG_LEVEL=warn, rate limits off, default pool (10), WEBHOOKS_ALLOW_PRIVATE_URLS=true; its delivery loop runs during the "with" rounds (the backlog drains before each round). Fresh database \`${dbName}\`, dropped afterwards.`,
    `- Receiver: ${receiver.kind}, answering 200 "ok" to every event, on the same machine.`,
    `- Machine: ${cpusText()}; Node ${process.version}; load average ${loadText(os.loadavg())} at the end.`,
    ...notes.map((n) => `- ${n}`),
    ...(profiles.length ? ['', '## CPU profiles (BENCH_PROFILE=1)', '', ...profiles] : []),
    ...(problems.length ? ['', '## Problems', '', ...problems.map((p) => `- ${p}`)] : []),
    '',
  );
  log(`wrote ${writeReport(`webhooks-${ts}.md`, lines.join('\n'))}`);
  process.stdout.write(`${lines.join('\n')}\n`);
  process.exitCode = problems.length ? 1 : 0;
}

/**
 * The receiver process, as a Server (stop() works the same), once it listens; `count()` is how many
 * events it has received. nginx unless BENCH_RECEIVER=node or nginx is missing (said in `notes`).
 */
async function startReceiver(port, notes) {
  const nginx = OPTS.receiver === 'nginx' && nginxBinary();
  if (OPTS.receiver === 'nginx' && !nginx)
    notes.push(
      '**The receiver is the Node one**: nginx is not installed (apt-get install -y nginx), and a Node receiver costs the shared cores more per event.',
    );
  if (!nginx) {
    const receiver = new Server('receiver', [join(__dirname, 'webhook-receiver.js')], {
      PATH: process.env.PATH,
      PORT: String(port),
    });
    receiver.kind = 'Node (bench/webhook-receiver.js)';
    receiver.count = async () => (await (await fetch(`http://127.0.0.1:${port}/`)).json()).received;
    await receiver.waitUntil(() => receiver.count().then(() => true));
    return receiver;
  }
  const dir = mkdtempSync(join(os.tmpdir(), 'formwork-bench-receiver-'));
  chmodSync(dir, 0o777);
  const conf = join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    [
      // One process (no master and worker): its CPU is the receiver's.
      'daemon off;',
      'master_process off;',
      `pid ${join(dir, 'nginx.pid')};`,
      `error_log ${join(dir, 'error.log')} warn;`,
      'events { worker_connections 4096; }',
      'http {',
      '  access_log off;',
      '  keepalive_requests 1000000;',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(dir, t)};`),
      `  server { listen 127.0.0.1:${port}; location = /hook { return 200 "ok"; } location = /stats { stub_status; } }`,
      '}',
    ].join('\n'),
  );
  const receiver = new Server('receiver', ['-p', dir, '-c', conf], { PATH: process.env.PATH }, { binary: nginx });
  receiver.port = port;
  receiver.kind = 'nginx';
  const stop = receiver.stop.bind(receiver);
  receiver.stop = async (timeoutMs) => {
    const exited = await stop(timeoutMs);
    rmSync(dir, { recursive: true, force: true });
    return exited;
  };
  // stub_status counts every request, its own included: the events are the rest.
  let statsRequests = 0;
  receiver.count = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/stats`)).text();
    statsRequests++; // answered, so counted
    return Number(text.split('\n')[2].trim().split(/\s+/)[2]) - statsRequests;
  };
  await receiver.waitUntil(() => receiver.count().then(() => true));
  return receiver;
}

function nginxBinary() {
  for (const candidate of ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx']) {
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

runMain(main, teardown);

'use strict';
/**
 * What rate limits (counted in Redis) and Idempotency-Key cost, each measured as a throughput
 * ratio in one run:
 *
 *   limiter       get_form, limits counted in Redis (both budgets, every request)
 *                 vs the same call with RATE_LIMIT_ENABLED=false               target: cost <= 1.3x
 *   limiter+key   the same, every call carrying a fresh Idempotency-Key         target: cost <= 1.3x
 *   key (write)   create_response with a fresh Idempotency-Key vs without one,
 *                 on the server with the limiter on                            target: cost <= 1.5x
 *
 * "cost" is throughput without / throughput with (1.25 means 25% fewer requests per second).
 * Usage: npm run bench:limits   (builds first; needs PostgreSQL and Redis on this machine)
 * Settings: BENCH_DURATION (10 s), BENCH_ROUNDS (2), BENCH_CONNECTIONS (50), BENCH_WARMUP (5 s),
 * BENCH_ADMIN_URL, BENCH_REDIS_URL, BENCH_ONLY=limiter,limiter+key,key (a subset).
 *
 * 1. creates a fresh database formwork_bench_limits_<timestamp>, migrates and seeds it with the
 *    CLI (demo: a Pro workspace, forms and an admin token);
 * 2. starts two instances of dist/: "limits on" (REDIS_URL, both budgets at 1,000,000,000 a
 *    minute, so they count every request and refuse none) and "limits off";
 * 3. for each comparison, warms both sides up, then alternates them (BENCH_ROUNDS rounds of
 *    BENCH_DURATION s, BENCH_CONNECTIONS connections, autocannon);
 * 4. checks that every answer was 200, that the limits on Redis counted (X-RateLimit-Remaining,
 *    /readyz) and that each keyed request stored one key; prints a Markdown report and writes it to
 *    bench/results/limits-<timestamp>.md; stops the servers and drops the database.
 *
 * Exit code: 0 whether the targets are met or not; 1 when the run is not valid.
 */
const { randomUUID } = require('node:crypto');
const net = require('node:net');
const os = require('node:os');
const { Client } = require('pg');
const {
  CLI,
  MAIN,
  RATE_LIMIT: LIMIT,
  COUNTING_LIMITS,
  NOISY_OTHER_PCT,
  log,
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
  statusCounts,
  figures,
  alternateRounds,
  mean,
  f0,
  f1,
  f2,
  noisyRounds,
  cpusText,
  loadText,
  autocannonVersion,
  writeReport,
  BENCH_WEBHOOK_SECRET_KEY,
} = require('./lib');

const OPTS = {
  ...loadOptions({ connections: 50, rounds: 2 }),
  redisUrl: process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379',
  /** Comma-separated comparison names (limiter, limiter+key, key) to run only those. */
  only: (process.env.BENCH_ONLY || '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
};

const teardown = new Teardown();
let benchDb = '';

/** One load: POST `tool` with `body` to `server`, with a fresh Idempotency-Key per request when `keyed`. */
function target(server, token, tool, body, keyed) {
  return { server, token, tool, body: JSON.stringify(body), keyed };
}

async function cannon(t, seconds) {
  const headers = { Authorization: `Bearer ${t.token}`, 'Content-Type': 'application/json' };
  const result = await loadRun(
    {
      url: `http://127.0.0.1:${t.server.port}`,
      connections: OPTS.connections,
      duration: seconds,
      // setupRequest on both sides, so that the client does the same work for each.
      requests: [
        {
          method: 'POST',
          path: `/api/v1/tools/${t.tool}`,
          headers,
          body: t.body,
          setupRequest: (req) =>
            t.keyed ? { ...req, headers: { ...req.headers, 'Idempotency-Key': randomUUID() } } : { ...req },
        },
      ],
    },
    // Redis counts the limits: its CPU is the benchmark's, not noise.
    { serverPid: t.server.proc.pid, dbName: benchDb, alsoOurs: ['redis-server'] },
  );
  const statuses = statusCounts(result);
  const problems = [];
  if (result.non2xx > 0 || Object.keys(statuses).some((c) => c !== '200'))
    problems.push(`answers other than 200: ${JSON.stringify(statuses)}`);
  if (result.errors + result.timeouts > 0) problems.push(`${result.errors} errors, ${result.timeouts} timeouts`);
  const { rps, p50, p99, total, otherPct } = figures(result);
  const serverMs = result.cpu.server;
  return {
    rps,
    p50,
    p99,
    total,
    cpuPerReq: serverMs === undefined ? NaN : serverMs / (result['2xx'] || 1),
    otherPct,
    problems,
  };
}

async function main() {
  const { started, ts, database } = startRun('formwork_bench_limits', OPTS);
  const { name: dbName, url: dbUrl } = database;
  benchDb = dbName;
  const problems = [];
  const notes = [];
  teardown.onSignals('stopping the servers and dropping the database');

  requireBuilt([CLI, MAIN], 'bench:limits');
  const redisPing = await new Promise((resolve) => {
    const { hostname, port } = new URL(OPTS.redisUrl);
    const s = net.connect(Number(port || 6379), hostname, () => s.write('PING\r\n'));
    s.on('data', (d) => (s.destroy(), resolve(String(d).trim())));
    s.on('error', (e) => resolve(e.message));
  });
  if (redisPing !== '+PONG')
    throw new Error(`Redis does not answer at ${OPTS.redisUrl} (${redisPing}); set BENCH_REDIS_URL`);

  teardown.database = database;
  await database.create();

  const baseEnv = { PATH: process.env.PATH, HOME: process.env.HOME, WEBHOOK_SECRET_KEY: BENCH_WEBHOOK_SECRET_KEY };
  const cliEnv = { ...baseEnv, DATABASE_URL: dbUrl, NODE_ENV: 'production', LOG_LEVEL: 'warn' };
  await runJson('migrate (CLI)', [CLI, 'migrate', '--json'], cliEnv);
  const demo = await runJson('demo (CLI)', [CLI, 'demo', '--json'], cliEnv);
  const publicId = demo.forms[0];

  const on = new Server(
    'limits on (Redis)',
    [MAIN],
    serviceEnv(baseEnv, await freePort(), dbUrl, { REDIS_URL: OPTS.redisUrl, ...COUNTING_LIMITS }),
  );
  const off = new Server(
    'limits off',
    [MAIN],
    serviceEnv(baseEnv, await freePort(), dbUrl, { RATE_LIMIT_ENABLED: 'false' }),
  );
  teardown.servers.push(on, off);
  await Promise.all(
    [on, off].map((s) => s.waitUntil(() => fetch(`http://127.0.0.1:${s.port}/readyz`).then((r) => r.ok))),
  );
  const ready = await (await fetch(`http://127.0.0.1:${on.port}/readyz`)).json();
  if (ready.rateLimits !== 'shared')
    throw new Error(`the "limits on" server does not count in Redis: ${JSON.stringify(ready)}`);

  const headers = { Authorization: `Bearer ${demo.token}`, 'Content-Type': 'application/json' };
  const call = (s, tool, body) =>
    post(`http://127.0.0.1:${s.port}/api/v1/tools/${tool}`, headers, JSON.stringify(body));

  // Answers for create_response: every required block gets a value its type accepts.
  const form = JSON.parse((await call(on, 'get_form', { publicId })).text);
  const sample = {
    short_text: 'Bench',
    long_text: 'Bench',
    email: 'bench@example.com',
    url: 'https://example.com',
    phone: '+33123456789',
    number: 1,
    rating: 3,
    linear_scale: 3,
    date: '2026-01-01',
    yes_no: true,
  };
  const answers = {};
  for (const b of form.blocks) {
    if (b.type in sample) answers[b.id] = sample[b.type];
    else if (b.choices) answers[b.id] = b.type === 'checkboxes' ? [b.choices[0].label] : b.choices[0].label;
    if (b.type === 'rating' || b.type === 'linear_scale') answers[b.id] = Math.min(b.max ?? 3, 3);
    if (b.type === 'number') answers[b.id] = b.min ?? 1;
  }
  for (const [s, t, body] of [
    [on, 'get_form', { publicId }],
    [on, 'create_response', { publicId, answers }],
  ]) {
    const r = await call(s, t, body);
    if (r.status !== 200) throw new Error(`${t} answered ${r.status}: ${r.text}`);
  }

  const all = [
    {
      name: 'limiter',
      what: 'get_form: limits counted in Redis vs RATE_LIMIT_ENABLED=false',
      target: 1.3,
      with: target(on, demo.token, 'get_form', { publicId }, false),
      without: target(off, demo.token, 'get_form', { publicId }, false),
    },
    {
      name: 'limiter + key',
      what: 'get_form with a fresh Idempotency-Key per call: limits in Redis vs off',
      target: 1.3,
      with: target(on, demo.token, 'get_form', { publicId }, true),
      without: target(off, demo.token, 'get_form', { publicId }, true),
    },
    {
      name: 'key (write)',
      what: 'create_response with a fresh Idempotency-Key vs without, limits on (Redis)',
      target: 1.5,
      with: target(on, demo.token, 'create_response', { publicId, answers }, true),
      without: target(on, demo.token, 'create_response', { publicId, answers }, false),
    },
  ];
  const short = { limiter: 'limiter', 'limiter + key': 'limiter+key', 'key (write)': 'key' };
  const comparisons = OPTS.only.length ? all.filter((c) => OPTS.only.includes(short[c.name])) : all;
  if (comparisons.length === 0)
    throw new Error(`BENCH_ONLY=${OPTS.only.join(',')} names no comparison: use limiter, limiter+key, key`);

  const keysBefore = await countKeys(dbUrl);
  let keyedRequests = 0;
  const rows = [];
  for (const c of comparisons) {
    await alternateRounds(['without', 'with'], OPTS, {
      measure: (side, seconds) => cannon(c[side], seconds),
      before: (side, phase) => {
        if (phase === 'warm-up') log(`${c.name}: warm-up ${side} (${OPTS.warmup} s)`);
      },
      after: (side, phase, fig) => {
        if (c[side].keyed) keyedRequests += fig.total;
        if (phase === 'warm-up') {
          for (const p of fig.problems) problems.push(`${c.name} warm-up ${side}: ${p}`);
          return;
        }
        rows.push({ comparison: c.name, side, round: phase, ...fig });
        log(
          `${c.name} round ${phase} ${side}: ${f0(fig.rps)} req/s, p50 ${f1(fig.p50)} ms, p99 ${f1(fig.p99)} ms, ${f2(fig.cpuPerReq)} ms CPU/req, other processes ${f0(fig.otherPct)}% of a core`,
        );
        for (const p of fig.problems) problems.push(`${c.name} round ${phase} ${side}: ${p}`);
      },
    });
  }

  // The limits counted, in Redis, and refused nothing; every keyed request stored its key.
  const after = await call(on, 'get_form', { publicId });
  const remaining = Number(after.headers.get('x-ratelimit-remaining'));
  if (!(remaining < LIMIT - 1)) problems.push(`the limits did not count: X-RateLimit-Remaining ${remaining}`);
  else
    notes.push(
      `Limits counted in Redis: after the load, \`X-RateLimit-Remaining: ${remaining}\` of ${LIMIT} (requests in the current window).`,
    );
  const keysStored = (await countKeys(dbUrl)) - keysBefore;
  // (A few more may be stored than counted: requests in flight when a round ends are answered after it.)
  if (keysStored < keyedRequests)
    problems.push(`${keyedRequests} keyed requests were answered but only ${keysStored} keys were stored`);
  else
    notes.push(
      `Every keyed request stored its key: ${keyedRequests} answered by the end of their rounds, ${keysStored} records.`,
    );

  const lines = [
    `# Rate limits and Idempotency-Key: cost, ${started.toISOString()}`,
    '',
    '| comparison | what | req/s without | req/s with | cost (without/with) | target | verdict |',
    '| --- | --- | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const c of comparisons) {
    const rs = rows.filter((r) => r.comparison === c.name);
    const without = mean(rs.filter((r) => r.side === 'without').map((r) => r.rps));
    const withIt = mean(rs.filter((r) => r.side === 'with').map((r) => r.rps));
    const cost = without / withIt;
    lines.push(
      `| ${c.name} | ${c.what} | ${f0(without)} | ${f0(withIt)} | **${f2(cost)}x** | <= ${c.target}x | ${problems.length ? 'NOT VALID' : cost <= c.target ? 'PASS' : 'FAIL'} |`,
    );
  }
  lines.push(
    '',
    '| comparison | round | side | req/s | p50 (ms) | p99 (ms) | 2xx | server CPU ms/req | other processes (% of a core) |',
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  );
  for (const r of rows)
    lines.push(
      `| ${r.comparison} | ${r.round} | ${r.side} | ${f0(r.rps)} | ${f1(r.p50)} | ${f1(r.p99)} | ${r.total} | ${f2(r.cpuPerReq)} | ${f0(r.otherPct)} |`,
    );
  const noisy = noisyRounds(rows);
  if (noisy.length)
    notes.push(
      `**Noisy**: other processes took more than ${NOISY_OTHER_PCT}% of a core in ${noisy.length} of ${rows.length} rounds; run it again on a quiet machine.`,
    );
  lines.push(
    '',
    `- Load: autocannon ${autocannonVersion()}, ${OPTS.connections} connections, ${OPTS.rounds} rounds of ${OPTS.duration} s per side, alternating, after ${OPTS.warmup} s of warm-up; client, servers, PostgreSQL and Redis share the machine (compare ratios within this run).`,
    `- Servers: dist/ with NODE_ENV=production, LOG_LEVEL=warn, default pool; "limits on" counts both budgets in Redis at ${OPTS.redisUrl} (limits ${LIMIT}/min so that none refuses), "limits off" has RATE_LIMIT_ENABLED=false. Form \`${publicId}\` of the CLI demo; fresh database \`${dbName}\`, dropped afterwards.`,
    `- Machine: ${cpusText()}; Node ${process.version}; load average ${loadText(os.loadavg())} at the end.`,
    ...notes.map((n) => `- ${n}`),
    ...(problems.length ? ['', '## Problems', '', ...problems.map((p) => `- ${p}`)] : []),
    '',
  );
  log(`wrote ${writeReport(`limits-${ts}.md`, lines.join('\n'))}`);
  process.exitCode = problems.length ? 1 : 0;
}

async function countKeys(url) {
  const c = new Client({ connectionString: url.toString() });
  await c.connect();
  try {
    return (await c.query('SELECT count(*)::int AS n FROM idempotency_keys')).rows[0].n;
  } finally {
    await c.end();
  }
}

runMain(main, teardown);

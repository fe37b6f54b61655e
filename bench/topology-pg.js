'use strict';
/**
 * PostgreSQL topology bench (issue 37), on a primary, a streaming replica and PgBouncer in
 * transaction mode started by scripts/topology/postgres.js:
 *  1. get_form and create_response through PgBouncer (DATABASE_POOLER=transaction: no prepared
 *     statements, SET LOCAL bounds) against the same through a direct connection, two instances of
 *     the built service side by side, in alternated rounds. Target: pooled / direct >= 0.8 (req/s).
 *     A third instance, DATABASE_POOLER=transaction straight to the primary ("unprepared"), splits
 *     the price: no prepared statements (unprepared / direct) and PgBouncer's hop (pgbouncer /
 *     unprepared). CPU per request of each instance, of PgBouncer and of the primary's backends.
 *  2. With the replica: create_response's median latency (through PgBouncer) while an export of
 *     BENCH_EXPORT_N responses streams from another instance (read on the replica) against the same
 *     load without it, alternated.
 *     Target: within 1.2x.
 *
 *   npm run build && node bench/topology-pg.js
 *   BENCH_ROUNDS=3 BENCH_SECONDS=6 BENCH_CONNECTIONS=10 BENCH_EXPORT_N=1000000 BENCH_DIST=dist
 *   BENCH_TOOLS=get_form (part 1 for these tools only) BENCH_EXPORT_N=0 (no part 2)
 */
const { execFile, spawn, spawnSync } = require('node:child_process');
const { promisify } = require('node:util');
const { mkdtempSync, readdirSync, readFileSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');
const { Client } = require('pg');
const { startPostgres } = require('../scripts/topology/postgres');

const ROOT = path.join(__dirname, '..');
const DIST = path.resolve(ROOT, process.env.BENCH_DIST || 'dist');
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const SECONDS = Number(process.env.BENCH_SECONDS || 6);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 10);
const EXPORT_N = Number(process.env.BENCH_EXPORT_N ?? 200_000);
const TOOLS = (process.env.BENCH_TOOLS || 'get_form,create_response').split(',');
const log = (m) => process.stderr.write(`bench: ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function cli(env, ...args) {
  const r = spawnSync(process.execPath, [path.join(DIST, 'src/cli/main.js'), ...args, '--json'], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`cli ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function instance(name, port, env) {
  const child = spawn(process.execPath, [path.join(DIST, 'src/main.js')], {
    env: {
      ...process.env,
      ...env,
      PORT: String(port),
      RATE_LIMIT_ENABLED: 'false',
      BOOTSTRAP_DEMO: 'false',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 900; i++) {
    if (
      await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { name, url, child };
    await sleep(100);
  }
  throw new Error(`${name} did not start`);
}

const tool = (url, token, name, body) => ({
  url: `${url}/api/v1/tools/${name}`,
  method: 'POST',
  headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** A process's fields in /proc/<pid>/stat after its name (ppid is [1], utime [11], stime [12]). */
function stat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU time (ms) used so far by a process and by each of its children alive now (100 ticks a second), by pid. */
function cpuMs(pid) {
  const used = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = stat(entry);
    if (f && (Number(entry) === pid || Number(f[1]) === pid)) used.set(entry, (Number(f[11]) + Number(f[12])) * 10);
  }
  return used;
}

/**
 * CPU ms since `before` of the processes alive now: the primary's backends are its children, and a
 * pool's idle connections close between rounds (a backend gone meanwhile takes its share with it).
 */
function cpuSince(before, pid) {
  let ms = 0;
  for (const [p, now] of cpuMs(pid)) ms += now - (before.get(p) ?? 0);
  return ms;
}

/** Transactions committed or rolled back so far in the primary's bench database (a lone statement is one). */
async function transactions(monitor) {
  const { rows } = await monitor.query(
    'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(rows[0].n);
}

/**
 * `request` under load; with `pids` ({ name: pid }), each one's CPU ms per request meanwhile; with
 * `monitor` (a client on the primary), the primary's transactions per request (a backend reports
 * its counts within a second of going idle, hence the wait).
 */
async function load(request, seconds = SECONDS, pids = {}, monitor) {
  const before = Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, cpuMs(pid)]));
  const xactsBefore = monitor && (await sleep(1100), await transactions(monitor));
  const r = await autocannon({ ...request, connections: CONNECTIONS, duration: seconds });
  const cpu = Object.fromEntries(
    Object.entries(pids).map(([n, pid]) => [n, cpuSince(before[n], pid) / Math.max(1, r.requests.total)]),
  );
  const xacts =
    monitor && (await sleep(1100), ((await transactions(monitor)) - xactsBefore) / Math.max(1, r.requests.total));
  // Only answers that did the work count: a refusal or an error is reported and fails the run.
  if (r.non2xx || r.errors || r.timeouts) {
    throw new Error(
      `${request.url}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts (${JSON.stringify(r.statusCodeStats)})`,
    );
  }
  return { rps: r.requests.average, p50: r.latency.p50, cpu, xacts };
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'formwork-bench-pg-'));
  const pg = await startPostgres({ dir, ports: { primary: 55532, replica: 55533, pooler: 56532 } });
  const instances = [];
  try {
    const direct = { DATABASE_URL: pg.env.DATABASE_DIRECT_URL, REDIS_URL: '' };
    cli(direct, 'migrate');
    cli(
      direct,
      'workspace',
      'create',
      '--name',
      'Bench',
      '--slug',
      'bench',
      '--plan',
      'pro',
      '--owner-email',
      'b@example.com',
    );
    const token = cli(direct, 'token', 'create', '--workspace', 'bench', '--name', 'bench').token;
    const primaryPid = () =>
      Number(readFileSync(path.join(pg.state.dirs.primary, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const bouncerPid = () => Number(readFileSync(pg.state.poolerPidFile, 'utf8').split('\n')[0]);
    const pooled = await instance('pgbouncer', 3811, pg.env);
    // The replica on both: only the long reads use it, and the export below downloads through this one.
    const plain = await instance('direct', 3812, { ...direct, DATABASE_REPLICA_URL: pg.env.DATABASE_REPLICA_URL });
    const unprepared = await instance('unprepared', 3813, { ...pg.env, DATABASE_URL: pg.env.DATABASE_DIRECT_URL });
    instances.push(pooled, plain, unprepared);
    const made = await fetch(
      pooled.url + '/api/v1/tools/create_form',
      tool(pooled.url, token, 'create_form', {
        title: 'Bench',
        blocks: [
          { type: 'short_text', title: 'Name', ref: 'name' },
          { type: 'multiple_choice', title: 'Colour', ref: 'colour', choices: ['Red', 'Blue'] },
        ],
      }),
    ).then((r) => r.json());
    const publicId = made.publicId;
    const getForm = (i) => tool(i.url, token, 'get_form', { publicId });
    const create = (i) => tool(i.url, token, 'create_response', { publicId, answers: { name: 'x', colour: 'Red' } });

    // A warm-up round of each (JIT, pools), not counted.
    const measured = [
      ['get_form', getForm],
      ['create_response', create],
    ].filter(([name]) => TOOLS.includes(name));
    for (const i of [pooled, plain, unprepared]) for (const [, req] of measured) await load(req(i), 2);
    const monitor = new Client({ connectionString: pg.env.DATABASE_DIRECT_URL });
    await monitor.connect();
    const rows = { get_form: [], create_response: [] };
    for (let round = 0; round < ROUNDS; round++) {
      // Each round starts with another one, and runs them the other way round every other time.
      const three = [pooled, plain, unprepared];
      const turned = [...three.slice(round % 3), ...three.slice(0, round % 3)];
      const order = round % 2 ? turned.reverse() : turned;
      for (const [name, req] of measured) {
        const r = {};
        for (const i of order) {
          r[i.name] = await load(
            req(i),
            SECONDS,
            { instance: i.child.pid, pgbouncer: bouncerPid(), postgres: primaryPid() },
            monitor,
          );
        }
        rows[name].push(r);
        log(
          `round ${round + 1} ${name}: ` +
            order
              .map(
                ({ name: n }) =>
                  `${n} ${r[n].rps.toFixed(0)} req/s (CPU ms/request: instance ${r[n].cpu.instance.toFixed(2)}, primary ${r[n].cpu.postgres.toFixed(2)}, PgBouncer ${r[n].cpu.pgbouncer.toFixed(2)}; primary transactions/request ${r[n].xacts.toFixed(2)})`,
              )
              .join('; '),
        );
      }
    }

    await monitor.end();

    // An export of EXPORT_N responses, inserted at once and read on the replica.
    const exportRows = [];
    if (EXPORT_N > 0) {
      log(`inserting ${EXPORT_N} responses`);
      // No statement timeout: the pooled instance has made the request bounds the role's defaults.
      const admin = new Client({ connectionString: pg.env.DATABASE_DIRECT_URL, options: '-c statement_timeout=0' });
      await admin.connect();
      const big = await fetch(
        pooled.url + '/api/v1/tools/create_form',
        tool(pooled.url, token, 'create_form', { title: 'Big', blocks: [{ type: 'long_text', title: 'Essay' }] }),
      ).then((r) => r.json());
      const block = big.blocks[0].id;
      const [{ id }] = (await admin.query('SELECT id FROM forms WHERE public_id = $1', [big.publicId])).rows;
      await admin.query('BEGIN');
      await admin.query(
        `INSERT INTO responses (form_id, seq, submitted_at, answers, source)
       SELECT $1, g, timestamptz '2026-01-01' + g * interval '1 second', jsonb_build_object($3::text, repeat('x', 200) || g), 'import'
         FROM generate_series(1, $2::int) g`,
        [id, EXPORT_N, block],
      );
      await admin.query(
        `UPDATE response_counters SET last_seq = $2::int, total = $2::int, last_submitted_at = timestamptz '2026-01-01' + $2::int * interval '1 second' WHERE form_id = $1`,
        [id, EXPORT_N],
      );
      await admin.query('COMMIT');
      await admin.end();
      const exportOnce = async () => {
        const link = await fetch(
          pooled.url + '/api/v1/tools/export_responses',
          tool(pooled.url, token, 'export_responses', { publicId: big.publicId }),
        ).then((r) => r.json());
        const started = Date.now();
        // Downloaded through the other instance, as a load balancer would spread it: what is measured
        // is the database's side (the export's reads on the replica), not two jobs on one event loop.
        // The client is curl in a process of its own: an export's client is not the load generator,
        // whose event loop would otherwise time its requests late while it reads the download.
        const { stdout } = await promisify(execFile)('curl', [
          '-sS',
          '-o',
          '/dev/null',
          '-w',
          '%{size_download}',
          link.url.replace(/^https?:\/\/[^/]+/, plain.url),
        ]);
        return { ms: Date.now() - started, bytes: Number(stdout) };
      };
      for (let round = 0; round < ROUNDS; round++) {
        const without = await load(create(pooled));
        let exported;
        const running = exportOnce().then((e) => (exported = e));
        const during = await load(create(pooled));
        await running;
        exportRows.push({
          without: without.p50,
          during: during.p50,
          exportMs: exported.ms,
          exportBytes: exported.bytes,
        });
        log(
          `round ${round + 1} export: p50 ${without.p50} ms without, ${during.p50} ms during (export ${exported.ms} ms)`,
        );
      }
    }

    const ratio = (name, a = 'pgbouncer', b = 'direct') => median(rows[name].map((r) => r[a].rps / r[b].rps));
    const cpu = (name, who, part) => median(rows[name].map((r) => r[who].cpu[part])).toFixed(2);
    const lines = [
      `PostgreSQL topology bench (${ROUNDS} alternated rounds of ${SECONDS} s, ${CONNECTIONS} connections, ${os.cpus().length} CPUs, load ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join('/')})`,
      ...measured.map(
        ([n]) =>
          `${n}: pgbouncer ${median(rows[n].map((r) => r.pgbouncer.rps)).toFixed(0)} req/s, direct ${median(rows[n].map((r) => r.direct.rps)).toFixed(0)} req/s, ratio ${ratio(n).toFixed(2)} (target >= 0.8); ` +
          `unprepared/direct ${ratio(n, 'unprepared').toFixed(2)}, pgbouncer/unprepared ${ratio(n, 'pgbouncer', 'unprepared').toFixed(2)}; ` +
          `CPU ms/request (instance + primary + PgBouncer): direct ${cpu(n, 'direct', 'instance')} + ${cpu(n, 'direct', 'postgres')}, ` +
          `unprepared ${cpu(n, 'unprepared', 'instance')} + ${cpu(n, 'unprepared', 'postgres')}, ` +
          `pgbouncer ${cpu(n, 'pgbouncer', 'instance')} + ${cpu(n, 'pgbouncer', 'postgres')} + ${cpu(n, 'pgbouncer', 'pgbouncer')}; ` +
          `primary transactions/request: ${['direct', 'unprepared', 'pgbouncer'].map((w) => `${w} ${median(rows[n].map((r) => r[w].xacts)).toFixed(2)}`).join(', ')}`,
      ),
    ];
    if (EXPORT_N > 0)
      lines.push(
        `create_response p50 with an export of ${EXPORT_N} responses running (replica): ${median(exportRows.map((r) => r.during))} ms vs ${median(exportRows.map((r) => r.without))} ms without, ratio ${median(exportRows.map((r) => r.during / r.without)).toFixed(2)} (target <= 1.2); export ${median(exportRows.map((r) => r.exportMs))} ms, ${median(exportRows.map((r) => r.exportBytes))} bytes`,
      );
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    for (const i of instances) i.child.kill('SIGTERM');
    await sleep(500);
    await pg.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});

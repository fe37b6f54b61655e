'use strict';
/**
 * The export in constant memory (issue 38, item 2), in one run:
 *
 *   speed   the CSV export of BENCH_EXPORT_RESPONSES (1,000,000) responses through its link, read
 *           to its end by curl, against psql's `COPY (SELECT ...) TO STDOUT WITH (FORMAT csv)` of
 *           the same rows and columns, alternating, BENCH_ROUNDS rounds    target: >= 0.6x rows/s
 *   memory  a fresh instance's first export (issue 38's figure): for CSV and NDJSON, at full speed
 *           and by a slow reader (curl --limit-rate BENCH_SLOW_RATE, 5M), each on an instance of
 *           its own, VmRSS peak over the download minus the instance's idle before it (the median
 *           of 10 samples over the second before; nothing exported yet)     target: <= 50 MiB
 *           Also the main instance's peak over the whole run (checks, rounds, slow readers) minus
 *           its idle before its first export, and (the figure of earlier sessions) each download's
 *           peak minus the idle just before it, on the main instance, warmed by what came before.
 *
 * Usage: npx tsc -p tsconfig.build.json --outDir dist/<you>; BENCH_DIST=dist/<you> node bench/export.js
 * (or after npm run build: node bench/export.js). Needs PostgreSQL on this machine, psql and curl.
 * Settings: BENCH_ADMIN_URL, BENCH_DIST, BENCH_EXPORT_RESPONSES, BENCH_ROUNDS (3), BENCH_SLOW_RATE
 * (5M, curl's --limit-rate; 0: no slow reader), BENCH_KEEP_DB=1 (keep the database), BENCH_REUSE_DB=<name>
 * (reuse a database a run kept: no generation, a new token), BENCH_SERVICE_NODE_ARGS (node flags of the instance).
 *
 * A fresh database formwork_bench_export_<timestamp>, migrated by the CLI, one Pro workspace and an
 * admin token; one built instance (production, rate limits off); a form with the demo's feedback
 * blocks and a hidden field `source`, loaded by SQL (`INSERT ... SELECT ... FROM generate_series`,
 * bench/answers-sql.js) then VACUUM (ANALYZE); the CSV and NDJSON checked once (rows, header, the
 * first 1,000 rows against COPY's cell for cell); then the rounds. Report in
 * bench/results/export-<timestamp>.md. Exit code 0 whether the targets are met or not; 1 when the
 * run is not valid.
 */
const { execFile, spawn } = require('node:child_process');
const { readFileSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { isDeepStrictEqual } = require('node:util');
const { Client } = require('pg');
const lib = require('./lib');
const { answersSql, exportSelectSql } = require('./answers-sql');

const {
  log,
  envNumber,
  envFlag,
  requireBuilt,
  runJson,
  freePort,
  serviceEnv,
  Server,
  startRun,
  BenchDatabase,
  Teardown,
  runMain,
  cpuSnapshot,
  writeReport,
  machineLine,
  loadText,
  BENCH_WEBHOOK_SECRET_KEY,
  csvRows,
} = lib;
const { CLI, MAIN } = lib; // BENCH_DIST chooses the build (bench/lib.js)

const OPTS = {
  adminUrl: process.env.BENCH_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
  responses: envNumber('BENCH_EXPORT_RESPONSES', 1_000_000, { integer: true, min: 1000 }),
  rounds: envNumber('BENCH_ROUNDS', 3, { integer: true, min: 1 }),
  slowRate: process.env.BENCH_SLOW_RATE ?? '5M',
  keepDb: envFlag('BENCH_KEEP_DB'),
  reuse: process.env.BENCH_REUSE_DB || '',
};
const TARGET_RATIO = 0.6;
const TARGET_RSS_MIB = 50;
const LOAD_CHUNK = 250_000;
const TITLE = 'Export bench';
/** The demo's "Customer feedback" blocks (nine: a statement, every answer type the export formats). */
const BLOCKS = require(join(lib.DIST, 'demo', 'demo.service.js')).FEEDBACK_BLOCKS;
const teardown = new Teardown();

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const int = (n) => Math.round(Number(n)).toLocaleString('en-US');
const mib = (bytes) => (Number(bytes) / 2 ** 20).toFixed(1);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** An instance's idle VmRSS: the median of 10 samples over a second. */
async function idleOf(pid) {
  const samples = [];
  for (let i = 0; i < 10; i++) {
    samples.push(vmRss(pid));
    await sleep(100);
  }
  return median(samples);
}

function vmRss(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** CPU (ms) between two cpuSnapshot()s: of the service `pid`, of PostgreSQL's backends, and of every other process but this one. */
function cpuBetween(a, b, pid) {
  if (!a || !b) return {};
  const sum = (m, was) => [...m].reduce((ms, [k, v]) => ms + (v || 0) - (was.get(k) || 0), 0);
  const server = (b.servers.get(pid) || 0) - (a.servers.get(pid) || 0);
  const backends = sum(b.backends, a.backends);
  const other = b.busy - a.busy - (b.self - a.self) - sum(b.servers, a.servers) - backends;
  return { server, backends, other: Math.max(0, other) };
}

async function tool(base, token, name, args) {
  const res = await fetch(`${base}/api/v1/tools/${name}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(args),
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(body).slice(0, 400)}`);
  return body;
}

/** Runs a command to its end with its standard output to /dev/null; resolves its stdout (curl's -w) or rejects. */
function quiet(cmd, args, env) {
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { env, maxBuffer: 1 << 20 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} failed: ${err.message} ${String(stderr).slice(0, 300)}`)) : resolve(stdout),
    ),
  );
}

/** Reads a stream to its end: bytes, newlines, and its first `keep` bytes as text. */
async function drain(stream, keep = 0) {
  let bytes = 0;
  let lines = 0;
  const head = [];
  let kept = 0;
  for await (const chunk of stream) {
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    bytes += buf.length;
    for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) lines++;
    if (kept < keep) {
      head.push(Buffer.from(buf.subarray(0, keep - kept)));
      kept += Math.min(buf.length, keep - kept);
    }
  }
  return { bytes, lines, head: Buffer.concat(head).toString('utf8') };
}

async function main() {
  const loadBefore = os.loadavg();
  const run = startRun('formwork_bench_export', { adminUrl: OPTS.adminUrl, keepDb: OPTS.keepDb });
  const database = OPTS.reuse ? new BenchDatabase(OPTS.adminUrl, OPTS.reuse, { keep: true }) : run.database;
  teardown.onSignals('stopping the server and dropping the database');
  requireBuilt([CLI, MAIN], 'bench/export.js');
  teardown.database = database;
  if (!OPTS.reuse) await database.create();
  const baseEnv = { PATH: process.env.PATH, HOME: process.env.HOME, WEBHOOK_SECRET_KEY: BENCH_WEBHOOK_SECRET_KEY };
  const cliEnv = { ...baseEnv, DATABASE_URL: database.url, NODE_ENV: 'production', LOG_LEVEL: 'warn' };
  await runJson('migrate (CLI)', [CLI, 'migrate', '--json'], cliEnv);
  if (!OPTS.reuse) {
    const ws = ['--name', 'Export', '--slug', 'export', '--plan', 'pro', '--owner-email', 'export@example.com'];
    await runJson('workspace create (CLI)', [CLI, 'workspace', 'create', ...ws, '--json'], cliEnv);
  }
  const { token } = await runJson(
    'token create (CLI)',
    [CLI, 'token', 'create', '--workspace', 'export', '--name', `bench ${run.ts}`, '--role', 'admin', '--json'],
    cliEnv,
  );

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // BENCH_SERVICE_NODE_ARGS: node flags of the instance, e.g. V8's, to see what they change.
  const nodeArgs = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const server = new Server(
    'formwork',
    [...nodeArgs, MAIN],
    serviceEnv(baseEnv, port, database.url, { RATE_LIMIT_ENABLED: 'false', PUBLIC_URL: base }),
  );
  teardown.servers.push(server);
  await server.waitUntil(() => fetch(`${base}/readyz`).then((r) => r.ok), 60_000);
  const pid = server.proc.pid;

  const db = new Client({ connectionString: database.url });
  await db.connect();
  teardown.closers.add(() => db.end());
  const { server_version: pgVersion } = (await db.query('SHOW server_version')).rows[0];

  // --- the form and its responses ------------------------------------------------------------------
  let publicId;
  let loadNote;
  if (OPTS.reuse) {
    const row = (await db.query(`SELECT public_id FROM forms WHERE title = $1 ORDER BY created_at LIMIT 1`, [TITLE]))
      .rows[0];
    if (!row) throw new Error(`database ${OPTS.reuse} has no form "${TITLE}"`);
    publicId = row.public_id;
    loadNote = `reused database \`${OPTS.reuse}\` (generated by an earlier run)`;
  } else {
    const made = await tool(base, token, 'create_form', { title: TITLE, hiddenFields: ['source'], blocks: BLOCKS });
    publicId = (made.form ?? made).publicId;
    await tool(base, token, 'publish_form', { publicId });
  }
  const form = (await db.query('SELECT id FROM forms WHERE public_id = $1', [publicId])).rows[0];
  const blocks = (
    await db.query(`SELECT id, type, required, settings FROM blocks WHERE form_id = $1 ORDER BY position`, [form.id])
  ).rows;
  if (!OPTS.reuse) {
    const t0 = performance.now();
    // Values a CSV must quote (a comma) or guard (a formula), in a quarter of the rows each.
    const hidden = `jsonb_build_object('source', (ARRAY['newsletter', 'search', '=HYPERLINK("x")', 'partner, Inc.'])[1 + (hashint8(g::bigint * 64 + 63) & 2147483647) % 4])`;
    const sql = `INSERT INTO responses (form_id, seq, submitted_at, answers, hidden, source)
      SELECT $1::uuid, g, now() - interval '30 days' + g * interval '1 ms', ${answersSql(blocks)}, ${hidden}, 'import'
        FROM generate_series($2::int, $3::int) g`;
    for (let lo = 1; lo <= OPTS.responses; lo += LOAD_CHUNK) {
      const hi = Math.min(OPTS.responses, lo + LOAD_CHUNK - 1);
      await db.query(sql, [form.id, lo, hi]);
      log(`loaded ${int(hi)} / ${int(OPTS.responses)}`);
    }
    await db.query(
      `UPDATE response_counters SET last_seq = $2::bigint, total = $2::bigint,
              last_submitted_at = (SELECT submitted_at FROM responses WHERE form_id = $1 AND seq = $2::bigint)
        WHERE form_id = $1`,
      [form.id, OPTS.responses],
    );
    await db.query('VACUUM (ANALYZE) responses');
    await db.query('CHECKPOINT').catch(() => undefined);
    loadNote = `generated by SQL in ${((performance.now() - t0) / 1000) | 0} s (chunks of ${int(LOAD_CHUNK)}, then VACUUM (ANALYZE))`;
    log(loadNote);
  }
  const rows = Number((await db.query('SELECT count(*) FROM responses WHERE form_id = $1', [form.id])).rows[0].count);
  const copySql = `COPY (${exportSelectSql(form.id, blocks, ['source'])}) TO STDOUT WITH (FORMAT csv)`;
  const link = async (format, on = base) =>
    new URL((await tool(on, token, 'export_responses', { publicId, format })).url);

  // The main instance's idle before its first export (the links made first: making one is not the
  // export), then its VmRSS over the whole run.
  const firstLinks = { csv: await link('csv'), ndjson: await link('ndjson') };
  const wholeRun = { idle: await idleOf(pid), peak: 0 };
  const wholeTimer = setInterval(() => (wholeRun.peak = Math.max(wholeRun.peak, vmRss(pid))), 50);
  teardown.closers.add(async () => clearInterval(wholeTimer));

  // --- checks: every row, the header, the first 1,000 rows as COPY's -------------------------------
  const problems = [];
  const checks = [];
  /** Bytes of each format's download, as the checks read them: every later download must be as long. */
  const sizes = {};
  {
    const res = await fetch(firstLinks.csv);
    const d = await drain(res.body, 1 << 20);
    const copyHead = await quiet('psql', [
      '-X',
      '-q',
      '-d',
      database.url,
      '-c',
      copySql.replace(/\) TO STDOUT/, ' LIMIT 1000) TO STDOUT'),
    ]);
    const mine = csvRows(d.head.replace(/^\ufeff/, ''));
    const theirs = csvRows(copyHead);
    const n = Math.min(1000, mine.length - 1, theirs.length);
    let bad = 0;
    let example;
    for (let i = 0; i < n; i++)
      if (!isDeepStrictEqual(mine[i + 1], theirs[i])) {
        bad++;
        example ??= `export ${JSON.stringify(mine[i + 1])} / COPY ${JSON.stringify(theirs[i])}`;
      }
    if (res.status !== 200) problems.push(`CSV: status ${res.status}`);
    if (d.lines - 1 !== rows) problems.push(`CSV: ${d.lines - 1} data rows, expected ${rows}`);
    if (n < 1000 && n < rows) problems.push(`CSV: only ${n} rows compared`);
    if (bad) problems.push(`CSV: ${bad} of the first ${n} rows differ from COPY's, e.g. ${example}`);
    checks.push(
      `CSV: ${int(d.lines - 1)} data rows after the header ${JSON.stringify(mine[0])}, ${mib(d.bytes)} MiB; the first ${n} rows ${bad ? `**differ in ${bad}**` : "equal COPY's cell for cell"}.`,
    );
    const nd = await fetch(firstLinks.ndjson);
    const dn = await drain(nd.body);
    if (dn.lines !== rows) problems.push(`NDJSON: ${dn.lines} lines, expected ${rows}`);
    checks.push(`NDJSON: ${int(dn.lines)} lines, ${mib(dn.bytes)} MiB.`);
    sizes.csv = d.bytes;
    sizes.ndjson = dn.bytes;
  }
  const firstExports = { peak: wholeRun.peak, grew: wholeRun.peak - wholeRun.idle };
  log(
    `main instance: idle ${mib(wholeRun.idle)} MiB, after its first CSV and NDJSON (the checks) peak ${mib(wholeRun.peak)} MiB`,
  );

  /** Runs `fn` with the instance's VmRSS sampled every 50 ms and the CPU of the service and of PostgreSQL measured. */
  const measured = async (fn, of = pid) => {
    const idle = await idleOf(of);
    let peak = 0;
    const timer = setInterval(() => (peak = Math.max(peak, vmRss(of))), 50);
    const cpu0 = cpuSnapshot(database.name);
    const t0 = performance.now();
    try {
      const out = await fn();
      const ms = performance.now() - t0;
      peak = Math.max(peak, vmRss(of));
      const cpu = cpuBetween(cpu0, cpuSnapshot(database.name), of);
      return { ...out, ms, idle, peak, grew: peak - idle, cpu };
    } finally {
      clearInterval(timer);
    }
  };
  /** One download of a fresh link by curl (to /dev/null), at `rate` (curl's --limit-rate) or full speed. */
  const download = async (format, rate, on = { base, pid }) => {
    const u = await link(format, on.base);
    return measured(async () => {
      const args = ['-sS', '-o', '/dev/null', '-w', '%{http_code} %{size_download} %{time_starttransfer}'];
      if (rate) args.push('--limit-rate', rate);
      const [status, bytes, ttfb] = (await quiet('curl', [...args, u.toString()])).split(' ');
      if (status !== '200') problems.push(`${format} download answered ${status}`);
      if (Number(bytes) !== sizes[format])
        problems.push(`${format} download: ${bytes} bytes, the check read ${sizes[format]}`);
      return { bytes: Number(bytes), ttfb: Number(ttfb) * 1000 };
    }, on.pid);
  };
  /** A download on an instance of its own, started for it: its first export, from its own idle. */
  const fresh = async (format, rate) => {
    const p = await freePort();
    const b = `http://127.0.0.1:${p}`;
    const s = new Server(
      `formwork (fresh, ${format})`,
      [...nodeArgs, MAIN],
      serviceEnv(baseEnv, p, database.url, { RATE_LIMIT_ENABLED: 'false', PUBLIC_URL: b }),
    );
    teardown.servers.push(s);
    try {
      await s.waitUntil(() => fetch(`${b}/readyz`).then((r) => r.ok), 60_000);
      return await download(format, rate, { base: b, pid: s.proc.pid });
    } finally {
      await s.stop();
    }
  };
  const copy = () =>
    measured(async () => {
      await new Promise((resolve, reject) => {
        const child = spawn('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', database.url, '-c', copySql], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (c) => (stderr += c));
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`psql COPY: exit ${code} ${stderr}`))));
      });
      return {};
    });

  // --- rounds: export and COPY alternating, then NDJSON; then the slow readers ---------------------
  const rounds = [];
  for (let r = 0; r < OPTS.rounds; r++) {
    // Alternate which goes first, so that a drift of the machine's load weighs on both alike.
    const first = r % 2 === 0 ? 'csv' : 'copy';
    const round = {};
    for (const what of first === 'csv' ? ['csv', 'copy'] : ['copy', 'csv'])
      round[what] = what === 'csv' ? await download('csv') : await copy();
    round.ndjson = await download('ndjson');
    round.ratio = round.copy.ms / round.csv.ms;
    rounds.push(round);
    log(
      `round ${r + 1}: CSV ${int(rows / (round.csv.ms / 1000))} rows/s (+${mib(round.csv.grew)} MiB), COPY ${int(rows / (round.copy.ms / 1000))} rows/s: ${round.ratio.toFixed(2)}x; NDJSON ${int(rows / (round.ndjson.ms / 1000))} rows/s (+${mib(round.ndjson.grew)} MiB)`,
    );
  }
  const slow = [];
  if (OPTS.slowRate && OPTS.slowRate !== '0')
    for (const format of ['csv', 'ndjson']) {
      const s = await download(format, OPTS.slowRate);
      slow.push({ format, ...s });
      log(`slow ${format} (${OPTS.slowRate}/s): ${(s.ms / 1000).toFixed(1)} s, +${mib(s.grew)} MiB`);
    }
  server.assertAlive();
  clearInterval(wholeTimer);
  wholeRun.grew = wholeRun.peak - wholeRun.idle;
  log(`main instance over the whole run: +${mib(wholeRun.grew)} MiB above its idle before its first export`);

  // --- a fresh instance's first export: one instance per download -------------------------------
  const firsts = [];
  for (const rate of OPTS.slowRate && OPTS.slowRate !== '0' ? [undefined, OPTS.slowRate] : [undefined])
    for (const format of ['csv', 'ndjson']) {
      const d = await fresh(format, rate);
      firsts.push({ format, rate, ...d });
      log(
        `fresh instance, first ${format} ${rate ? `at ${rate}/s` : 'at full speed'}: ${(d.ms / 1000).toFixed(1)} s, idle ${mib(d.idle)} MiB, +${mib(d.grew)} MiB`,
      );
    }

  // --- report --------------------------------------------------------------------------------------
  const ratio = median(rounds.map((x) => x.ratio));
  const all = [
    ...rounds.flatMap((x) => [
      ['CSV', x.csv],
      ['NDJSON', x.ndjson],
    ]),
    ...slow.map((s) => [`${s.format.toUpperCase()} slow`, s]),
  ];
  const grew = (format) => Math.max(...all.filter(([name]) => name.startsWith(format)).map(([, d]) => d.grew));
  const firstGrew = (format) => Math.max(...firsts.filter((f) => f.format === format).map((f) => f.grew));
  const verdict = (bytes) => (bytes <= TARGET_RSS_MIB * 2 ** 20 ? 'MET' : 'NOT MET');
  const perMillion = (ms) => (ms === undefined ? '–' : `${((ms * 1e6) / rows / 1000).toFixed(1)} s`);
  const row = (name, d) =>
    `| ${name} | ${(d.ms / 1000).toFixed(2)} s | ${int(rows / (d.ms / 1000))} | ${d.ttfb === undefined ? '' : `${d.ttfb.toFixed(0)} ms`} | ${perMillion(d.cpu.server)} | ${perMillion(d.cpu.backends)} | ${perMillion(d.cpu.other)} | ${mib(d.idle)} → ${mib(d.peak)} | **${mib(d.grew)}** |`;
  const md = [
    `# Export: ${int(rows)} responses, CSV and NDJSON, against COPY`,
    '',
    machineLine(pgVersion, loadBefore),
    `- Build: ${process.env.BENCH_DIST || 'dist'}${nodeArgs.length ? `, node ${nodeArgs.join(' ')}` : ''}; database \`${database.name}\`, ${loadNote}; load average at the end ${loadText(os.loadavg())}.`,
    `- Rounds alternate the CSV export (a fresh link, \`GET\` read to its end by curl to /dev/null) and psql's \`COPY (SELECT …) TO STDOUT WITH (FORMAT csv)\` of the same rows and columns (to /dev/null), then an NDJSON export; then slow readers at ${OPTS.slowRate}/s; then each format at full speed and at ${OPTS.slowRate}/s on an instance of its own, its first export. VmRSS of the instance every 50 ms; idle: the median of 10 samples over the second before (for the main instance's whole run: before its first export). CPU: per 1,000,000 rows, of the service, of PostgreSQL's backends for this database, and of other processes.`,
    '',
    '## Verdict',
    '',
    `| target | measured | verdict |`,
    `| --- | --- | --- |`,
    `| CSV export / COPY, rows/s, median of ${rounds.length} rounds' ratios, >= ${TARGET_RATIO}x | **${ratio.toFixed(2)}x** (rounds ${rounds.map((x) => x.ratio.toFixed(2)).join(', ')}) | ${ratio >= TARGET_RATIO ? 'MET' : 'NOT MET'} |`,
    ...['csv', 'ndjson'].map(
      (f) =>
        `| a fresh instance's first ${f.toUpperCase()} export: VmRSS peak minus the instance's idle, the most of fast and slow, <= ${TARGET_RSS_MIB} MiB | **${mib(firstGrew(f))} MiB** (${firsts
          .filter((x) => x.format === f)
          .map((x) => `${x.rate ? `${x.rate}/s` : 'fast'} ${mib(x.grew)}`)
          .join(', ')}) | ${verdict(firstGrew(f))} |`,
    ),
    `| the main instance: VmRSS peak over the whole run (${rounds.length + 1} CSV, ${rounds.length + 1} NDJSON downloads, then the slow readers) minus its idle before its first export, <= ${TARGET_RSS_MIB} MiB | **${mib(wholeRun.grew)} MiB** (idle ${mib(wholeRun.idle)}, after its first CSV and NDJSON ${mib(firstExports.peak)}, peak ${mib(wholeRun.peak)}) | ${verdict(wholeRun.grew)} |`,
    ...['CSV', 'NDJSON'].map(
      (f) =>
        `| (earlier sessions' figure) VmRSS above the idle just before each download, ${f}, the most of its downloads on the main instance, <= ${TARGET_RSS_MIB} MiB | **${mib(grew(f))} MiB** | ${verdict(grew(f))} |`,
    ),
    '',
    '## Downloads',
    '',
    '| what | time | rows/s | first byte | service CPU / 1M | PostgreSQL CPU / 1M | other CPU / 1M | VmRSS idle → peak (MiB) | above idle (MiB) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |',
    ...rounds.flatMap((x, i) => [
      row(`round ${i + 1} CSV`, x.csv),
      row(`round ${i + 1} COPY`, x.copy),
      row(`round ${i + 1} NDJSON`, x.ndjson),
    ]),
    ...slow.map((s) => row(`${s.format.toUpperCase()} at ${OPTS.slowRate}/s`, s)),
    ...firsts.map((f) => row(`fresh instance, first ${f.format.toUpperCase()}${f.rate ? ` at ${f.rate}/s` : ''}`, f)),
    '',
    '## Checks',
    '',
    ...checks.map((c) => `- ${c}`),
    ...(problems.length ? ['', '## Problems (the run is NOT VALID)', '', ...problems.map((p) => `- ${p}`)] : []),
    '',
  ].join('\n');
  const path = writeReport(`export-${run.ts}.md`, md);
  log(`report: ${path}`);
  if (problems.length) process.exitCode = 1;
}

runMain(main, teardown);

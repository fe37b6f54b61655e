'use strict';
/**
 * What files cost, in one run (disk storage, the embedded default's):
 *
 *   no-JS upload   a 100 MB file posted multipart/form-data to the respondent page, streamed to
 *                  DATA_DIR/uploads; vs `cp` of the same file to the same disk
 *                  targets: throughput >= 0.5x cp's; the service's RSS grows by <= 30 MB
 *   create_response  naming one upload (stored beforehand, its checks: head, first bytes, type) vs
 *                  a response without files, sequentially; server CPU per call   target: <= 1.5x
 *
 * Usage: npm run bench:uploads   (builds first; needs PostgreSQL on this machine)
 * Settings: BENCH_ADMIN_URL, BENCH_FILE_MB (100), BENCH_CALLS (200: create_response calls per side).
 *
 * A fresh database formwork_bench_uploads_<timestamp>, migrated and seeded with a Pro workspace by
 * the CLI; one built instance (production, rate limits off, DATA_DIR in a temporary folder); a
 * Markdown report in bench/results/uploads-<timestamp>.md. Exit code 0 whether the targets are met
 * or not; 1 when the run is not valid.
 */
const { execFileSync } = require('node:child_process');
const { createReadStream, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } = require('node:fs');
const { randomBytes } = require('node:crypto');
const os = require('node:os');
const { join } = require('node:path');
const {
  CLI,
  MAIN,
  log,
  envNumber,
  requireBuilt,
  runJson,
  freePort,
  serviceEnv,
  Server,
  startRun,
  Teardown,
  runMain,
  cpuMs,
  writeReport,
  f0,
  BENCH_WEBHOOK_SECRET_KEY,
} = require('./lib');

const OPTS = {
  adminUrl: process.env.BENCH_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
  fileMb: envNumber('BENCH_FILE_MB', 100, { integer: true, min: 1 }),
  calls: envNumber('BENCH_CALLS', 200, { integer: true, min: 10 }),
};
const teardown = new Teardown();

/** The resident set of a process, in MB (Linux /proc). */
function rssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
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

async function main() {
  const loadBefore = os.loadavg();
  const { ts, database } = startRun('formwork_bench_uploads', { adminUrl: OPTS.adminUrl });
  teardown.onSignals('stopping the server and dropping the database');
  requireBuilt([CLI, MAIN], 'bench:uploads');
  teardown.database = database;
  await database.create();
  // Beside the uploads, on the same disk: the file, cp's copy.
  const work = mkdtempSync(join(os.tmpdir(), 'formwork-bench-uploads-'));
  teardown.closers.add(async () => rmSync(work, { recursive: true, force: true }));
  const dataDir = join(work, 'data');

  const baseEnv = { PATH: process.env.PATH, HOME: process.env.HOME, WEBHOOK_SECRET_KEY: BENCH_WEBHOOK_SECRET_KEY };
  const cliEnv = { ...baseEnv, DATABASE_URL: database.url, NODE_ENV: 'production', LOG_LEVEL: 'warn' };
  await runJson('migrate (CLI)', [CLI, 'migrate', '--json'], cliEnv);
  const ws = ['--name', 'Files', '--slug', 'files', '--plan', 'pro', '--owner-email', 'files@example.com'];
  await runJson('workspace create (CLI)', [CLI, 'workspace', 'create', ...ws, '--json'], cliEnv);
  const { token } = await runJson(
    'token create (CLI)',
    [CLI, 'token', 'create', '--workspace', 'files', '--name', 'bench', '--role', 'admin', '--json'],
    cliEnv,
  );

  const server = new Server(
    'formwork',
    [MAIN],
    serviceEnv(baseEnv, await freePort(), database.url, { RATE_LIMIT_ENABLED: 'false', DATA_DIR: dataDir }),
  );
  teardown.servers.push(server);
  const base = `http://127.0.0.1:${server.port}`;
  await server.waitUntil(() => fetch(`${base}/readyz`).then((r) => r.ok));

  const created = await tool(base, token, 'create_form', {
    title: 'Files bench',
    blocks: [
      { type: 'short_text', ref: 'name', title: 'Name' },
      { type: 'file_upload', ref: 'cv', title: 'CV', maxSizeMb: 100 },
    ],
  });
  const form = created.form ?? created;
  const publicId = form.publicId;
  await tool(base, token, 'publish_form', { publicId });
  const fileBlock = form.blocks.find((b) => b.type === 'file_upload');

  // --- the no-JS path vs cp ---
  const bytes = OPTS.fileMb * 1024 * 1024;
  const file = join(work, 'file.bin');
  const content = randomBytes(bytes);
  content.write('%PDF-1.7\n', 0); // a type the checks recognise
  writeFileSync(file, content);
  execFileSync('sync');
  let t = process.hrtime.bigint();
  execFileSync('cp', [file, join(work, 'copy.bin')]);
  execFileSync('sync');
  const cpMs = Number(process.hrtime.bigint() - t) / 1e6;

  const boundary = `----bench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="${fileBlock.id}"; filename="file.pdf"\r\n` +
      'Content-Type: application/pdf\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const body = (async function* () {
    yield head;
    for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) yield chunk;
    yield tail;
  })();
  const rssBefore = rssMb(server.proc.pid);
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb(server.proc.pid))), 20);
  let cpu = cpuMs(server.proc.pid);
  t = process.hrtime.bigint();
  const res = await fetch(`${base}/f/${publicId}`, {
    method: 'POST',
    headers: {
      'Content-Type': `multipart/form-data; boundary=${boundary}`,
      'Content-Length': String(head.length + bytes + tail.length),
    },
    body,
    duplex: 'half',
    redirect: 'manual',
  });
  const answer = await res.text();
  execFileSync('sync');
  const postMs = Number(process.hrtime.bigint() - t) / 1e6;
  const postCpu = cpuMs(server.proc.pid) - cpu;
  clearInterval(sampler);
  const stored = execFileSync('find', [join(dataDir, 'uploads'), '-type', 'f', '-not', '-path', '*/.partial/*'], {
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
  const storedSize = stored.length === 1 ? statSync(stored[0]).size : -1;
  log(`no-JS post: ${res.status} in ${f0(postMs)} ms (cp ${f0(cpMs)} ms), RSS +${f0(rssPeak - rssBefore)} MB`);
  const problems = [];
  if (res.status >= 400)
    problems.push(
      `the no-JS post answered ${res.status}: ${answer
        .replace(/<style[\s\S]*?<\/style>/g, '')
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' ')
        .slice(0, 300)}`,
    );

  // The same file PUT to the upload URL create_upload answers (the agents' path, disk storage).
  const target = await tool(base, token, 'create_upload', {
    publicId,
    block: 'cv',
    filename: 'big.pdf',
    contentType: 'application/pdf',
    size: bytes,
  });
  cpu = cpuMs(server.proc.pid);
  t = process.hrtime.bigint();
  // curl streams the file (-T), as an agent's HTTP client would.
  const putStatus = execFileSync(
    'curl',
    [
      '-sS',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-T',
      file,
      '-H',
      `Content-Type: ${target.headers['Content-Type']}`,
      target.url.replace(/^https?:\/\/[^/]+/, base),
    ],
    { encoding: 'utf8' },
  );
  execFileSync('sync');
  const putMs = Number(process.hrtime.bigint() - t) / 1e6;
  const putCpu = cpuMs(server.proc.pid) - cpu;
  if (putStatus !== '200') problems.push(`the PUT answered ${putStatus}`);
  if (storedSize !== bytes) problems.push(`the stored file is ${storedSize} bytes, not ${bytes}`);

  // --- create_response with one upload vs without ---
  const small = randomBytes(20_000);
  small.write('%PDF-1.7\n', 0);
  const uploads = [];
  for (let i = 0; i < OPTS.calls; i++) {
    const u = await tool(base, token, 'create_upload', {
      publicId,
      block: 'cv',
      filename: `cv-${i}.pdf`,
      contentType: 'application/pdf',
      size: small.length,
    });
    const put = await fetch(u.url.replace(/^https?:\/\/[^/]+/, base), {
      method: 'PUT',
      headers: u.headers,
      body: small,
    });
    if (put.status !== 200) throw new Error(`PUT ${put.status}: ${await put.text()}`);
    uploads.push(u.uploadId);
  }
  const cpuPerCall = async (answers) => {
    const before = cpuMs(server.proc.pid);
    for (let i = 0; i < OPTS.calls; i++) await tool(base, token, 'create_response', { publicId, answers: answers(i) });
    return (cpuMs(server.proc.pid) - before) / OPTS.calls;
  };
  // Warm-up: a few of each, not counted.
  for (let i = 0; i < 20; i++) await tool(base, token, 'create_response', { publicId, answers: { name: 'warm' } });
  const without = await cpuPerCall(() => ({ name: 'Ada' }));
  const withFile = await cpuPerCall((i) => ({ name: 'Ada', cv: uploads[i] }));
  log(`create_response CPU: ${withFile.toFixed(2)} ms with a file, ${without.toFixed(2)} ms without`);

  const throughput = cpMs / postMs;
  const growth = rssPeak - rssBefore;
  const cpuRatio = withFile / without;
  const verdict = (ok) => (ok ? 'met' : '**not met**');
  const md = [
    `# Files: uploads (${ts})`,
    '',
    `- ${OPTS.fileMb} MB, disk storage, one built instance (production, rate limits off), PostgreSQL on this machine; ${os.cpus().length} CPUs, Node ${process.version}; load average ${loadBefore.map((l) => l.toFixed(2)).join(' / ')} (1/5/15 min) at the start: above the CPU count, every time here is inflated by waiting for a core (the service CPU figures are not).`,
    ...(problems.length ? ['', '**Not valid:** ' + problems.join('; ')] : []),
    '',
    '| measure | figure | target | |',
    '| --- | --- | --- | --- |',
    `| no-JS post of ${OPTS.fileMb} MB (to disk, synced) | ${f0(postMs)} ms (${f0((OPTS.fileMb * 1000) / postMs)} MB/s); service CPU ${f0(postCpu)} ms | | |`,
    `| PUT to create_upload's URL (to disk, synced) | ${f0(putMs)} ms (${f0((OPTS.fileMb * 1000) / putMs)} MB/s); service CPU ${f0(putCpu)} ms | | |`,
    `| \`cp\` of the same file, same disk (synced) | ${f0(cpMs)} ms (${f0((OPTS.fileMb * 1000) / cpMs)} MB/s) | | |`,
    `| throughput vs cp | ${throughput.toFixed(2)}x | >= 0.5x | ${verdict(throughput >= 0.5)} |`,
    `| service RSS growth during the post | ${f0(growth)} MB (${f0(rssBefore)} → ${f0(rssPeak)} MB) | <= 30 MB | ${verdict(growth <= 30)} |`,
    `| create_response CPU, one upload named | ${withFile.toFixed(2)} ms/call | | |`,
    `| create_response CPU, no file | ${without.toFixed(2)} ms/call | | |`,
    `| ratio | ${cpuRatio.toFixed(2)}x | <= 1.5x | ${verdict(cpuRatio <= 1.5)} |`,
    '',
  ].join('\n');
  writeReport(`uploads-${ts}.md`, md);
  if (problems.length) process.exitCode = 1;
}

runMain(main, teardown);

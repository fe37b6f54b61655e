'use strict';
/**
 * What files cost, in one run (disk storage, the embedded default's):
 *
 *   no-JS upload   a 100 MB file posted multipart/form-data to the respondent page, streamed to
 *                  DATA_DIR/uploads; vs `cp` of the same file to the same disk
 *                  targets: throughput >= 0.5x cp's; the service's RSS grows by <= 30 MB
 *   S3 path        the same post to an instance on S3 storage (s3rver in a process of its own) vs
 *                  curl PUT of the file straight to a presigned URL of the same store   target: >= 0.5x
 *   create_response  naming one upload (stored beforehand, its checks: head, first bytes, type) vs
 *                  a response without files, sequentially; server CPU per call   target: <= 1.5x
 *
 * The first large post is the service's first: its heap grows then (the RSS target) and its hot
 * paths are compiled. BENCH_ROUNDS more rounds of no-JS post, cp and PUT, alternated, give a running
 * service's figures (medians; the ratio to cp is the median of each round's).
 *
 * Usage: npm run bench:uploads   (builds first; needs PostgreSQL on this machine)
 * Settings: BENCH_ADMIN_URL, BENCH_FILE_MB (100), BENCH_CALLS (200: create_response calls per side),
 * BENCH_ROUNDS (3: warm rounds of post, cp and PUT).
 *
 * A fresh database formwork_bench_uploads_<timestamp>, migrated and seeded with a Pro workspace by
 * the CLI; one built instance (production, rate limits off, DATA_DIR in a temporary folder); a
 * Markdown report in bench/results/uploads-<timestamp>.md. Exit code 0 whether the targets are met
 * or not; 1 when the run is not valid.
 */
const { execFile, execFileSync, spawn } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } = require('node:fs');
const { randomBytes } = require('node:crypto');
const os = require('node:os');
const { join } = require('node:path');
const lib = require('./lib');
const {
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
  median,
  writeReport,
  f0,
  BENCH_WEBHOOK_SECRET_KEY,
} = lib;
const { CLI, MAIN } = lib; // BENCH_DIST chooses the build (bench/lib.js)

const OPTS = {
  adminUrl: process.env.BENCH_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
  fileMb: envNumber('BENCH_FILE_MB', 100, { integer: true, min: 1 }),
  calls: envNumber('BENCH_CALLS', 200, { integer: true, min: 10 }),
  rounds: envNumber('BENCH_ROUNDS', 3, { integer: true, min: 1 }),
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

/** curl, streaming (never blocking this process, whose timer samples the RSS): its HTTP status. */
function curl(args) {
  return new Promise((resolve, reject) =>
    execFile('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-H', 'Expect:', ...args], (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    ),
  );
}

/** Runs `send` (then sync) against `server`: elapsed ms, the service's CPU ms and RSS growth (sampled every 20 ms). */
async function measured(server, send) {
  const pid = server.proc.pid;
  const rssBefore = rssMb(pid);
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 20);
  const cpu = cpuMs(pid);
  const t = process.hrtime.bigint();
  const status = await send();
  execFileSync('sync');
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  clearInterval(sampler);
  return { status, ms, cpu: cpuMs(pid) - cpu, rssBefore, rssGrowth: peak - rssBefore };
}

const S3_BUCKET = 'formwork-bench';

/**
 * The floor: a bare Node HTTP server (no framework, no parsing) that pipes each request body to a
 * file in `directory` and answers 200, in a process of its own. Node reading 100 MB off a socket
 * grows its RSS by itself (buffers awaiting the garbage collector), whatever is done with them.
 */
async function startBareSink(directory) {
  const script = `
    const http = require('node:http'); const fs = require('node:fs'); const { pipeline } = require('node:stream/promises');
    fs.mkdirSync(${JSON.stringify(directory)}, { recursive: true });
    let n = 0;
    const server = http.createServer(async (req, res) => {
      await pipeline(req, fs.createWriteStream(${JSON.stringify(directory)} + '/' + n++));
      res.end('ok');
    });
    server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));`;
  const proc = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    proc.stdout.once('data', (d) => resolve(Number(String(d).trim())));
    proc.once('exit', (code) => reject(new Error(`the bare sink exited (${code})`)));
  });
  return { proc, url: `http://127.0.0.1:${port}/` };
}

/** s3rver in a process of its own (path-style, one bucket), storing under `directory`. */
async function startS3rver(directory) {
  const script = `
    const S3rver = require('s3rver');
    new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: ${JSON.stringify(directory)},
      configureBuckets: [{ name: ${JSON.stringify(S3_BUCKET)} }] })
      .run().then(({ port }) => process.stdout.write(port + '\\n'));`;
  const proc = spawn(process.execPath, ['-e', script], {
    cwd: join(__dirname, '..'),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise((resolve, reject) => {
    proc.stdout.once('data', (d) => resolve(Number(String(d).trim())));
    proc.once('exit', (code) => reject(new Error(`s3rver exited (${code})`)));
  });
  return { proc, endpoint: `http://127.0.0.1:${port}` };
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
  // BENCH_SERVICE_NODE_ARGS: e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the service.
  const nodeArgs = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean);
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
    [...nodeArgs, MAIN],
    serviceEnv(baseEnv, await freePort(), database.url, {
      RATE_LIMIT_ENABLED: 'false',
      DATA_DIR: dataDir,
    }),
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
  const copy = () => {
    const t = process.hrtime.bigint();
    execFileSync('cp', [file, join(work, 'copy.bin')]);
    execFileSync('sync');
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  const cpMs = copy();

  // A first post of a small file, not measured: the service's first post of a form compiles its
  // code and warms its caches, which a long-running service has done before any large file.
  const warmFile = join(work, 'warm.bin');
  const warmBytes = 1024 * 1024;
  writeFileSync(warmFile, content.subarray(0, warmBytes));
  const warmUp = async (at) => {
    const status = await curl([
      '-F',
      `${fileBlock.id}=@${warmFile};type=application/pdf;filename=w.pdf`,
      `${at}/f/${publicId}`,
    ]);
    if (status !== '200') throw new Error(`the warm-up post answered ${status}`);
  };
  await warmUp(base);

  // The post as a browser sends it (multipart/form-data), streamed from the file by curl, as the
  // PUTs below are: the bench's own JavaScript would compete with the service for the 2 cores.
  const postFile = () =>
    measured(server, () =>
      curl(['-F', `${fileBlock.id}=@${file};type=application/pdf;filename=file.pdf`, `${base}/f/${publicId}`]),
    );
  const post = await postFile();
  const stored = execFileSync('find', [join(dataDir, 'uploads'), '-type', 'f'], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
  const big = stored.filter((path) => statSync(path).size > warmBytes);
  const storedSize = big.length === 1 ? statSync(big[0]).size : -1;
  log(`no-JS post: ${post.status} in ${f0(post.ms)} ms (cp ${f0(cpMs)} ms), RSS +${f0(post.rssGrowth)} MB`);
  const problems = [];
  if (post.status !== '200') problems.push(`the no-JS post answered ${post.status}`);

  // The same file PUT to the upload URL create_upload answers (the agents' path, disk storage).
  const putFile = async () => {
    const target = await tool(base, token, 'create_upload', {
      publicId,
      block: 'cv',
      filename: 'big.pdf',
      contentType: 'application/pdf',
      size: bytes,
    });
    return measured(server, () =>
      curl([
        '-T',
        file,
        '-H',
        `Content-Type: ${target.headers['Content-Type']}`,
        target.url.replace(/^https?:\/\/[^/]+/, base),
      ]),
    );
  };
  const put = await putFile();
  if (put.status !== '200') problems.push(`the PUT answered ${put.status}`);
  if (storedSize !== bytes) problems.push(`the stored file is ${storedSize} bytes, not ${bytes}`);

  // The running service: rounds of post, cp and PUT, in turns (the order reversed every other round).
  const warm = { post: [], cp: [], put: [] };
  const steps = { post: postFile, cp: async () => ({ status: '200', ms: copy() }), put: putFile };
  for (let round = 0; round < OPTS.rounds; round++) {
    const order = round % 2 ? ['put', 'cp', 'post'] : ['post', 'cp', 'put'];
    for (const step of order) {
      const m = await steps[step]();
      if (m.status !== '200') problems.push(`a warm ${step} answered ${m.status}`);
      warm[step].push(m);
      log(`round ${round + 1}: ${step} ${f0(m.ms)} ms${m.cpu === undefined ? '' : `, service CPU ${f0(m.cpu)} ms`}`);
    }
  }
  const warmMedian = (step, field) => median(warm[step].map((m) => m[field]));
  const warmRatio = median(warm.post.map((m, i) => warm.cp[i].ms / m.ms));
  log(
    `warm no-JS post: ${f0(warmMedian('post', 'ms'))} ms (cp ${f0(warmMedian('cp', 'ms'))} ms), ${warmRatio.toFixed(2)}x`,
  );

  // The floor: the same PUT to a bare Node server writing to the same disk.
  const sink = await startBareSink(join(work, 'sink'));
  teardown.closers.add(async () => sink.proc.kill());
  const bare = await measured({ proc: sink.proc }, () =>
    curl(['-T', file, '-H', 'Content-Type: application/pdf', sink.url]),
  );
  sink.proc.kill();

  // --- object storage: the no-JS post through the service vs a direct presigned PUT to the store ---
  const s3 = await startS3rver(join(work, 's3'));
  teardown.closers.add(async () => s3.proc.kill());
  const s3Server = new Server(
    'formwork-s3',
    [...nodeArgs, MAIN],
    serviceEnv(baseEnv, await freePort(), database.url, {
      RATE_LIMIT_ENABLED: 'false',
      DATA_DIR: join(work, 'data-s3'),
      STORAGE_S3_BUCKET: S3_BUCKET,
      STORAGE_S3_ENDPOINT: s3.endpoint,
      STORAGE_S3_REGION: 'us-east-1',
      STORAGE_S3_ACCESS_KEY_ID: 'S3RVER',
      STORAGE_S3_SECRET_ACCESS_KEY: 'S3RVER',
      STORAGE_S3_FORCE_PATH_STYLE: 'true',
    }),
  );
  teardown.servers.push(s3Server);
  const s3Base = `http://127.0.0.1:${s3Server.port}`;
  await s3Server.waitUntil(() => fetch(`${s3Base}/readyz`).then((r) => r.ok));
  await warmUp(s3Base);
  const s3PostFile = () =>
    measured(s3Server, () =>
      curl(['-F', `${fileBlock.id}=@${file};type=application/pdf;filename=file.pdf`, `${s3Base}/f/${publicId}`]),
    );
  const s3PutFile = async () => {
    const s3Target = await tool(s3Base, token, 'create_upload', {
      publicId,
      block: 'cv',
      filename: 'big.pdf',
      contentType: 'application/pdf',
      size: bytes,
    });
    return measured(s3Server, () =>
      curl(['-T', file, '-H', `Content-Type: ${s3Target.headers['Content-Type']}`, s3Target.url]),
    );
  };
  const s3Post = await s3PostFile();
  if (s3Post.status !== '200') problems.push(`the no-JS post on S3 answered ${s3Post.status}`);
  const s3Put = await s3PutFile();
  if (s3Put.status !== '200') problems.push(`the presigned PUT answered ${s3Put.status}`);
  // As on disk: warm rounds, post and presigned PUT in turns.
  const s3Warm = { post: [], put: [] };
  for (let round = 0; round < OPTS.rounds; round++) {
    for (const step of round % 2 ? ['put', 'post'] : ['post', 'put']) {
      const m = await (step === 'post' ? s3PostFile() : s3PutFile());
      if (m.status !== '200') problems.push(`a warm ${step} on S3 answered ${m.status}`);
      s3Warm[step].push(m);
      log(`S3 round ${round + 1}: ${step} ${f0(m.ms)} ms, service CPU ${f0(m.cpu)} ms`);
    }
  }
  const s3WarmRatio = median(s3Warm.post.map((m, i) => s3Warm.put[i].ms / m.ms));
  log(`S3: no-JS post ${f0(s3Post.ms)} ms, presigned PUT ${f0(s3Put.ms)} ms, RSS +${f0(s3Post.rssGrowth)} MB`);
  await s3Server.stop();
  s3.proc.kill();

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

  const throughput = cpMs / post.ms;
  const growth = post.rssGrowth;
  const s3Ratio = s3Put.ms / s3Post.ms;
  const cpuRatio = withFile / without;
  const verdict = (ok) => (ok ? 'met' : '**not met**');
  const rate = (ms) => `${f0(ms)} ms (${f0((OPTS.fileMb * 1000) / ms)} MB/s)`;
  const md = [
    `# Files: uploads (${ts})`,
    '',
    `- ${OPTS.fileMb} MB, one built instance per store (production, rate limits off), PostgreSQL and s3rver on this machine; ${os.cpus().length} CPUs, Node ${process.version}; load average ${loadBefore.map((l) => l.toFixed(2)).join(' / ')} (1/5/15 min) at the start: above the CPU count, every time here is inflated by waiting for a core (the service CPU figures are not).`,
    ...(problems.length ? ['', '**Not valid:** ' + problems.join('; ')] : []),
    '',
    '| measure | figure | target | |',
    '| --- | --- | --- | --- |',
    `| no-JS post of ${OPTS.fileMb} MB (curl -F, to disk, synced), the service's first | ${rate(post.ms)}; service CPU ${f0(post.cpu)} ms | | |`,
    `| PUT to create_upload's URL (curl -T, to disk, synced) | ${rate(put.ms)}; service CPU ${f0(put.cpu)} ms; RSS +${f0(put.rssGrowth)} MB | | |`,
    `| \`cp\` of the same file, same disk (synced) | ${rate(cpMs)} | | |`,
    `| floor: a bare Node server piping the PUT to a file (synced) | ${rate(bare.ms)}; CPU ${f0(bare.cpu)} ms; RSS +${f0(bare.rssGrowth)} MB | | |`,
    `| no-JS post vs the bare Node floor | throughput ${(bare.ms / post.ms).toFixed(2)}x; RSS growth ${f0(growth - bare.rssGrowth)} MB above it | | |`,
    `| throughput vs cp, first post | ${throughput.toFixed(2)}x | >= 0.5x | ${verdict(throughput >= 0.5)} |`,
    `| service RSS growth during the post | ${f0(growth)} MB (${f0(post.rssBefore)} → ${f0(post.rssBefore + growth)} MB) | <= 30 MB | ${verdict(growth <= 30)} |`,
    `| warm no-JS post (median of ${OPTS.rounds}, alternated with cp and the PUT) | ${rate(warmMedian('post', 'ms'))}; service CPU ${f0(warmMedian('post', 'cpu'))} ms; RSS +${f0(Math.max(...warm.post.map((m) => m.rssGrowth)))} MB at most | | |`,
    `| warm PUT to create_upload's URL (median of ${OPTS.rounds}) | ${rate(warmMedian('put', 'ms'))}; service CPU ${f0(warmMedian('put', 'cpu'))} ms | | |`,
    `| warm throughput vs cp (median of each round's ratio; cp ${f0(warmMedian('cp', 'ms'))} ms) | ${warmRatio.toFixed(2)}x | >= 0.5x | ${verdict(warmRatio >= 0.5)} |`,
    `| S3 (s3rver): no-JS post through the service | ${rate(s3Post.ms)}; service CPU ${f0(s3Post.cpu)} ms; RSS +${f0(s3Post.rssGrowth)} MB | | |`,
    `| S3 (s3rver): presigned PUT straight to the store (curl -T) | ${rate(s3Put.ms)} | | |`,
    `| S3 throughput vs the presigned PUT | ${s3Ratio.toFixed(2)}x | >= 0.5x | ${verdict(s3Ratio >= 0.5)} |`,
    `| S3 warm no-JS post (median of ${OPTS.rounds}, alternated with the presigned PUT) | ${rate(median(s3Warm.post.map((m) => m.ms)))}; service CPU ${f0(median(s3Warm.post.map((m) => m.cpu)))} ms; presigned PUT ${rate(median(s3Warm.put.map((m) => m.ms)))} | | |`,
    `| S3 warm throughput vs the presigned PUT (median of each round's ratio) | ${s3WarmRatio.toFixed(2)}x | >= 0.5x | ${verdict(s3WarmRatio >= 0.5)} |`,
    `| create_response CPU, one upload named | ${withFile.toFixed(2)} ms/call | | |`,
    `| create_response CPU, no file | ${without.toFixed(2)} ms/call | | |`,
    `| ratio | ${cpuRatio.toFixed(2)}x | <= 1.5x | ${verdict(cpuRatio <= 1.5)} |`,
    '',
  ].join('\n');
  writeReport(`uploads-${ts}.md`, md);
  if (problems.length) process.exitCode = 1;
}

runMain(main, teardown);

#!/usr/bin/env node
'use strict';
/**
 * `npm run test:topology` (issue 37): the service as companies deploy it, on loopback, then the
 * tests in test/topology/ against it. Starts a Redis Cluster (six nodes), PostgreSQL (a primary, a
 * streaming replica, PgBouncer in transaction mode), three built instances and nginx in front of
 * them; writes $TOPOLOGY_DIR/state.json (the tests read it through TOPOLOGY_STATE); runs
 * `node --test --test-concurrency=1` on test/topology/*.test.mjs; tears everything down whatever
 * happens (SIGINT too). Exit code: the tests'. A missing program fails the run with what to install.
 *
 *   npm run test:topology               every test file
 *   npm run test:topology -- redis lb   only the files whose name contains one of these words
 *   TOPOLOGY_DIST=dist/mine npm run test:topology   a build elsewhere (tsc -p tsconfig.build.json --outDir dist/mine)
 *
 * The modules: redis-cluster.js, postgres.js, instances.js (each also usable from a test, given the state).
 */
const { spawn, spawnSync } = require('node:child_process');
const {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { pickPorts, startRedisCluster, stopRedisCluster } = require('./redis-cluster');
const { startInstance, stopInstance, startNginx, alive } = require('./instances');

const ROOT = path.resolve(__dirname, '..', '..');
/** The build the run starts: dist/ (built when missing), or TOPOLOGY_DIST (used as it is). */
const DIST = path.resolve(ROOT, process.env.TOPOLOGY_DIST || 'dist');
const PG_BIN = '/usr/lib/postgresql/15/bin';
const INSTANCES = 3;

/** Every program the topology runs, and the Debian package that brings it. */
const NEEDED = [
  ['/usr/bin/redis-server', 'redis-server'],
  ['/usr/bin/redis-cli', 'redis-tools'],
  ['/usr/sbin/nginx', 'nginx'],
  ['/usr/sbin/pgbouncer', 'pgbouncer'],
  [`${PG_BIN}/pg_ctl`, 'postgresql-15'],
  [`${PG_BIN}/initdb`, 'postgresql-15'],
  [`${PG_BIN}/pg_basebackup`, 'postgresql-15'],
];

function checkPrograms() {
  const missing = NEEDED.filter(([file]) => !existsSync(file));
  if (missing.length === 0) return;
  const packages = [...new Set(missing.map(([, pkg]) => pkg))];
  throw new Error(
    `install ${missing.map(([file]) => path.basename(file)).join(', ')} (apt-get install ${packages.join(' ')}): ` +
      'the topology tests run them and are never skipped',
  );
}

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(file) : statSync(file).mtimeMs);
  }
  return latest;
}

/**
 * `npm run build` when dist/ is missing (CI builds before the run). A dist/ older than src/ is
 * used as it is, with a warning: run `npm run build` first to test the latest sources.
 */
function ensureBuilt() {
  const main = path.join(DIST, 'src', 'main.js');
  if (process.env.TOPOLOGY_DIST) {
    if (!existsSync(main)) throw new Error(`TOPOLOGY_DIST has no src/main.js: ${main}`);
  } else if (!existsSync(main)) {
    log('dist/ is missing: npm run build');
    const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('npm run build failed');
  } else if (statSync(main).mtimeMs < Math.max(newest(path.join(ROOT, 'src')), newest(path.join(ROOT, 'migrations')))) {
    log('warning: dist/ is older than src/ (npm run build to test the latest sources)');
  }
}

const started = Date.now();
function log(message) {
  process.stderr.write(`[topology +${((Date.now() - started) / 1000).toFixed(1)}s] ${message}\n`);
}

/** The CLI of the built service with the topology's env; its --json answer. */
function cli(env, args) {
  const r = spawnSync(process.execPath, [path.join(DIST, 'src', 'cli', 'main.js'), ...args, '--json'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`formwork ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
  return JSON.parse(r.stdout);
}

/** The settings of every instance (production, as deployed); the database and Redis parts come from their modules. */
function instanceEnv(pgEnv, redisEnv) {
  return {
    ...pgEnv,
    ...redisEnv,
    NODE_ENV: 'production',
    // The same key on every instance: each must open what another sealed.
    WEBHOOK_SECRET_KEY: Buffer.alloc(32, 'formwork topology key').toString('base64'),
    WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
    PUBLIC_URL: 'http://formwork.test',
    TRUST_PROXY: '1',
    BOOTSTRAP_DEMO: 'false',
    DATABASE_POOL_SIZE: '8',
    LOG_LEVEL: 'info',
  };
}

/** The test files to run: all, or those whose name contains one of the words given. */
function testFiles(words) {
  const dir = path.join(ROOT, 'test', 'topology');
  const all = readdirSync(dir)
    .filter((f) => f.endsWith('.test.mjs'))
    .sort();
  const chosen = words.length ? all.filter((f) => words.some((w) => f.includes(w))) : all;
  if (chosen.length === 0) throw new Error(`no test file in test/topology matches ${words.join(', ')}`);
  return chosen.map((f) => path.join(dir, f));
}

async function main() {
  checkPrograms();
  const files = testFiles(process.argv.slice(2));
  ensureBuilt();
  // postgres.js lands with PgBouncer and the replica (issue 37's PostgreSQL part).
  const { startPostgres } = require('./postgres');

  const dir = process.env.TOPOLOGY_DIR || mkdtempSync(path.join(os.tmpdir(), 'formwork-topology-'));
  // PostgreSQL runs as its own user when this is root: it must reach its directory below this one.
  chmodSync(dir, 0o755);
  const stateFile = path.join(dir, 'state.json');
  const teardown = [];
  // One teardown, whoever asks (the end of the run, a signal): each waits for the same one to finish.
  let tearing;
  const tearDown = () => (tearing ??= stopAll());
  const stopAll = async () => {
    // The tests may have restarted processes: stop those the state file holds now.
    const state = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : undefined;
    for (const step of teardown.reverse()) await step(state).catch((err) => log(`teardown: ${err.message}`));
    if (process.env.TOPOLOGY_KEEP) log(`kept ${dir}`);
    else {
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
      } catch (err) {
        log(`could not remove ${dir}: ${err.message}`);
      }
    }
  };
  process.on('SIGINT', () => {
    log('interrupted: tearing down');
    void tearDown().finally(() => process.exit(130));
  });
  process.on('SIGTERM', () => void tearDown().finally(() => process.exit(143)));

  try {
    const { bus: redisPorts, ports } = await pickPorts(6, 3 + INSTANCES + 1);
    const [pgPorts, instancePorts, [nginxPort]] = [ports.slice(0, 3), ports.slice(3, 3 + INSTANCES), ports.slice(-1)];
    log('starting the Redis Cluster and PostgreSQL');
    // Both settle before going on, so that a failure of one still finds the other in the teardown.
    const settled = await Promise.allSettled([
      startRedisCluster({ dir: path.join(dir, 'redis'), ports: redisPorts }),
      startPostgres({
        dir: path.join(dir, 'postgres'),
        ports: { primary: pgPorts[0], replica: pgPorts[1], pooler: pgPorts[2] },
      }),
    ]);
    const [redis, pg] = settled.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
    if (redis) teardown.push((state) => stopRedisCluster(state?.redis ?? redis.state));
    if (pg) teardown.push(() => pg.stop());
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const env = instanceEnv(pg.env, redis.env);
    log('migrating, and a workspace with a token for the tests');
    cli(env, ['migrate']);
    cli(env, [
      'workspace',
      'create',
      '--name',
      'Topology',
      '--slug',
      'topology',
      '--plan',
      'pro',
      '--owner-email',
      'owner@topology.test',
    ]);
    const { token } = cli(env, ['token', 'create', '--workspace', 'topology', '--name', 'topology', '--role', 'admin']);

    log(`starting ${INSTANCES} instances and nginx`);
    const instances = await Promise.all(
      instancePorts.map((port, i) =>
        startInstance({
          root: ROOT,
          dist: DIST,
          name: `i${i + 1}`,
          port,
          env,
          log: path.join(dir, `instance-${i + 1}.log`),
        }),
      ),
    );
    teardown.push((state) => Promise.all((state?.instances ?? instances).map((i) => stopInstance(i, 10_000))));
    const nginx = await startNginx({ root: ROOT, dir: path.join(dir, 'nginx'), port: nginxPort, instancePorts });
    teardown.push(async () => {
      if (alive(nginx.pid)) process.kill(nginx.pid, 'SIGTERM');
    });

    const state = {
      url: `http://127.0.0.1:${nginxPort}`,
      root: ROOT,
      dist: DIST,
      dir,
      env,
      workspace: 'topology',
      token,
      instances,
      nginx,
      postgres: pg.state,
      redis: redis.state,
    };
    writeFileSync(stateFile, JSON.stringify(state, null, 2));
    log(`ready (${state.url}); running ${files.map((f) => path.basename(f)).join(', ')}`);

    const code = await new Promise((resolve) => {
      const child = spawn(process.execPath, ['--test', '--test-concurrency=1', ...files], {
        cwd: ROOT,
        env: { ...process.env, TOPOLOGY_STATE: stateFile },
        stdio: 'inherit',
      });
      child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
    });
    log(`tests exited ${code}; tearing down`);
    return code;
  } finally {
    await tearDown();
    log('done');
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`topology: ${err.message}\n`);
    process.exit(1);
  },
);

'use strict';
/**
 * PostgreSQL for the topology run (issue 37): a PostgreSQL 15 primary of its own (wal_level=replica),
 * a streaming replica made with pg_basebackup -R, and PgBouncer in transaction mode in front of the
 * primary, all on loopback ports, trust auth, under `dir`. PostgreSQL and PgBouncer refuse to run as
 * root: when this process is root they run as the `postgres` user, which then owns `dir`.
 *
 *   const pg = await startPostgres({ dir, ports: { primary, replica, pooler } })
 *   pg.env   DATABASE_URL (through PgBouncer), DATABASE_DIRECT_URL, DATABASE_REPLICA_URL, DATABASE_POOLER
 *   pg.state JSON-serialisable; the fault controls below take it (from another process too)
 *   await pg.stop()
 *
 * Faults: restartPooler(state), stopReplica(state), startReplica(state), pauseReplica(state)
 * (SIGSTOP to the replica's every process), resumeReplica(state).
 */
const { execFileSync, spawnSync } = require('node:child_process');
const { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } = require('node:fs');
const net = require('node:net');
const path = require('node:path');

const DATABASE = 'formwork';

/** What to install when a program is missing: the run says so rather than skipping. */
function findBins() {
  const pgBin = ['15', '16', '17']
    .map((v) => `/usr/lib/postgresql/${v}/bin`)
    .find((d) => existsSync(path.join(d, 'pg_basebackup')));
  const pgbouncer = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p));
  const missing = [];
  if (!pgBin) missing.push('postgresql-15 (initdb, pg_ctl, pg_basebackup: apt-get install postgresql-15)');
  if (!pgbouncer) missing.push('pgbouncer (apt-get install pgbouncer)');
  if (missing.length) throw new Error(`The PostgreSQL topology needs ${missing.join(' and ')}`);
  return { pgBin, pgbouncer };
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** Runs a program as the user PostgreSQL accepts (postgres when this process is root). */
function run(state, file, args, opts = {}) {
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
  const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout: opts.timeout ?? 120_000, cwd: state.dir });
  if (r.status !== 0 && !opts.allowFail) {
    throw new Error(`${path.basename(file)} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`);
  }
  return r;
}

function ownDir(dir) {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (isRoot()) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
}

function pgCtl(state, which, action, extra = []) {
  const dataDir = state.dirs[which];
  const port = state.ports[which];
  const options = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${dataDir}`,
    '-c wal_level=replica',
    '-c max_wal_senders=5',
    '-c max_connections=200',
    '-c hot_standby=on',
    // Long reads on the replica are not cancelled for the primary's vacuum (see docs/operating.md).
    '-c hot_standby_feedback=on',
    '-c fsync=off',
    // The tests read the replica's log to see which reads it served.
    ...(which === 'replica' ? ['-c log_statement=all'] : []),
  ].join(' ');
  const args = ['-D', dataDir, '-l', path.join(state.dir, `${which}.log`), '-w', '-t', '60'];
  if (action === 'start') args.push('-o', options);
  run(state, path.join(state.bin.pg, 'pg_ctl'), [...args, ...extra, action], { allowFail: action === 'stop' });
}

function waitForPort(port, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve();
      });
      s.on('error', () => {
        s.destroy();
        if (Date.now() > until) reject(new Error(`nothing listens on 127.0.0.1:${port}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

function pidOf(file) {
  try {
    return Number(readFileSync(file, 'utf8').split('\n')[0]) || undefined;
  } catch {
    return undefined;
  }
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function startPooler(state) {
  run(state, state.bin.pgbouncer, ['-d', state.poolerIni]);
  await waitForPort(state.ports.pooler);
}

async function startPostgres({ dir, ports }) {
  const bins = findBins();
  dir = path.resolve(dir);
  rmSync(dir, { recursive: true, force: true });
  ownDir(dir);
  const state = {
    dir,
    ports,
    bin: { pg: bins.pgBin, pgbouncer: bins.pgbouncer },
    dirs: { primary: path.join(dir, 'primary'), replica: path.join(dir, 'replica') },
    poolerIni: path.join(dir, 'pgbouncer.ini'),
    poolerPidFile: path.join(dir, 'pgbouncer.pid'),
  };
  run(state, path.join(bins.pgBin, 'initdb'), [
    '-D',
    state.dirs.primary,
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  pgCtl(state, 'primary', 'start');
  run(state, path.join(bins.pgBin, 'createdb'), [
    '-h',
    '127.0.0.1',
    '-p',
    String(ports.primary),
    '-U',
    'postgres',
    DATABASE,
  ]);
  run(state, path.join(bins.pgBin, 'pg_basebackup'), [
    ...['-h', '127.0.0.1', '-p', String(ports.primary), '-U', 'postgres'],
    ...['-D', state.dirs.replica, '-R', '-X', 'stream', '-c', 'fast'],
  ]);
  pgCtl(state, 'replica', 'start');
  writeFileSync(path.join(dir, 'userlist.txt'), '"postgres" ""\n');
  writeFileSync(
    state.poolerIni,
    [
      '[databases]',
      `* = host=127.0.0.1 port=${ports.primary}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${ports.pooler}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 2000',
      'default_pool_size = 40',
      `pidfile = ${state.poolerPidFile}`,
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
      'ignore_startup_parameters = extra_float_digits',
      '',
    ].join('\n'),
  );
  if (isRoot()) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
  await startPooler(state);
  const url = (port) => `postgres://postgres@127.0.0.1:${port}/${DATABASE}`;
  return {
    env: {
      DATABASE_URL: url(ports.pooler),
      DATABASE_DIRECT_URL: url(ports.primary),
      DATABASE_REPLICA_URL: url(ports.replica),
      DATABASE_POOLER: 'transaction',
    },
    state,
    stop: () => stopPostgres(state),
  };
}

async function stopPostgres(state) {
  const pooler = pidOf(state.poolerPidFile);
  if (pooler && alive(pooler)) process.kill(pooler, 'SIGTERM');
  await resumeReplica(state).catch(() => undefined);
  pgCtl(state, 'replica', 'stop', ['-m', 'immediate']);
  pgCtl(state, 'primary', 'stop', ['-m', 'fast']);
}

/** PgBouncer stopped at once (SIGTERM: its client connections cut) and started again. */
async function restartPooler(state) {
  const pid = pidOf(state.poolerPidFile);
  if (pid && alive(pid)) {
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 200 && alive(pid); i++) await new Promise((r) => setTimeout(r, 25));
  }
  await startPooler(state);
}

async function stopReplica(state) {
  await resumeReplica(state);
  pgCtl(state, 'replica', 'stop', ['-m', 'fast']);
}

/** The statements the replica logged since `offset` (its log's length then: see replicaLogSize). */
function replicaStatements(state, offset = 0) {
  return readFileSync(path.join(state.dir, 'replica.log'), 'utf8').slice(offset);
}

const replicaLogSize = (state) => replicaStatements(state).length;

async function startReplica(state) {
  pgCtl(state, 'replica', 'start');
}

/** The replica's postmaster and every process it started (backends, WAL receiver and replay). */
function replicaProcesses(state) {
  const root = pidOf(path.join(state.dirs.replica, 'postmaster.pid'));
  if (!root) return [];
  const parents = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  return [root, ...[...parents].filter(([, ppid]) => ppid === root).map(([pid]) => pid)];
}

async function pauseReplica(state) {
  for (const pid of replicaProcesses(state)) process.kill(pid, 'SIGSTOP');
}

async function resumeReplica(state) {
  for (const pid of replicaProcesses(state)) process.kill(pid, 'SIGCONT');
}

module.exports = {
  startPostgres,
  stopPostgres,
  restartPooler,
  stopReplica,
  startReplica,
  pauseReplica,
  resumeReplica,
  replicaStatements,
  replicaLogSize,
};

// By hand: node scripts/topology/postgres.js <dir> [primary replica pooler] prints the env and state.
if (require.main === module) {
  const [dir = '/tmp/formwork-topology-pg', a = '55432', b = '55433', c = '56432'] = process.argv.slice(2);
  startPostgres({ dir, ports: { primary: Number(a), replica: Number(b), pooler: Number(c) } }).then(
    (pg) => {
      writeFileSync(path.join(dir, 'state.json'), JSON.stringify(pg.state));
      process.stdout.write(`${JSON.stringify({ env: pg.env, state: path.join(dir, 'state.json') }, null, 2)}\n`);
    },
    (err) => {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    },
  );
}

'use strict';
/**
 * A Redis Cluster for the topology run (issue 37): six `redis-server --cluster-enabled yes` on
 * loopback ports under `dir` (three masters, three replicas), joined with
 * `redis-cli --cluster create ... --cluster-replicas 1`.
 *
 *   const redis = await startRedisCluster({ dir, ports })   // six ports
 *   redis.env    REDIS_CLUSTER_NODES
 *   redis.state  JSON-serialisable: { dir, nodes: [{ port, pid }], bin }; the faults below take it
 *   await redis.stop()
 *
 * Faults (from another process too, given the state): killNode(state, port) (kill -9),
 * startNode(state, port) (it rejoins, as a replica of the promoted one), masters(state),
 * waitClusterOk(state).
 */
const { spawn, spawnSync } = require('node:child_process');
const { existsSync, mkdirSync, openSync, closeSync } = require('node:fs');
const net = require('node:net');
const path = require('node:path');

/** A node is declared failed after this long without answering; its replica is promoted then. */
const NODE_TIMEOUT_MS = 1_000;

function findBins() {
  const which = (name) =>
    ['/usr/bin', '/usr/local/bin', '/usr/sbin'].map((d) => path.join(d, name)).find((p) => existsSync(p));
  const bins = { server: which('redis-server'), cli: which('redis-cli') };
  if (!bins.server || !bins.cli) {
    throw new Error('The Redis Cluster needs redis-server and redis-cli: install redis (apt-get install redis-server)');
  }
  return bins;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function cli(state, port, args, opts = {}) {
  const r = spawnSync(state.bin.cli, ['-h', '127.0.0.1', '-p', String(port), ...args], {
    encoding: 'utf8',
    timeout: opts.timeout ?? 10_000,
  });
  if (r.status !== 0 && !opts.allowFail) {
    throw new Error(`redis-cli -p ${port} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`);
  }
  return r.stdout ?? '';
}

/** Starts one node (again): its nodes.conf in its own directory keeps its identity across restarts. */
function startNode(state, port) {
  const dir = path.join(state.dir, String(port));
  mkdirSync(dir, { recursive: true });
  const log = openSync(path.join(dir, 'redis.log'), 'a');
  const child = spawn(
    state.bin.server,
    [
      ...['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no'],
      ...['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'],
      ...['--cluster-node-timeout', String(NODE_TIMEOUT_MS), '--cluster-replica-validity-factor', '0'],
      ...['--save', '', '--appendonly', 'no', '--protected-mode', 'no'],
    ],
    { detached: true, stdio: ['ignore', log, log] },
  );
  child.unref();
  closeSync(log);
  const node = state.nodes.find((n) => n.port === port);
  if (node) node.pid = child.pid;
  else state.nodes.push({ port, pid: child.pid });
  return waitPing(state, port);
}

async function waitPing(state, port, timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (cli(state, port, ['PING'], { allowFail: true }).trim() === 'PONG') return;
    await sleep(50);
  }
  throw new Error(`redis-server on port ${port} did not answer within ${timeoutMs} ms`);
}

/** kill -9: the node vanishes without a word, as a crashed host does. */
function killNode(state, port) {
  const node = state.nodes.find((n) => n.port === port);
  if (!node?.pid) return;
  try {
    process.kill(node.pid, 'SIGKILL');
  } catch {
    // already gone
  }
  node.pid = undefined;
}

/** The masters by port, as the first answering node sees them (failed ones left out). */
function masters(state) {
  for (const { port, pid } of state.nodes) {
    if (!pid) continue;
    const out = cli(state, port, ['CLUSTER', 'NODES'], { allowFail: true });
    if (!out.trim()) continue;
    // <id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slot ranges...>
    return out
      .split('\n')
      .map((line) => line.split(' '))
      .filter((f) => f.length > 8 && f[2].split(',').includes('master') && !f[2].includes('fail'))
      .map((f) => Number(f[1].split('@')[0].split(':').pop()));
  }
  return [];
}

/** Waits until every live node says cluster_state:ok and the three masters owning slots are live ones. */
async function waitClusterOk(state, timeoutMs = 60_000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const live = state.nodes.filter((n) => n.pid);
    const ok = live.every((n) => /cluster_state:ok/.test(cli(state, n.port, ['CLUSTER', 'INFO'], { allowFail: true })));
    const owners = masters(state);
    if (ok && owners.length === 3 && owners.every((p) => live.some((n) => n.port === p))) return;
    await sleep(100);
  }
  throw new Error(`the Redis Cluster was not ok within ${timeoutMs} ms`);
}

async function startRedisCluster({ dir, ports }) {
  if (ports.length !== 6) throw new Error('a Redis Cluster of three masters and three replicas needs six ports');
  const state = { dir: path.resolve(dir), nodes: [], bin: findBins() };
  mkdirSync(state.dir, { recursive: true });
  try {
    await Promise.all(ports.map((port) => startNode(state, port)));
    cli(
      state,
      ports[0],
      ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'],
      { timeout: 60_000 },
    );
    await waitClusterOk(state);
  } catch (err) {
    await stopRedisCluster(state);
    throw err;
  }
  return {
    env: { REDIS_CLUSTER_NODES: ports.map((p) => `127.0.0.1:${p}`).join(',') },
    state,
    stop: () => stopRedisCluster(state),
  };
}

async function stopRedisCluster(state) {
  for (const node of state.nodes) killNode(state, node.port);
}

/** Listens on a loopback port (0: any free one): the server, or null when the port is taken. */
function listenOn(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(null));
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}

/**
 * Distinct free loopback ports: `withBus` for Redis Cluster nodes, whose port + 10000 (the
 * cluster bus) must be free too, taken in 10000-19999 so that neither is in the ephemeral range
 * an outgoing connection may take meanwhile; then `plain` ones of any kind. Every pick is held
 * open until all are made, so no two picks (nor a bus port) are the same port.
 */
async function pickPorts(withBus, plain) {
  const held = [];
  try {
    const bus = [];
    while (bus.length < withBus) {
      const port = 10000 + Math.floor(Math.random() * 10000);
      const node = await listenOn(port);
      if (!node) continue;
      held.push(node);
      const nodeBus = await listenOn(port + 10000);
      if (!nodeBus) continue;
      held.push(nodeBus);
      bus.push(port);
    }
    const ports = [];
    while (ports.length < plain) {
      const srv = await listenOn(0);
      if (!srv) continue;
      held.push(srv);
      ports.push(srv.address().port);
    }
    return { bus, ports };
  } finally {
    await Promise.all(held.map((srv) => new Promise((resolve) => srv.close(resolve))));
  }
}

module.exports = { pickPorts, startRedisCluster, stopRedisCluster, startNode, killNode, masters, waitClusterOk, cli };

'use strict';
/**
 * Budget checks on a Redis Cluster against one Redis (issue 37: p50 at most 1.2x). A budget check
 * is what an authenticated request costs: RateLimitService's pair (the IP's and the credential's
 * hits, on two slots of a cluster), through the built storage (dist/) with the service's own
 * clients. Rounds alternate single / cluster, each BENCH_CHECKS checks with BENCH_IN_FLIGHT at once
 * over BENCH_CREDENTIALS credentials (BENCH_IN_FLIGHT: 1,8 by default); the ratio is of the medians of each round's p50.
 * A third store, three masters without replicas, shows what the replicas cost here: each write
 * wakes a replica's process too, and all nine servers share this machine's cores (not so in production).
 *
 *   npm run build && node bench/topology.js    (needs redis-server and redis-cli; REDIS_URL: the single one)
 *   BENCH_DIST=dist/mine node bench/topology.js
 */
const { mkdtempSync, rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { DIST, envNumber, log, percentile, requireBuilt } = require('./lib');

/** BENCH_DIST: a build elsewhere (`tsc -p tsconfig.build.json --outDir <dir>`), measured instead of dist/. */
const BUILT = process.env.BENCH_DIST ? path.resolve(process.env.BENCH_DIST, 'src') : DIST;
const STORAGE = path.join(BUILT, 'rate-limit', 'redis.storage.js');
requireBuilt([STORAGE], 'bench');
const { RedisThrottlerStorage, createRedisClient, createRedisClusterClient } = require(STORAGE);
const { cli, pickPorts, startNode, startRedisCluster, stopRedisCluster } = require('../scripts/topology/redis-cluster');

const ROUNDS = envNumber('BENCH_ROUNDS', 6, { integer: true, min: 2 });
const CHECKS = envNumber('BENCH_CHECKS', 5_000, { integer: true, min: 100 });
/** Checks in flight at once: one (a request's own latency) and several (instances under load). */
const IN_FLIGHT = (process.env.BENCH_IN_FLIGHT || '1,8').split(',').map(Number);
const CREDENTIALS = envNumber('BENCH_CREDENTIALS', 200, { integer: true, min: 1 });
const TARGET = 1.2;

/** One round: CHECKS pairs, IN_FLIGHT at a time; each check's time in ms, sorted. */
async function round(storage, label, inFlight) {
  const times = [];
  let next = 0;
  const worker = async () => {
    while (next < CHECKS) {
      const i = next++;
      const at = process.hrtime.bigint();
      await storage.incrementPair(
        `rl:ip:bench-${label}-${i % 50}`,
        `rl:credential:bench-${label}-${i % CREDENTIALS}`,
        60_000,
        1e9,
        1e9,
      );
      times.push(Number(process.hrtime.bigint() - at) / 1e6);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return times.sort((a, b) => a - b);
}

/** Three masters without replicas (startRedisCluster makes 3 + 3). */
async function startBareCluster(dir, ports, bin) {
  const state = { dir, nodes: [], bin };
  await Promise.all(ports.map((port) => startNode(state, port)));
  const create = ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0'];
  cli(state, ports[0], [...create, '--cluster-yes'], { timeout: 60_000 });
  for (let i = 0; i < 300 && !ports.every((p) => /cluster_state:ok/.test(cli(state, p, ['CLUSTER', 'INFO']))); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return state;
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'formwork-bench-topology-'));
  const { bus: ports } = await pickPorts(9, 0);
  const cluster = await startRedisCluster({ dir, ports: ports.slice(0, 6) });
  let bare;
  const single = createRedisClient(process.env.REDIS_URL || 'redis://127.0.0.1:6379');
  const clustered = createRedisClusterClient({ nodes: [{ host: '127.0.0.1', port: ports[0] }], tls: false });
  const bareClient = createRedisClusterClient({ nodes: [{ host: '127.0.0.1', port: ports[6] }], tls: false });
  try {
    bare = await startBareCluster(path.join(dir, 'bare'), ports.slice(6), cluster.state.bin);
    await Promise.all([single.connect(), clustered.connect(), bareClient.connect()]);
    const stores = {
      single: new RedisThrottlerStorage(single),
      cluster: new RedisThrottlerStorage(clustered),
      'no replicas': new RedisThrottlerStorage(bareClient),
    };
    for (const store of Object.values(stores)) await round(store, 'warm', 8);
    const median = (xs) =>
      percentile(
        [...xs].sort((x, y) => x - y),
        50,
      );
    const out = [];
    for (const inFlight of IN_FLIGHT) {
      const p50s = { single: [], cluster: [], 'no replicas': [] };
      const rows = [];
      for (let r = 0; r < ROUNDS; r++) {
        // Alternated, and the order swapped each round: neither gets the quieter moments.
        for (const name of r % 2 ? ['no replicas', 'cluster', 'single'] : ['single', 'cluster', 'no replicas']) {
          const times = await round(stores[name], `${name}${inFlight}-${r}`, inFlight);
          p50s[name].push(percentile(times, 50));
          rows.push(
            `| ${r + 1} | ${name} | ${percentile(times, 50).toFixed(3)} | ${percentile(times, 99).toFixed(3)} |`,
          );
        }
      }
      const ratio = median(p50s.cluster) / median(p50s.single);
      const bareRatio = median(p50s['no replicas']) / median(p50s.single);
      out.push(
        `Budget checks (IP + credential pair), ${CHECKS} per round, ${inFlight} in flight, ${CREDENTIALS} credentials, ${ROUNDS} alternated rounds`,
        '',
        '| round | store | p50 ms | p99 ms |',
        '| --- | --- | --- | --- |',
        ...rows,
        '',
        `p50 (median of rounds), ${inFlight} in flight: single Redis ${median(p50s.single).toFixed(3)} ms, Redis Cluster ${median(p50s.cluster).toFixed(3)} ms: ${ratio.toFixed(2)}x (target at most ${TARGET}x) ${ratio <= TARGET ? 'MET' : 'NOT MET'}`,
        `three masters without replicas: ${median(p50s['no replicas']).toFixed(3)} ms, ${bareRatio.toFixed(2)}x`,
        '',
      );
    }
    process.stdout.write(out.join('\n'));
  } finally {
    single.disconnect();
    clustered.disconnect();
    bareClient.disconnect();
    await cluster.stop();
    if (bare) await stopRedisCluster(bare);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  log(err.stack || err.message);
  process.exit(1);
});

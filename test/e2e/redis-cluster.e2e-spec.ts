import Redis, { Cluster } from 'ioredis';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  budgetRedisKey,
  createRedisClient,
  createRedisClusterClient,
  RedisThrottlerStorage,
} from '../../src/rate-limit/redis.storage';
import { REDIS_URL, requireRedis, sleep } from '../utils/cluster';

// The topology run's own cluster (six redis-server, three masters and three replicas); a plain script.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const redisCluster = require('../../scripts/topology/redis-cluster.js');

interface ClusterState {
  nodes: Array<{ port: number; pid?: number }>;
}

/** The budgets' Redis storage on a real Redis Cluster, and on one Redis for the same pair semantics. */
describe('budgets on a Redis Cluster (REDIS_CLUSTER_NODES)', () => {
  let dir: string;
  let cluster: { state: ClusterState; stop(): Promise<void> };
  let client: Cluster;
  let storage: RedisThrottlerStorage;
  const run = `${Date.now()}`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'formwork-redis-cluster-'));
    // Six nodes whose cluster bus ports (port + 10000) are free too.
    const { bus: ports } = (await redisCluster.pickPorts(6, 0)) as { bus: number[] };
    cluster = await redisCluster.startRedisCluster({ dir, ports });
    client = createRedisClusterClient({ nodes: [{ host: '127.0.0.1', port: ports[0] }], tls: false });
    storage = new RedisThrottlerStorage(client);
    await client.connect();
  }, 60_000);

  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The master's port that holds a key now, as the cluster says. */
  const ownerOf = (key: string) => {
    // Asked of the first node that answers: the one asked first may be the master a test killed.
    const answers = cluster.state.nodes.map(({ port }) =>
      String(redisCluster.cli(cluster.state, port, ['CLUSTER', 'KEYSLOT', key], { allowFail: true })).trim(),
    );
    const slot = Number(answers.find((answer) => /^\d+$/.test(answer)));
    const slots = client.slots[slot] ?? [];
    return Number(String(slots[0]).split(':')[1]);
  };

  it('counts each budget on one slot, different credentials spread over the masters', async () => {
    const keys = Array.from({ length: 30 }, (_, i) => `rl:credential:${run}-${i}`);
    for (const key of keys) {
      const first = await storage.increment(key, 60_000, 120, 0, 'credential');
      const second = await storage.increment(key, 60_000, 120, 0, 'credential');
      expect([first.totalHits, second.totalHits]).toEqual([1, 2]);
      expect(second.timeToExpire).toBeGreaterThanOrEqual(59);
    }
    expect(budgetRedisKey(keys[0])).toBe(`formwork:{rl:credential:${run}-0}`);
    const masters = new Set(keys.map((k) => ownerOf(budgetRedisKey(k))));
    expect(masters.size).toBe(3);
    expect(await client.get(budgetRedisKey(keys[7]))).toBe('2');
  });

  it('counts the IP and the credential together across slots; an IP refusal does not spend the credential', async () => {
    const [ip, credential] = [`rl:ip:${run}`, `rl:credential:${run}-pair`];
    const pair = () => storage.incrementPair(ip, credential, 60_000, 2, 5);
    const first = await pair();
    expect([first.first.totalHits, first.second?.totalHits]).toEqual([1, 1]);
    await pair();
    const refused = await pair();
    expect(refused.first).toMatchObject({ totalHits: 3, isBlocked: true });
    expect(refused.second).toBeUndefined();
    expect(await client.get(budgetRedisKey(credential))).toBe('2');
    expect(await client.get(budgetRedisKey(ip))).toBe('3');
  });

  it('fails fast while a killed master’s slots have no owner, resends nothing, and counts on after the failover', async () => {
    const key = `rl:credential:${run}-failover`;
    for (let i = 0; i < 5; i++) await storage.increment(key, 60_000, 120, 0, 'credential');
    const victim = ownerOf(budgetRedisKey(key));
    // Replication is asynchronous: let the replica have the five hits before the kill.
    const direct = new Redis(victim, '127.0.0.1');
    expect(await direct.call('WAIT', '1', '5000')).toBe(1);
    direct.disconnect();
    redisCluster.killNode(cluster.state, victim);

    const refusedAt = Date.now();
    await expect(storage.increment(key, 60_000, 120, 0, 'credential')).rejects.toThrow();
    expect(Date.now() - refusedAt).toBeLessThan(1_500); // a request is not held up by the outage

    // The replica takes over (cluster-node-timeout 1 s); the client learns it from its slot refresh.
    await redisCluster.waitClusterOk(cluster.state);
    let after: Awaited<ReturnType<RedisThrottlerStorage['increment']>> | undefined;
    const until = Date.now() + 10_000;
    while (!after && Date.now() < until) {
      after = await storage.increment(key, 60_000, 120, 0, 'credential').catch(() => undefined);
      if (!after) await sleep(100);
    }
    // The five hits from before the kill survived on the replica, and every failed attempt counted nothing.
    expect(after?.totalHits).toBe(6);
    expect(ownerOf(budgetRedisKey(key))).not.toBe(victim);
    await expect(storage.ping(1_000)).resolves.toBeUndefined();
    // The killed node comes back as a replica of the promoted one.
    await redisCluster.startNode(cluster.state, victim);
    await redisCluster.waitClusterOk(cluster.state);
  }, 60_000);
});

describe('budgets on one Redis (REDIS_URL)', () => {
  let client: Redis;

  beforeAll(async () => {
    await requireRedis();
    client = createRedisClient(REDIS_URL);
    await client.connect();
  });
  afterAll(() => client?.disconnect());

  it('has the same pair semantics: both counted, the credential taken back when the IP refuses', async () => {
    const storage = new RedisThrottlerStorage(client);
    const [ip, credential] = [`rl:ip:single-${Date.now()}`, `rl:credential:single-${Date.now()}`];
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await storage.incrementPair(ip, credential, 60_000, 2, 5));
    expect(results.map((r) => [r.first.totalHits, r.second?.totalHits])).toEqual([
      [1, 1],
      [2, 2],
      [3, undefined],
    ]);
    expect(await client.get(budgetRedisKey(credential))).toBe('2');
    expect(await client.pttl(budgetRedisKey(credential))).toBeGreaterThan(50_000);
  });
});

import { DataSource } from 'typeorm';
import type { DatabaseTimeouts } from '../config/config';
import { dataSourceOptions } from './data-source';
import { ReadReplica } from './replica';
import { openGuardedDataSource } from './transaction';

/**
 * The replica's fallbacks against the test PostgreSQL (the streaming replica itself is exercised by
 * the topology run: test/topology/postgres*.test.mjs).
 */
describe('ReadReplica', () => {
  const url = process.env.FORMWORK_TEST_DATABASE_URL!;
  const timeouts: DatabaseTimeouts = { connectMs: 1000, statementMs: 2000, lockMs: 1000, idleInTransactionMs: 5000 };
  let primary: DataSource;
  const replicaAt = (replicaUrl: string | undefined, maxWaitMs = 300) =>
    new ReadReplica(primary, {
      databaseReplicaUrl: replicaUrl,
      databaseReplicaMaxWaitMs: maxWaitMs,
      databasePooler: 'none',
      databaseTimeouts: timeouts,
      databasePoolSize: 2,
    });

  beforeAll(async () => {
    primary = await openGuardedDataSource(dataSourceOptions(url, 2, false));
  });
  afterAll(() => primary?.destroy());

  it('without DATABASE_REPLICA_URL reads the primary and reports nothing', async () => {
    const replica = replicaAt(undefined);
    expect(await replica.source()).toBe(primary);
    expect(await replica.status()).toBeUndefined();
  });

  it('reads the primary when the replica cannot be reached, within the bound, and says so in status', async () => {
    const replica = replicaAt('postgres://postgres@127.0.0.1:1/none');
    const started = Date.now();
    expect(await replica.source()).toBe(primary);
    expect(Date.now() - started).toBeLessThan(1500);
    // Left alone for a while: the next read does not try it again.
    const again = Date.now();
    expect(await replica.source()).toBe(primary);
    expect(Date.now() - again).toBeLessThan(200);
    expect(await replica.status()).toEqual({ ok: false });
    await replica.onModuleDestroy();
  });

  it('never takes a server that is not replaying (a primary given as replica) to hold the latest writes', async () => {
    const replica = replicaAt(url);
    expect(await replica.source()).toBe(primary);
    await replica.onModuleDestroy();
  });

  it('reads again on the primary what the replica failed as unavailable, and lets other errors through', async () => {
    const replica = replicaAt(url);
    const other = {} as DataSource; // stands for the replica's DataSource
    const seen: DataSource[] = [];
    const away = new Error('Connection terminated unexpectedly');
    const result = await replica.read(other, async (db) => {
      seen.push(db);
      if (db === other) throw away;
      return 'from primary';
    });
    expect(result).toBe('from primary');
    expect(seen).toEqual([other, primary]);
    const bug = new Error('column "x" does not exist');
    await expect(replica.read(other, () => Promise.reject(bug))).rejects.toBe(bug);
  });
});

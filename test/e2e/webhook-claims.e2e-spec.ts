import { Client } from 'pg';
import { CLAIM_SQL } from '../../src/webhooks/delivery-loop.repository';
import { testDatabaseUrl } from '../utils/create-test-app';

/** A node of EXPLAIN (FORMAT JSON). */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}

function* nodes(node: PlanNode): Generator<PlanNode> {
  yield node;
  for (const child of node.Plans ?? []) yield* nodes(child);
}

/**
 * The delivery loop's claim after an outage: thousands of deliveries pending for one endpoint, in
 * a small deployment whose workspaces and webhook_endpoints tables were never analysed (autovacuum
 * analyses a table after 50 changes). Each claim must read about a batch of rows, not the backlog:
 * the drain after an outage would otherwise slow to a crawl. Runs on tables of its own (a schema
 * made for it), so that no instance of another test claims these rows.
 */
describe('claiming due webhook deliveries', () => {
  const schema = `claims_${Date.now().toString(36)}_${process.pid}`;
  let db: Client;

  beforeAll(async () => {
    db = new Client({ connectionString: testDatabaseUrl() });
    await db.connect();
    await db.query(`CREATE SCHEMA ${schema}`);
    for (const table of ['workspaces', 'webhook_endpoints', 'webhook_deliveries']) {
      await db.query(`CREATE TABLE ${schema}.${table} (LIKE public.${table} INCLUDING ALL)`);
    }
  });

  afterAll(async () => {
    await db.query(`DROP SCHEMA ${schema} CASCADE`);
    await db.end();
  });

  it('reads a batch of the due index, not every pending delivery, however small tables were analysed', async () => {
    const [pro] = (
      await db.query(`INSERT INTO ${schema}.workspaces (name, slug, plan) VALUES ('Acme', 'acme', 'pro') RETURNING id`)
    ).rows;
    const [free] = (
      await db.query(`INSERT INTO ${schema}.workspaces (name, slug) VALUES ('Quiet', 'quiet') RETURNING id`)
    ).rows;
    const endpoint = async (workspaceId: string) =>
      (
        await db.query(
          `INSERT INTO ${schema}.webhook_endpoints (workspace_id, url, events, secret)
           VALUES ($1, 'https://hooks.example.com/in', '{response.created}', 'whsec_x') RETURNING id`,
          [workspaceId],
        )
      ).rows[0].id as string;
    const active = await endpoint(pro.id);
    const paused = await endpoint(free.id);
    // 20,000 pending after an outage, and the Free workspace's 10 paused ones, due first.
    const queue = (workspaceId: string, endpointId: string, count: number, from: string) =>
      db.query(
        `INSERT INTO ${schema}.webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
         SELECT $1, $2::uuid, 'msg_' || $2::text || g, 'response.created', '{}', now() - $4::interval + g * interval '1 ms'
           FROM generate_series(1, $3::int) g`,
        [workspaceId, endpointId, count, from],
      );
    await queue(free.id, paused, 10, '2 hours');
    await queue(pro.id, active, 20_000, '1 hour');
    // What autovacuum does after that many inserts; the two small tables stay unanalysed.
    await db.query(`ANALYZE ${schema}.webhook_deliveries`);

    await db.query('BEGIN');
    try {
      // The loop's connections plan without bitmap scans (loopConnectionString).
      await db.query(`SET LOCAL search_path = ${schema}`);
      await db.query('SET LOCAL enable_bitmapscan = off');
      const [{ 'QUERY PLAN': plan }] = (await db.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM_SQL}`, [64, 20])).rows;
      const root: PlanNode = plan[0].Plan;
      expect(root['Actual Rows']).toBe(64);
      const read = [...nodes(root)]
        .filter((n) => n['Relation Name'] === 'webhook_deliveries')
        .map((n) => n['Actual Rows'] * n['Actual Loops']);
      expect(read.length).toBeGreaterThan(0);
      // The batch, and the 10 paused rows walked past: not the 20,000.
      expect(Math.max(...read)).toBeLessThanOrEqual(64 + 10);
      expect([...nodes(root)].map((n) => n['Node Type'])).not.toContain('Sort');
      const claimed = await db.query(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE endpoint_id = $1)::int AS paused FROM webhook_deliveries WHERE claim_token IS NOT NULL`,
        [paused],
      );
      expect(claimed.rows[0]).toEqual({ n: 64, paused: 0 });
    } finally {
      await db.query('ROLLBACK');
    }
  });
});

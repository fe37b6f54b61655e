import { Client } from 'pg';
import { CLAIM_SQL, loopConnectionString, RESUME_SQL } from '../../src/webhooks/delivery-loop.repository';
import { testDatabaseUrl } from '../utils/create-test-app';

/** A node of EXPLAIN (FORMAT JSON). */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
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
  let free: string;
  let pausedEndpoint: string;

  /**
   * The claim of a batch of 64 as the loop's connections run it (their settings), rolled back: its
   * plan as run, how many rows it claimed to send (active), and how many are paused.
   */
  async function claimOnce(
    opts: { generic?: boolean } = {},
  ): Promise<{ root: PlanNode; claimed: { active: number; paused: number } }> {
    const statement = `claim_${schema}`;
    await db.query('BEGIN');
    try {
      await db.query(`SET LOCAL search_path = ${schema}`);
      const options = new URL(loopConnectionString('postgres://formwork@db/formwork')).searchParams.get('options')!;
      for (const [, name, value] of options.matchAll(/-c (\w+)=(\S+)/g)) {
        await db.query(`SELECT set_config($1, $2, true)`, [name, value]);
      }
      let explained;
      if (opts.generic) {
        // The loop's claim is a prepared statement: after five runs PostgreSQL may plan it once
        // for any parameters (a generic plan). This forces that plan.
        await db.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
        await db.query(`PREPARE ${statement} AS ${CLAIM_SQL}`);
        explained = await db.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${statement}(64, 20)`);
      } else {
        explained = await db.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM_SQL}`, [64, 20]);
      }
      const [{ 'QUERY PLAN': plan }] = explained.rows;
      const [claimed] = (
        await db.query(
          `SELECT count(*) FILTER (WHERE claim_token IS NOT NULL)::int AS active,
                  count(*) FILTER (WHERE status = 'paused')::int AS paused
             FROM webhook_deliveries`,
        )
      ).rows;
      return { root: plan[0].Plan, claimed };
    } finally {
      await db.query('ROLLBACK');
      // A prepared statement outlives the transaction.
      if (opts.generic) await db.query(`DEALLOCATE ${statement}`);
    }
  }

  /** How many rows of webhook_deliveries the claim's scans went through, at most (returned or filtered out). */
  function deliveriesWalked(root: PlanNode): number {
    return Math.max(
      ...[...nodes(root)]
        .filter((n) => n['Relation Name'] === 'webhook_deliveries')
        .map((n) => (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0)) * n['Actual Loops']),
    );
  }

  beforeAll(async () => {
    db = new Client({ connectionString: testDatabaseUrl() });
    await db.connect();
    await db.query(`CREATE SCHEMA ${schema}`);
    for (const table of ['workspaces', 'webhook_endpoints', 'webhook_deliveries']) {
      await db.query(`CREATE TABLE ${schema}.${table} (LIKE public.${table} INCLUDING ALL)`);
    }
    const workspace = async (slug: string, plan: string) =>
      (
        await db.query(`INSERT INTO ${schema}.workspaces (name, slug, plan) VALUES ($1, $1, $2) RETURNING id`, [
          slug,
          plan,
        ])
      ).rows[0].id as string;
    const endpoint = async (workspaceId: string) =>
      (
        await db.query(
          `INSERT INTO ${schema}.webhook_endpoints (workspace_id, url, events, secret)
           VALUES ($1, 'https://hooks.example.com/in', '{response.created}', 'whsec_x') RETURNING id`,
          [workspaceId],
        )
      ).rows[0].id as string;
    const pro = await workspace('acme', 'pro');
    free = await workspace('quiet', 'free');
    const active = await endpoint(pro);
    const paused = (pausedEndpoint = await endpoint(free));
    // 20,000 pending after an outage, and the Free workspace's 10 paused ones, due first.
    const queue = (workspaceId: string, endpointId: string, count: number, from: string) =>
      db.query(
        `INSERT INTO ${schema}.webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
         SELECT $1, $2::uuid, 'msg_' || $2::text || g, 'response.created', '{}', now() - $4::interval + g * interval '1 ms'
           FROM generate_series(1, $3::int) g`,
        [workspaceId, endpointId, count, from],
      );
    await queue(free, paused, 10, '2 hours');
    await queue(pro, active, 20_000, '1 hour');
    // What autovacuum does after that many inserts; the two small tables stay unanalysed.
    await db.query(`ANALYZE ${schema}.webhook_deliveries`);
  });

  afterAll(async () => {
    await db.query(`DROP SCHEMA ${schema} CASCADE`);
    await db.end();
  });

  it('reads a batch of the due index, not every pending delivery, with small tables never analysed', async () => {
    const { root, claimed } = await claimOnce();
    // The batch: the Free workspace's 10, due first, set aside as paused, and 54 claimed to send.
    expect(root['Actual Rows']).toBe(64);
    expect(claimed).toEqual({ active: 54, paused: 10 });
    // The batch: not the 20,000.
    expect(deliveriesWalked(root)).toBe(64);
    expect([...nodes(root)].map((n) => n['Node Type'])).not.toContain('Sort');
  });

  it("looks up each row's endpoint and workspace by key once a few hundred workspaces are analysed", async () => {
    await db.query(
      `INSERT INTO ${schema}.workspaces (name, slug) SELECT 'w' || g, 'w-' || g FROM generate_series(1, 300) g`,
    );
    await db.query(`ANALYZE ${schema}.workspaces`);
    await db.query(`ANALYZE ${schema}.webhook_endpoints`);
    const { root, claimed } = await claimOnce();
    expect(claimed).toEqual({ active: 54, paused: 10 });
    const types = [...nodes(root)].map((n) => n['Node Type']);
    expect(types).not.toContain('Sort');
    // A table of a few pages read whole once per claimed row costs 15 us a row; a key lookup 2 us.
    expect(types).not.toContain('Seq Scan');
  });

  it('keeps to a batch with the generic plan of the prepared claim too', async () => {
    const { root, claimed } = await claimOnce({ generic: true });
    expect(claimed).toEqual({ active: 54, paused: 10 });
    expect(deliveriesWalked(root)).toBe(64);
    const types = [...nodes(root)].map((n) => n['Node Type']);
    expect(types).not.toContain('Sort');
    expect(types).not.toContain('Seq Scan');
  });

  it('sets paused deliveries aside once, and makes them pending again when they may be sent', async () => {
    const run = async (sql: string, params: unknown[]) => {
      await db.query('BEGIN');
      await db.query(`SET LOCAL search_path = ${schema}`);
      const result = await db.query(sql, params);
      await db.query('COMMIT');
      return result;
    };
    // Leases of an hour: they hold however slow the machine is.
    const first = await run(CLAIM_SQL, [64, 3600]);
    expect(first.rows.filter((r) => !r.active)).toHaveLength(10);
    // The next claim walks past the 54 claimed ones (their lease holds), not the 10 paused.
    const { root, claimed } = await claimOnce();
    expect(deliveriesWalked(root)).toBe(54 + 64);
    expect(claimed).toEqual({ active: 54 + 64, paused: 10 });
    // Nothing to resume while the workspace is on Free.
    expect((await run(RESUME_SQL, [5000])).rowCount).toBe(0);
    await db.query(`UPDATE ${schema}.workspaces SET plan = 'pro' WHERE id = $1`, [free]);
    expect((await run(RESUME_SQL, [5000])).rowCount).toBe(10);
    const again = await run(CLAIM_SQL, [64, 3600]);
    // Due first again, and sent now.
    expect(again.rows.filter((r) => r.active)).toHaveLength(64);
    expect(again.rows.filter((r) => r.endpoint_id === pausedEndpoint)).toHaveLength(10);
    const [{ pending, paused }] = (
      await db.query(
        `SELECT count(*) FILTER (WHERE status = 'pending' AND claim_token IS NULL)::int AS pending,
                count(*) FILTER (WHERE status = 'paused')::int AS paused
           FROM ${schema}.webhook_deliveries`,
      )
    ).rows;
    expect({ pending, paused }).toEqual({ pending: 20_010 - 54 - 64, paused: 0 });

    // A disabled endpoint of a Pro workspace waits too, until it is enabled again.
    await db.query(`UPDATE ${schema}.webhook_endpoints SET enabled = false WHERE id = $1`, [pausedEndpoint]);
    await db.query(
      `INSERT INTO ${schema}.webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
       SELECT $1, $2::uuid, 'msg_late_' || g, 'response.created', '{}', now() - interval '3 hours' FROM generate_series(1, 3) g`,
      [free, pausedEndpoint],
    );
    const third = await run(CLAIM_SQL, [64, 3600]);
    expect(third.rows.filter((r) => r.endpoint_id === pausedEndpoint).map((r) => r.active)).toEqual([
      false,
      false,
      false,
    ]);
    expect((await run(RESUME_SQL, [5000])).rowCount).toBe(0);
    await db.query(`UPDATE ${schema}.webhook_endpoints SET enabled = true WHERE id = $1`, [pausedEndpoint]);
    expect((await run(RESUME_SQL, [5000])).rowCount).toBe(3);
  });

  it('deletes the deliveries whose endpoint is gone, counting them in the batch, so they never block the due ones', async () => {
    // What a submission that raced delete_webhook leaves: deliveries of an endpoint that no longer
    // exists (no foreign key keeps them out), due before everything else.
    const gone = '00000000-0000-4000-8000-00000000dead';
    await db.query(
      `INSERT INTO ${schema}.webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
       SELECT $1, $2::uuid, 'msg_orphan_' || g, 'response.created', '{}', now() - interval '4 hours' FROM generate_series(1, 70) g`,
      [free, gone],
    );
    const count = async () =>
      (await db.query(`SELECT count(*)::int AS n FROM ${schema}.webhook_deliveries WHERE endpoint_id = $1`, [gone]))
        .rows[0].n as number;
    await db.query('BEGIN');
    await db.query(`SET LOCAL search_path = ${schema}`);
    const first = await db.query(CLAIM_SQL, [64, 3600]);
    const second = await db.query(CLAIM_SQL, [64, 3600]);
    await db.query('COMMIT');
    // A full batch of 64 of them, none to send: the loop claims again at once.
    expect(first.rows).toHaveLength(64);
    expect(first.rows.filter((r) => r.active)).toHaveLength(0);
    // The last 6, then deliveries that may be sent.
    expect(second.rows.filter((r) => !r.active)).toHaveLength(6);
    expect(second.rows.filter((r) => r.active)).toHaveLength(58);
    expect(await count()).toBe(0);
  });
});

import { Client } from 'pg';
import {
  CLAIM_SQL,
  claimParameters,
  DeliveryLoopRepository,
  InFlight,
  loopConnectionString,
  RESUME_SQL,
} from '../../src/webhooks/delivery-loop.repository';
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
/** Caps to claim with (the loop has its own constants): 4 in flight per endpoint, 32 per workspace, a window of 256 due rows. */
const CAPS = { perEndpoint: 4, perWorkspace: 32, window: 256 };
const NOTHING_IN_FLIGHT: InFlight = { byEndpoint: new Map(), byWorkspace: new Map() };
/** CLAIM_SQL's parameters for a batch of 64 with leases of `lease` seconds, as an instance with nothing in flight claims it. */
const claimOf = (lease = 20, inFlight = NOTHING_IN_FLIGHT) => claimParameters(64, lease, inFlight, CAPS);

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
        const literals = claimOf().map((p) => (Array.isArray(p) ? `'{${p.join(',')}}'` : String(p)));
        explained = await db.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${statement}(${literals.join(', ')})`);
      } else {
        explained = await db.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM_SQL}`, claimOf());
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
    for (const table of ['workspaces', 'webhook_endpoints', 'webhook_deliveries', 'webhook_attempts']) {
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

  /** Sorts (the window functions' partitions) only ever sort the window's rows, never the backlog. */
  const sortsAtMostTheWindow = (root: PlanNode) =>
    expect(
      [...nodes(root)].filter((n) => n['Node Type'] === 'Sort').every((n) => n['Actual Rows'] <= CAPS.window),
    ).toBe(true);

  it('reads a window of the due index, not every pending delivery, with small tables never analysed', async () => {
    const { root, claimed } = await claimOnce();
    // The Free workspace's 10, due first, set aside as paused, and 4 claimed to send: one
    // endpoint's backlog never fills a batch (4 in flight per endpoint).
    expect(root['Actual Rows']).toBe(14);
    expect(claimed).toEqual({ active: 4, paused: 10 });
    // The window: not the 20,000.
    expect(deliveriesWalked(root)).toBe(CAPS.window);
    sortsAtMostTheWindow(root);
  });

  it("looks up each row's endpoint and workspace by key once a few hundred workspaces are analysed", async () => {
    await db.query(
      `INSERT INTO ${schema}.workspaces (name, slug) SELECT 'w' || g, 'w-' || g FROM generate_series(1, 300) g`,
    );
    await db.query(`ANALYZE ${schema}.workspaces`);
    await db.query(`ANALYZE ${schema}.webhook_endpoints`);
    const { root, claimed } = await claimOnce();
    expect(claimed).toEqual({ active: 4, paused: 10 });
    const types = [...nodes(root)].map((n) => n['Node Type']);
    sortsAtMostTheWindow(root);
    // A table of a few pages read whole once per claimed row costs 15 us a row; a key lookup 2 us.
    expect(types).not.toContain('Seq Scan');
  });

  it('keeps to the window with the generic plan of the prepared claim too', async () => {
    const { root, claimed } = await claimOnce({ generic: true });
    expect(claimed).toEqual({ active: 4, paused: 10 });
    expect(deliveriesWalked(root)).toBe(CAPS.window);
    const types = [...nodes(root)].map((n) => n['Node Type']);
    sortsAtMostTheWindow(root);
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
    const first = await run(CLAIM_SQL, claimOf(3600));
    expect(first.rows.filter((r) => !r.active)).toHaveLength(10);
    // The next claim walks past the 4 claimed ones (their lease holds), not the 10 paused.
    const { root, claimed } = await claimOnce();
    expect(deliveriesWalked(root)).toBe(4 + CAPS.window);
    expect(claimed).toEqual({ active: 4 + 4, paused: 10 });
    // Nothing to resume while the workspace is on Free.
    expect((await run(RESUME_SQL, [5000])).rowCount).toBe(0);
    await db.query(`UPDATE ${schema}.workspaces SET plan = 'pro' WHERE id = $1`, [free]);
    expect((await run(RESUME_SQL, [5000])).rowCount).toBe(10);
    // The instance has 4 in flight for the big backlog's endpoint: none of its rows are taken.
    const busy: InFlight = {
      byEndpoint: new Map([[first.rows[10].endpoint_id, 4]]),
      byWorkspace: new Map([[first.rows[10].workspace_id, 4]]),
    };
    const again = await run(CLAIM_SQL, claimParameters(64, 3600, busy, CAPS));
    // Due first again, and sent now, 4 at a time (the endpoint's cap).
    expect(again.rows.map((r) => [r.active, r.endpoint_id])).toEqual(Array(4).fill([true, pausedEndpoint]));
    const [{ pending, paused }] = (
      await db.query(
        `SELECT count(*) FILTER (WHERE status = 'pending' AND claim_token IS NULL)::int AS pending,
                count(*) FILTER (WHERE status = 'paused')::int AS paused
           FROM ${schema}.webhook_deliveries`,
      )
    ).rows;
    expect({ pending, paused }).toEqual({ pending: 20_010 - 4 - 4, paused: 0 });

    // A disabled endpoint of a Pro workspace waits too, until it is enabled again.
    await db.query(`UPDATE ${schema}.webhook_endpoints SET enabled = false WHERE id = $1`, [pausedEndpoint]);
    await db.query(
      `INSERT INTO ${schema}.webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
       SELECT $1, $2::uuid, 'msg_late_' || g, 'response.created', '{}', now() - interval '3 hours' FROM generate_series(1, 3) g`,
      [free, pausedEndpoint],
    );
    const third = await run(CLAIM_SQL, claimOf(3600));
    // The 3 and the 6 left of the 10 (4 were claimed): set aside, whatever the endpoint's cap.
    expect(third.rows.filter((r) => r.endpoint_id === pausedEndpoint).map((r) => r.active)).toEqual(
      Array(9).fill(false),
    );
    expect((await run(RESUME_SQL, [5000])).rowCount).toBe(0);
    await db.query(`UPDATE ${schema}.webhook_endpoints SET enabled = true WHERE id = $1`, [pausedEndpoint]);
    expect((await run(RESUME_SQL, [5000])).rowCount).toBe(9);
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
    const first = await db.query(CLAIM_SQL, claimOf(3600));
    const second = await db.query(CLAIM_SQL, claimOf(3600));
    await db.query('COMMIT');
    // A full batch of 64 of them, none to send (no cap applies to them): the loop claims again at once.
    expect(first.rows).toHaveLength(64);
    expect(first.rows.filter((r) => r.active)).toHaveLength(0);
    // The last 6, then deliveries that may be sent (each endpoint's 4).
    expect(second.rows.filter((r) => !r.active)).toHaveLength(6);
    expect(second.rows.filter((r) => r.active)).toHaveLength(8);
    expect(await count()).toBe(0);
  });

  it('counts an attempt when it is recorded, not when claimed: a crash between the two uses up none', async () => {
    const u = new URL(testDatabaseUrl());
    u.searchParams.set('options', `-c search_path=${schema}`);
    const loop = new DeliveryLoopRepository(u.toString(), () => undefined);
    try {
      const [{ id: workspaceId }] = (
        await db.query(
          `INSERT INTO ${schema}.workspaces (name, slug, plan) VALUES ('crash', 'crash', 'pro') RETURNING id`,
        )
      ).rows;
      const [{ id: endpointId }] = (
        await db.query(
          `INSERT INTO ${schema}.webhook_endpoints (workspace_id, url, events, secret)
           VALUES ($1, 'https://hooks.example.com/crash', '{form.created}', 'whsec_x') RETURNING id`,
          [workspaceId],
        )
      ).rows;
      // Due before everything else here, so that a claim of one takes it.
      const [{ id, next_attempt_at: due }] = (
        await db.query(
          `INSERT INTO ${schema}.webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
           VALUES ($1, $2, 'msg_crash', 'form.created', '{}', now() - interval '1 day') RETURNING id, next_attempt_at`,
          [workspaceId, endpointId],
        )
      ).rows;
      const state = async () =>
        (
          await db.query(
            `SELECT attempt_count, next_attempt_at, status FROM ${schema}.webhook_deliveries WHERE id = $1`,
            [id],
          )
        ).rows[0];
      const caps = { ...CAPS, window: 8 };
      const [first] = await loop.claim(1, 3600, NOTHING_IN_FLIGHT, caps);
      expect(first).toMatchObject({ id, active: true, attempt_count: 0 });
      expect(await state()).toEqual({ attempt_count: 0, next_attempt_at: due, status: 'pending' });
      // The instance dies before it records the attempt: the lease ends, and the row is claimed again.
      await db.query(
        `UPDATE ${schema}.webhook_deliveries SET claimed_until = now() - interval '1 second' WHERE id = $1`,
        [id],
      );
      const [second] = await loop.claim(1, 3600, NOTHING_IN_FLIGHT, caps);
      expect(second).toMatchObject({ id, active: true, attempt_count: 0 });
      expect(second.claim_token).not.toBe(first.claim_token);
      expect(await state()).toEqual({ attempt_count: 0, next_attempt_at: due, status: 'pending' });
      // The attempt made is counted when recorded, and its retry scheduled.
      const next = new Date(Date.now() + 60_000);
      await loop.recordAttempt(
        second,
        {
          attemptedAt: new Date(),
          statusCode: 503,
          durationMs: 5,
          error: 'the endpoint answered 503',
          responseBody: null,
        },
        'retry',
        next,
        5,
      );
      expect(await state()).toEqual({ attempt_count: 1, next_attempt_at: next, status: 'pending' });
    } finally {
      await loop.end();
    }
  });
});

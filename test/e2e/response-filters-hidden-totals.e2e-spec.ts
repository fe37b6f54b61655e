import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { HiddenCounts1796000450000 } from '../../migrations/1796000450000-HiddenCounts';
import { FormRecord, FormsService } from '../../src/forms/forms.service';
import { ResponseStatsRepository } from '../../src/summaries/response-stats.repository';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

/**
 * The total of a list filtered with equals / in on a hidden field is read from hidden_counts
 * (issue 38), kept by the sequencer and by deletes: it must equal the filtered count after
 * submissions, deletions and form deletion, per form, and stay exact when the counts were not kept
 * (an instance of the version before them, during a deploy).
 */
describe('list_responses: exact totals of hidden-field filters', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  const LONG = 'é'.repeat(999) + 'x'; // 1000 characters, 2000 bytes: past a btree key
  const VALUES = ['mail', 'ad', 'Mail', 'ad ', LONG, LONG.slice(0, 999) + 'y'];

  interface Side {
    ws: TestWorkspace;
    token: string;
    form: FormRecord;
    ids: string[];
  }
  let a: Side;
  let b: Side;

  const setUp = async (title: string): Promise<Side> => {
    const ws = await createWorkspace(app);
    const { token } = await createToken(app, ws);
    const forms = app.get(FormsService);
    const created = await forms.create(ws.id, {
      title,
      blocks: [{ type: 'short_text', title: 'Name' }],
      hiddenFields: ['campaign', 'ref'],
    });
    return { ws, token, form: await forms.get(ws.id, created.publicId), ids: [] };
  };

  const submit = async (side: Side, hidden: Record<string, string>) => {
    const res = await callTool(app, side.token, 'create_response', {
      publicId: side.form.publicId,
      answers: { [side.form.blocks[0].id]: 'x' },
      hidden,
    });
    expect(res.status).toBe(200);
    side.ids.push(res.body.id);
  };

  /** Every filter the counts serve, and a few they do not, with the total the rows give. */
  const filters = [
    ...VALUES.map((value) => ({ hidden: 'campaign', op: 'equals', value })),
    { hidden: 'campaign', op: 'equals', value: '' },
    { hidden: 'campaign', op: 'equals', value: 'nobody' },
    { hidden: 'ref', op: 'equals', value: 'mail' },
    { hidden: 'campaign', op: 'in', value: ['mail', 'ad', 'mail', '', LONG] },
    { hidden: 'campaign', op: 'in', value: ['Mail', 'nobody'] },
    { hidden: 'campaign', op: 'not_equals', value: 'mail' },
    { hidden: 'campaign', op: 'contains', value: 'MAIL' },
  ];

  /** The total each filter lists, beside the number of responses it returns (all of them: limit 200). */
  const totals = async (side: Side) => {
    const out = [];
    // One at a time: a workspace runs two filtered reads at once (429 beyond).
    for (const where of filters) {
      const res = await callTool(app, side.token, 'list_responses', {
        publicId: side.form.publicId,
        where,
        limit: 200,
      });
      expect(res.status).toBe(200);
      out.push({ where, total: res.body.total, listed: res.body.responses.length });
    }
    return out;
  };

  /** Checks every filter's total against the responses it lists, and returns the totals. */
  const exact = async (side: Side) => {
    const got = await totals(side);
    expect(got).toEqual(got.map((g) => ({ ...g, total: g.listed })));
    return got.map((g) => g.total);
  };

  /** hidden_counts of a form as maintained, and as a recount from its responses gives them. */
  const counts = async (side: Side) => {
    const read = () =>
      db.query(
        `SELECT name, encode(digest, 'hex') AS digest, count::int FROM hidden_counts WHERE form_id = $1 ORDER BY 1, 2`,
        [side.form.id],
      );
    const maintained = await read();
    await db.transaction((tx) => app.get(ResponseStatsRepository).recomputeResponseStats(tx, side.form.id));
    return { maintained, recounted: await read() };
  };

  beforeAll(async () => {
    app = await createTestApp();
    db = app.get(DataSource);
    a = await setUp('A');
    b = await setUp('B');
    for (let i = 0; i < 24; i++) {
      await submit(a, { campaign: VALUES[i % VALUES.length], ...(i % 4 === 0 ? { ref: 'mail' } : {}) });
      if (i % 3 === 0) await submit(b, { campaign: VALUES[(i / 3 + 1) % VALUES.length] });
    }
    await submit(a, {}); // no hidden value
    await submit(a, { ref: 'ad' });
  });
  afterAll(() => app.close());

  it('equal the filtered count after submissions, per form and workspace', async () => {
    expect(await exact(a)).toEqual([4, 4, 4, 4, 4, 4, 0, 0, 6, 12, 4, 20, 8]);
    expect(await exact(b)).toEqual([1, 2, 2, 1, 1, 1, 0, 0, 0, 4, 2, 7, 3]);
    const { maintained, recounted } = await counts(a);
    expect(maintained).toEqual(recounted);
    expect(maintained).toHaveLength(VALUES.length + 2); // campaign's six values, ref's two
  });

  it('equal the filtered count after delete_response, and a value whose last response goes leaves no count', async () => {
    const before = await exact(b);
    // b's responses 0 and 6 hold "ad" (the only two with it); response 1 holds "Mail".
    for (const id of [b.ids[0], b.ids[6], b.ids[1]]) {
      const res = await callTool(app, b.token, 'delete_response', { publicId: b.form.publicId, responseId: id });
      expect(res.status).toBe(200);
    }
    const after = await exact(b);
    expect(after[1]).toBe(0); // "ad"
    expect(after[2]).toBe(before[2] - 1); // "Mail"
    expect(after[11]).toBe(before[11] - 3); // not_equals "mail": counted from rows
    expect(await exact(a)).toEqual([4, 4, 4, 4, 4, 4, 0, 0, 6, 12, 4, 20, 8]); // the other form's unchanged
    const { maintained, recounted } = await counts(b);
    expect(maintained).toEqual(recounted);
    expect(maintained.length).toBe(VALUES.length - 1);
  });

  it('stay exact when an instance that does not keep the counts sequenced or deleted responses', async () => {
    const before = await exact(a);
    // As the previous version deletes: the row and total, not hidden_counts.
    await db.query(
      `WITH d AS (DELETE FROM responses WHERE id = $2 RETURNING seq)
       UPDATE response_counters SET total = total - 1 WHERE form_id = $1 AND EXISTS (SELECT 1 FROM d)`,
      [a.form.id, a.ids[0]], // campaign "mail", ref "mail"
    );
    const after = await exact(a);
    expect(after[0]).toBe(before[0] - 1);
    expect(after[8]).toBe(before[8] - 1);
    // A recount puts the counts back in step.
    await db.transaction((tx) => app.get(ResponseStatsRepository).recomputeResponseStats(tx, a.form.id));
    expect(await exact(a)).toEqual(after);
  });

  it('are backfilled by their migration: the counts of responses sequenced before it, read again', async () => {
    const before = await exact(a);
    const kept = (await counts(a)).maintained;
    // As before the migration: no counts, counters not in step.
    await db.query(`DELETE FROM hidden_counts WHERE form_id = $1`, [a.form.id]);
    await db.query(`UPDATE response_counters SET hidden_total = 0, hidden_seq = 0 WHERE form_id = $1`, [a.form.id]);
    expect(await exact(a)).toEqual(before); // rows counted meanwhile
    const runner = db.createQueryRunner();
    try {
      await new HiddenCounts1796000450000().up(runner);
    } finally {
      await runner.release();
    }
    const [{ in_step }] = await db.query(
      `SELECT hidden_total = total AND hidden_seq = last_seq AS in_step FROM response_counters WHERE form_id = $1`,
      [a.form.id],
    );
    expect(in_step).toBe(true);
    expect((await counts(a)).maintained).toEqual(kept);
    expect(await exact(a)).toEqual(before);
  });

  it('go with their form', async () => {
    const res = await callTool(app, b.token, 'delete_form', { publicId: b.form.publicId });
    expect(res.status).toBe(200);
    expect(await db.query(`SELECT 1 FROM hidden_counts WHERE form_id = $1`, [b.form.id])).toEqual([]);
  });
});

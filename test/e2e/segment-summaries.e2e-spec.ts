import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { FormsService } from '../../src/forms/forms.service';
import { MAX_SEGMENTS_PER_FORM, ResponseStatsRepository } from '../../src/summaries/response-stats.repository';
import { SEGMENT_BUILD_ATTEMPTS } from '../../src/responses/responses.service';
import { StoredResponse, summarize } from '../../src/summaries/summarize';
import { createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';
import { outsideTransaction } from '../../src/database/transaction';

type Row = StoredResponse & { id: string; hidden: Record<string, string> };

/**
 * A second session can run while a build's scan holds its transaction only on PostgreSQL: the
 * embedded database's one session belongs to an open transaction, so there nothing interleaves
 * with the scan (the steps simply run one after another). The tests of what happens during a scan
 * exist on PostgreSQL only (`serverIt`); on embedded there is no such moment to test.
 */
const onServer = process.env.FORMWORK_TEST_DATABASE_KIND === 'server';
const serverIt = onServer ? it : undefined;

/**
 * Summaries of one value (a hidden field's, a choice, yes/no, a ticked checkbox: issue 38) are read
 * from aggregates kept for that segment, made by its first summary and folded in by the sequencer
 * from then on. Each must equal a recount of the matching responses, through submissions, deletes,
 * edits that discard answers and submissions racing with the first summary.
 */
describe('segment summaries (kept aggregates of one value)', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let ws: TestWorkspace;
  let token: string;
  let publicId: string;
  let formId: string;
  let id: Record<string, string>;
  /** Choice ids by label, per block title. */
  let choice: (block: string, label: string) => string;

  beforeAll(async () => {
    app = await createTestApp();
    db = app.get(DataSource);
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
    const created = await callTool(app, token, 'create_form', {
      title: 'Segments',
      hiddenFields: ['campaign'],
      blocks: [
        { type: 'short_text', title: 'Name' },
        { type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Green', 'Blue'] },
        { type: 'checkboxes', title: 'Pets', choices: ['Cat', 'Dog', 'Fish'] },
        { type: 'rating', title: 'Stars' },
        { type: 'number', title: 'Age' },
        { type: 'linear_scale', title: 'NPS', min: 0, max: 10 },
        { type: 'date', title: 'When' },
        { type: 'yes_no', title: 'Subscribe' },
        { type: 'email', title: 'Email' },
      ],
    });
    expect(created.status).toBe(200);
    publicId = created.body.publicId;
    expect((await callTool(app, token, 'publish_form', { publicId })).status).toBe(200);
    type CreatedBlock = { title: string; id: string; choices?: Array<{ id: string; label: string }> };
    const blocks = created.body.blocks as CreatedBlock[];
    id = Object.fromEntries(blocks.map((b) => [b.title, b.id]));
    choice = (block, label) => blocks.find((b) => b.title === block)!.choices!.find((c) => c.label === label)!.id;
    formId = (await app.get(FormsService).get(ws.id, publicId)).id;
  });
  afterAll(() => app.close());

  /** The i-th response of a varied set: every block sometimes skipped, three campaigns. */
  const answersOf = (i: number) => {
    const answers: Record<string, unknown> = {
      [id.Name]: `P${i}`,
      [id.Stars]: 1 + (i % 5),
      [id.Subscribe]: i % 3 === 0,
    };
    if (i % 2) answers[id.Colour] = ['Red', 'Green', 'Blue'][i % 3];
    if (i % 3) answers[id.Pets] = i % 2 ? ['Cat', 'Fish'] : i % 4 === 0 ? ['Fish'] : [i < 60 ? 'Dog' : 'Cat']; // Dog is removed at 60
    if (i % 4) answers[id.Age] = i * 1.5 - 7;
    if (i % 5) answers[id.NPS] = i % 11;
    if (i % 6) answers[id.When] = `2026-0${1 + (i % 9)}-1${i % 10}`;
    if (i % 7) answers[id.Email] = `p${i}@example.com`;
    return answers;
  };
  const campaignOf = (i: number) => ['spring', 'autumn', 'spring', 'pilot'][i % 4];
  const submit = async (i: number) => {
    const r = await callTool(app, token, 'create_response', {
      publicId,
      answers: answersOf(i),
      ...(i % 9 === 8 ? {} : { hidden: { campaign: campaignOf(i) } }),
    });
    expect(r.status).toBe(200);
    return r.body.id as string;
  };

  /** The segments the tests read, each with the recount's test of membership. */
  const segments = () => [
    { where: { hidden: 'campaign', op: 'equals', value: 'spring' }, holds: (r: Row) => r.hidden.campaign === 'spring' },
    { where: { hidden: 'campaign', op: 'in', value: ['pilot'] }, holds: (r: Row) => r.hidden.campaign === 'pilot' },
    {
      where: { block: id.Colour, op: 'equals', value: 'Blue' },
      holds: (r: Row) => r.answers[id.Colour] === choice('Colour', 'Blue'),
    },
    { where: { block: id.Subscribe, op: 'equals', value: true }, holds: (r: Row) => r.answers[id.Subscribe] === true },
    {
      where: { block: id.Pets, op: 'contains', value: 'Fish' },
      holds: (r: Row) => ((r.answers[id.Pets] as string[] | undefined) ?? []).includes(choice('Pets', 'Fish')),
    },
  ];

  /** The form's segments as kept: id and total, by match. */
  const kept = async () => {
    const rows: Array<{ id: string; match: unknown; total: string }> = await db.query(
      'SELECT id, match, total FROM response_segments WHERE form_id = $1',
      [formId],
    );
    return new Map(rows.map((r) => [JSON.stringify(r.match), { id: r.id, total: Number(r.total) }]));
  };

  /** Each segment's summary equals a recount of the matching responses; returns the totals. */
  async function expectSegmentsEqualRecount(): Promise<number[]> {
    const totals: number[] = [];
    for (const { where, holds } of segments()) {
      const served = await callTool(app, token, 'summarize_responses', { publicId, where });
      expect(served.status).toBe(200);
      const form = await app.get(FormsService).get(ws.id, publicId);
      const rows: Row[] = await db.query(
        `SELECT id, submitted_at AS "submittedAt", answers, hidden, shown FROM responses
          WHERE form_id = $1 AND seq IS NOT NULL ORDER BY seq`,
        [formId],
      );
      expect({ where, summary: served.body }).toEqual({
        where,
        summary: { publicId, ...summarize(form.blocks, rows.filter(holds)) },
      });
      totals.push(served.body.total);
    }
    return totals;
  }

  it('keeps each segment exact: first read, more submissions, a delete, an edit that discards answers', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 36; i++) ids.push(await submit(i));

    // First read: each segment is made from the responses, and kept.
    const first = await expectSegmentsEqualRecount();
    expect(first.every((n) => n > 0)).toBe(true);
    const made = await kept();
    expect(made.size).toBe(segments().length);
    expect([...made.values()].map((s) => s.total).sort()).toEqual([...first].sort());

    // More submissions: folded into the same segments by the sequencer, not made again.
    for (let i = 36; i < 60; i++) ids.push(await submit(i));
    const more = await expectSegmentsEqualRecount();
    const folded = await kept();
    for (const [match, s] of made) expect({ match, id: folded.get(match)?.id }).toEqual({ match, id: s.id });
    expect(more.reduce((a, b) => a + b)).toBeGreaterThan(first.reduce((a, b) => a + b));

    // A delete (of the latest texts, of an extreme): exact after it, whichever segments it was in.
    for (const i of [59, 0, 13]) {
      const gone = await callTool(app, token, 'delete_response', { publicId, responseId: ids[i] });
      expect(gone.status).toBe(200);
    }
    await expectSegmentsEqualRecount();
    // A response of the campaign "autumn" (no segment read): the segment of spring is kept as it was.
    const beforeAutumn = await kept();
    const autumn = await callTool(app, token, 'delete_response', { publicId, responseId: ids[1] });
    expect(autumn.status).toBe(200);
    await expectSegmentsEqualRecount();
    const spring = JSON.stringify({ campaign: 'spring' });
    expect((await kept()).get(spring)?.id).toBe(beforeAutumn.get(spring)?.id);

    // An edit that discards answers: a ticked choice (Dog) removed, a block retyped.
    const form = (await callTool(app, token, 'get_form', { publicId })).body;
    const edited = form.blocks
      .map((b: { id: string; choices?: Array<{ id: string; label: string }> }) => {
        if (b.id === id.Pets) return { ...b, choices: b.choices!.filter((c) => c.label !== 'Dog') };
        if (b.id === id.NPS) return { ...b, type: 'number', min: undefined, max: undefined };
        return b;
      })
      .map((b: Record<string, unknown>) => Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined)));
    const update = await callTool(app, token, 'update_form', { publicId, blocks: edited, acceptAnswerLoss: true });
    expect(update.status).toBe(200);
    await expectSegmentsEqualRecount();

    // And traffic after the edit.
    for (let i = 60; i < 70; i++) ids.push(await submit(i));
    await expectSegmentsEqualRecount();
  });

  it('counts each submission once when submissions race with the first summary of a segment', async () => {
    const where = { hidden: 'campaign', op: 'equals', value: 'race' };
    const before = await callTool(app, token, 'summarize_responses', { publicId, where });
    expect(before.body.total).toBe(0);
    await db.query('DELETE FROM response_segments WHERE form_id = $1', [formId]); // made again, racing
    const racing = Array.from({ length: 20 }, (_, i) =>
      callTool(app, token, 'create_response', {
        publicId,
        answers: answersOf(100 + i),
        hidden: { campaign: i % 2 ? 'race' : 'other' },
      }),
    );
    // Two at once: a workspace's long reads (making a segment is one) are capped at 2 (LongReads).
    const reads = [1, 2].map(() => callTool(app, token, 'summarize_responses', { publicId, where }));
    for (const r of await Promise.all(racing)) expect(r.status).toBe(200);
    for (const r of await Promise.all(reads)) expect(r.status).toBe(200);
    const served = await callTool(app, token, 'summarize_responses', { publicId, where });
    const form = await app.get(FormsService).get(ws.id, publicId);
    const rows: Row[] = await db.query(
      `SELECT id, submitted_at AS "submittedAt", answers, hidden, shown FROM responses
        WHERE form_id = $1 AND seq IS NOT NULL ORDER BY seq`,
      [formId],
    );
    const matching = rows.filter((r) => r.hidden.campaign === 'race');
    expect(matching).toHaveLength(10);
    expect(served.body).toEqual({ publicId, ...summarize(form.blocks, matching) });
    expect((await kept()).get(JSON.stringify({ campaign: 'race' }))?.total).toBe(10);
    await expectSegmentsEqualRecount();
  });

  it('keeps at most MAX_SEGMENTS_PER_FORM segments a form, dropping the least lately read', async () => {
    await db.query('DELETE FROM response_segments WHERE form_id = $1', [formId]);
    const summary = (value: string) =>
      callTool(app, token, 'summarize_responses', { publicId, where: { hidden: 'campaign', op: 'equals', value } });
    for (let i = 0; i <= MAX_SEGMENTS_PER_FORM; i++) expect((await summary(`wave ${i}`)).status).toBe(200);
    let matches = [...(await kept()).keys()];
    expect(matches).toHaveLength(MAX_SEGMENTS_PER_FORM);
    expect(matches).not.toContain(JSON.stringify({ campaign: 'wave 0' }));
    expect(matches).toContain(JSON.stringify({ campaign: `wave ${MAX_SEGMENTS_PER_FORM}` }));

    // The dropped one is made again by its next summary, still exact, and another makes room.
    await db.query(
      `UPDATE response_segments SET last_read_at = now() - interval '1 day' WHERE form_id = $1 AND match = $2`,
      [formId, JSON.stringify({ campaign: 'wave 5' })],
    );
    const again = await summary('wave 0');
    expect(again.status).toBe(200);
    expect(again.body.total).toBe(0);
    matches = [...(await kept()).keys()];
    expect(matches).toHaveLength(MAX_SEGMENTS_PER_FORM);
    expect(matches).toContain(JSON.stringify({ campaign: 'wave 0' }));
    expect(matches).not.toContain(JSON.stringify({ campaign: 'wave 5' }));
    await expectSegmentsEqualRecount();
  });

  const spring = { hidden: 'campaign', op: 'equals', value: 'spring' };

  /**
   * Holds each of the next `n` segment scans once it has run, until `release()`: a first build
   * between its scan and its write. `held` resolves when all n are held; `spy` counts the scans.
   */
  function holdScans(n = 1) {
    const stats = app.get(ResponseStatsRepository);
    const scan = stats.scanSegment.bind(stats);
    let release!: () => void;
    const released = new Promise<void>((done) => (release = done));
    let allHeld!: () => void;
    const held = new Promise<void>((done) => (allHeld = done));
    let holding = 0;
    const spy = jest.spyOn(stats, 'scanSegment').mockImplementation(async (...args) => {
      const scanned = await scan(...args);
      if (holding < n) {
        if (++holding === n) allHeld();
        await released;
      }
      return scanned;
    });
    return { held, release, spy };
  }

  /** Sends a request now (supertest sends one when it is awaited), for the test to go on meanwhile. */
  const sent = (req: ReturnType<typeof callTool>) => req.then((res) => res);

  /** Whether another session takes the form's sequencer lock within 300 ms. */
  const sequencerLockFree = () =>
    outsideTransaction(() =>
      db
        .transaction((tx) => app.get(ResponseStatsRepository).lockSequencer(tx, formId, 300))
        .then(
          () => true,
          () => false,
        ),
    );

  /** The form's sequenced responses (submitted after settling) of the campaign, or not of it. */
  const responseOf = async (campaign: string, of: boolean) => {
    const [row] = await db.query(
      `SELECT id FROM responses WHERE form_id = $1 AND seq IS NOT NULL AND (hidden ->> 'campaign' = $2) = $3 ORDER BY seq LIMIT 1`,
      [formId, campaign, of],
    );
    return row.id as string;
  };

  serverIt?.(
    "scans a new segment without the form's sequencer lock: its list, submissions and summary answer meanwhile",
    async () => {
      await db.query('DELETE FROM response_segments WHERE form_id = $1', [formId]);
      const hold = holdScans();
      try {
        const making = sent(callTool(app, token, 'summarize_responses', { publicId, where: spring }));
        await hold.held;
        expect(await sequencerLockFree()).toBe(true);
        // Its row, being made, is not read as the segment.
        const answerable = (await app.get(FormsService).get(ws.id, publicId)).blocks;
        const segment = { kind: 'hidden' as const, match: { campaign: 'spring' } };
        expect(await app.get(ResponseStatsRepository).readSegmentSummary(db.manager, formId, segment, answerable)).toBe(
          undefined,
        );
        // Nor by code from before scan_seq, which knows only the counters: out of step there.
        const [{ inStep }] = await db.query(
          `SELECT count(*)::int AS "inStep" FROM response_segments g
             JOIN response_counters c ON c.form_id = g.form_id AND c.last_seq = g.form_seq AND c.total = g.form_total
            WHERE g.form_id = $1`,
          [formId],
        );
        expect(inStep).toBe(0);
        const list = await callTool(app, token, 'list_responses', { publicId, limit: 5 });
        expect(list.status).toBe(200);
        await submit(200); // spring: folded into the row being made
        await submit(201);
        const whole = await callTool(app, token, 'summarize_responses', { publicId });
        expect(whole.status).toBe(200);
        const [{ n }] = await db.query(
          'SELECT count(*)::int AS n FROM responses WHERE form_id = $1 AND seq IS NOT NULL',
          [formId],
        );
        expect(whole.body.total).toBe(n);
        expect(list.body.total).toBe(n - 2);
        hold.release();
        expect((await making).status).toBe(200);
        expect(hold.spy).toHaveBeenCalledTimes(1);
        await expectSegmentsEqualRecount();
      } finally {
        hold.release();
        hold.spy.mockRestore();
      }
    },
  );

  serverIt?.(
    'makes two first builds of one segment at once: whichever finishes first adds its scan, once',
    async () => {
      await db.query('DELETE FROM response_segments WHERE form_id = $1', [formId]);
      const hold = holdScans(2);
      try {
        const making = [1, 2].map(() => sent(callTool(app, token, 'summarize_responses', { publicId, where: spring })));
        await hold.held;
        await submit(204); // spring, sequenced by the summary below: folded in once
        expect((await callTool(app, token, 'summarize_responses', { publicId })).status).toBe(200);
        hold.release();
        const [a, b] = await Promise.all(making);
        expect([a.status, b.status]).toEqual([200, 200]);
        expect(a.body).toEqual(b.body);
        expect(hold.spy).toHaveBeenCalledTimes(2);
        expect((await kept()).size).toBe(1);
        await expectSegmentsEqualRecount();
      } finally {
        hold.release();
        hold.spy.mockRestore();
      }
    },
  );

  /** What happens between a first build's scan and its write, and the scans it then takes (2: made again). */
  const between: Array<[string, number, () => Promise<void>]> = [
    [
      'new responses are submitted and sequenced',
      1,
      async () => {
        for (const i of [208, 209, 210, 211]) await submit(i); // two spring, an autumn, a pilot
        expect((await callTool(app, token, 'summarize_responses', { publicId })).status).toBe(200);
      },
    ],
    [
      'a matching response is deleted',
      2,
      async () => {
        const responseId = await responseOf('spring', true);
        expect((await callTool(app, token, 'delete_response', { publicId, responseId })).status).toBe(200);
      },
    ],
    [
      'a response it does not match is deleted',
      1,
      async () => {
        const responseId = await responseOf('spring', false);
        expect((await callTool(app, token, 'delete_response', { publicId, responseId })).status).toBe(200);
      },
    ],
    [
      'an edit discards answers (a choice removed)',
      2,
      async () => {
        const form = (await callTool(app, token, 'get_form', { publicId })).body;
        const edited = form.blocks.map((b: { id: string; choices?: Array<{ label: string }> }) =>
          b.id === id.Colour ? { ...b, choices: b.choices!.filter((c) => c.label !== 'Green') } : b,
        );
        const update = await callTool(app, token, 'update_form', { publicId, blocks: edited, acceptAnswerLoss: true });
        expect(update.status).toBe(200);
      },
    ],
  ];

  serverIt?.each(between)(
    'keeps a first build exact when, between its scan and its write, %s',
    async (_, scans, meanwhile) => {
      await db.query('DELETE FROM response_segments WHERE form_id = $1', [formId]);
      const hold = holdScans();
      try {
        const making = sent(callTool(app, token, 'summarize_responses', { publicId, where: spring }));
        await hold.held;
        await meanwhile();
        hold.release();
        expect((await making).status).toBe(200);
        expect(hold.spy).toHaveBeenCalledTimes(scans);
        await expectSegmentsEqualRecount();
      } finally {
        hold.release();
        hold.spy.mockRestore();
      }
    },
  );

  it(`scans under the form's sequencer lock once its row was dropped under ${SEGMENT_BUILD_ATTEMPTS} scans`, async () => {
    await db.query('DELETE FROM response_segments WHERE form_id = $1', [formId]);
    const stats = app.get(ResponseStatsRepository);
    const scan = stats.scanSegment.bind(stats);
    let lockedDuringLast: boolean | undefined;
    const spy = jest.spyOn(stats, 'scanSegment').mockImplementation(async (tx, ...rest) => {
      const scanned = await scan(tx, ...rest);
      if (spy.mock.calls.length <= SEGMENT_BUILD_ATTEMPTS)
        // As a delete of a match would: the row goes, and the build begins again.
        await tx.query('DELETE FROM response_segments WHERE id = $1', [rest[2].id]);
      else if (onServer) lockedDuringLast = !(await sequencerLockFree());
      return scanned;
    });
    try {
      const made = await callTool(app, token, 'summarize_responses', { publicId, where: spring });
      expect(made.status).toBe(200);
      expect(spy).toHaveBeenCalledTimes(SEGMENT_BUILD_ATTEMPTS + 1);
      if (onServer) expect(lockedDuringLast).toBe(true);
      await expectSegmentsEqualRecount();
    } finally {
      spy.mockRestore();
    }
  });
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { FormsService } from '../../src/forms/forms.service';
import { summarize } from '../../src/summaries/summarize';
import { bulkLoadResponses, createForm, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

describe('maintained summaries and deep paging', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp();
    ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(() => app.close());

  /** summarize_responses must equal a recount from the stored responses (in their seq order). */
  async function expectSummaryEqualsRecount(publicId: string) {
    const served = await callTool(app, token, 'summarize_responses', { publicId });
    expect(served.status).toBe(200);
    const form = await app.get(FormsService).get(ws.id, publicId);
    const rows = await app
      .get(DataSource)
      .query('SELECT submitted_at, answers FROM responses WHERE form_id = $1 ORDER BY seq', [form.id]);
    const recount = summarize(
      form.blocks,
      rows.map((r: { submitted_at: Date; answers: Record<string, unknown> }) => ({
        submittedAt: r.submitted_at,
        answers: r.answers,
      })),
    );
    expect(served.body).toEqual({ publicId, ...recount });
    const listed = await callTool(app, token, 'list_responses', { publicId, limit: 1 });
    expect(listed.body.total).toBe(rows.length);
    return served.body;
  }

  it('equal a recount after a mix of creates, deletes, choice renames and block edits', async () => {
    const created = await callTool(app, token, 'create_form', {
      title: 'Mixed',
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
    const { publicId } = created.body;
    const id = Object.fromEntries(
      created.body.blocks.map((b: { title: string; id: string }) => [b.title, b.id]),
    ) as Record<string, string>;
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const answers: Record<string, unknown> = {
        [id.Name]: `P${i}`,
        [id.Stars]: 1 + (i % 5),
        [id.Subscribe]: i % 3 === 0,
      };
      if (i % 2) answers[id.Colour] = ['Red', 'Green', 'Blue'][i % 3];
      // Some pick only Fish, so removing that choice leaves them without an answer to Pets.
      if (i % 3) answers[id.Pets] = i % 2 ? ['Cat', 'Fish'] : i % 4 === 0 ? ['Fish'] : ['Dog'];
      if (i % 4) answers[id.Age] = i * 1.5 - 7;
      if (i % 5) answers[id.NPS] = i % 11;
      if (i % 6) answers[id.When] = `2026-0${1 + (i % 9)}-1${i % 10}`;
      if (i % 7) answers[id.Email] = `p${i}@example.com`;
      const r = await callTool(app, token, 'create_response', { publicId, answers });
      expect(r.status).toBe(200);
      ids.push(r.body.id);
    }
    await expectSummaryEqualsRecount(publicId);

    // Deletes, including the latest texts, the extremes and the only answers of a value.
    for (const i of [39, 38, 0, 1, 20, 13])
      expect((await callTool(app, token, 'delete_response', { publicId, responseId: ids[i] })).status).toBe(200);
    await expectSummaryEqualsRecount(publicId);

    // Choice renames and new blocks and choices keep every count.
    let form = (await callTool(app, token, 'get_form', { publicId })).body;
    const renamed = form.blocks.map((b: { choices?: Array<{ id: string; label: string }> }) =>
      b.choices
        ? { ...b, choices: [...b.choices.map((c) => ({ id: c.id, label: `${c.label} (new name)` })), 'Extra'] }
        : b,
    );
    renamed.push({ type: 'dropdown', title: 'Later', choices: ['A', 'B'] });
    expect((await callTool(app, token, 'update_form', { publicId, blocks: renamed })).status).toBe(200);
    const afterRename = await expectSummaryEqualsRecount(publicId);
    expect(afterRename.blocks.find((b: { blockId: string }) => b.blockId === id.Colour).choices[0].label).toBe(
      'Red (new name)',
    );

    // Edits that discard answers (accepted): remove an answered block, a chosen choice, retype a block.
    form = (await callTool(app, token, 'get_form', { publicId })).body;
    const edited = form.blocks
      .filter((b: { id: string }) => b.id !== id.Email)
      .map((b: { id: string; choices?: Array<{ id: string; label: string }> }) => {
        if (b.id === id.Pets) return { ...b, choices: b.choices!.filter((c) => !c.label.startsWith('Fish')) };
        if (b.id === id.Colour) return { ...b, choices: b.choices!.filter((c) => !c.label.startsWith('Green')) };
        if (b.id === id.NPS) return { ...b, type: 'number', min: undefined, max: undefined };
        return b;
      })
      .map((b: Record<string, unknown>) => Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined)));
    expect(
      (await callTool(app, token, 'update_form', { publicId, blocks: edited, acceptAnswerLoss: true })).status,
    ).toBe(200);
    await expectSummaryEqualsRecount(publicId);

    // And more traffic after the edits.
    for (let i = 0; i < 5; i++) {
      const late = await callTool(app, token, 'create_response', {
        publicId,
        answers: { [id.Name]: `Late ${i}`, [id.NPS]: i * 2.5, [id.Pets]: ['Cat (new name)'] },
      });
      expect(late.status).toBe(200);
    }
    await callTool(app, token, 'delete_response', { publicId, responseId: ids[10] });
    const final = await expectSummaryEqualsRecount(publicId);
    expect(final.total).toBe(40 - 6 + 5 - 1);
  });

  it('keeps counting right under concurrent submissions', async () => {
    const form = await createForm(app, ws, { status: 'published' });
    const [name, , colour, , rating] = form.blocks.map((b) => b.id);
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        callTool(app, token, 'create_response', {
          publicId: form.publicId,
          answers: { [name]: `C${i}`, [colour]: 'Blue', [rating]: 1 + (i % 5) },
        }),
      ),
    );
    const summary = await expectSummaryEqualsRecount(form.publicId);
    expect(summary.total).toBe(30);
    const seqs = await app
      .get(DataSource)
      .query('SELECT seq FROM responses WHERE form_id = $1 ORDER BY seq', [form.id]);
    expect(seqs.map((r: { seq: string }) => Number(r.seq))).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });

  describe('paging at depth (several buckets, with gaps)', () => {
    let publicId: string;
    let order: string[];

    beforeAll(async () => {
      const form = await createForm(app, ws);
      publicId = form.publicId;
      await bulkLoadResponses(app, form, 3500); // 4 buckets of 1024 seq values
      // Gaps: delete some responses in the first and third buckets.
      const victims = await app
        .get(DataSource)
        .query('SELECT id FROM responses WHERE form_id = $1 AND seq IN (5, 6, 1000, 2100, 2101, 3000) ', [form.id]);
      for (const v of victims) await callTool(app, token, 'delete_response', { publicId, responseId: v.id });
      order = (
        await app
          .get(DataSource)
          .query('SELECT id FROM responses WHERE form_id = $1 ORDER BY submitted_at, id', [form.id])
      ).map((r: { id: string }) => r.id);
      expect(order).toHaveLength(3494);
    });

    it.each([0, 1, 998, 1017, 1018, 1500, 2046, 2047, 3000, 3294, 3400, 3493])(
      'answers the page at offset %i exactly (oldest first)',
      async (offset) => {
        const res = await callTool(app, token, 'list_responses', { publicId, offset, limit: 200 });
        expect(res.body.total).toBe(3494);
        expect(res.body.count).toBe(Math.min(200, 3494 - offset));
        expect(res.body.responses.map((r: { id: string }) => r.id)).toEqual(order.slice(offset, offset + 200));
      },
    );

    it.each([0, 7, 1500, 3300, 3493])('answers the page at offset %i exactly (newest first)', async (offset) => {
      const res = await callTool(app, token, 'list_responses', { publicId, offset, limit: 200, order: 'newest' });
      const newest = [...order].reverse();
      expect(res.body.responses.map((r: { id: string }) => r.id)).toEqual(newest.slice(offset, offset + 200));
    });

    it('answers an offset past the end with an empty page and the total', async () => {
      const res = await callTool(app, token, 'list_responses', { publicId, offset: 10_000 });
      expect(res.body).toEqual({ total: 3494, offset: 10_000, count: 0, responses: [] });
    });

    it('pages a since filter from the first response at or after that time', async () => {
      // seq n was submitted at 2026-01-01 + n s; seq 2100 and 2101 are deleted.
      const since = new Date(Date.UTC(2026, 0, 1) + 2100 * 1000).toISOString();
      const expected = order.slice(order.length - (3500 - 2099 - 3)); // seq 2102..3500 minus seq 3000
      const first = await callTool(app, token, 'list_responses', { publicId, since, limit: 200 });
      expect(first.body.total).toBe(expected.length);
      expect(first.body.responses.map((r: { id: string }) => r.id)).toEqual(expected.slice(0, 200));
      const deep = await callTool(app, token, 'list_responses', { publicId, since, limit: 200, offset: 1300 });
      expect(deep.body.responses.map((r: { id: string }) => r.id)).toEqual(expected.slice(1300, 1500));
    });

    it('summarizes the big form exactly too', async () => {
      await expectSummaryEqualsRecount(publicId);
    });
  });
});

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import fc from 'fast-check';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';
import { formAndAnswersArb, formInput, Spec } from '../utils/random-forms';

/**
 * Issue 25's property: for random forms with pages, rules and a hidden field, and a random person
 * (an answer, right or wrong or none, ready for every question), the respondent page's walk
 * without JavaScript (plain form posts: the person answers the questions each page shows and
 * presses its button: Next, the page shown again for new questions, Submit) and create_response
 * given the same answers agree on whether they are taken and, when they are, on what is stored:
 * the answers, the hidden value and the shown set.
 *
 * A failure prints fast-check's seed and the form and answers that failed (not shrunk: each try
 * is a form created and walked); FC_SEED=<seed> replays it, FC_RUNS=<n> runs more or fewer. A
 * walk that ends pages early, checks a page with the wrong blocks, or keeps an answer the page
 * should drop fails it (tried: a nextPage that stops at a hidden page failed within 6-40 runs).
 */

/** 60 forms on PostgreSQL (13-23 s here; the timeout leaves room for a loaded machine), 30 on the embedded database (twice as slow per form). */
const RUNS = Number(process.env.FC_RUNS ?? (process.env.TEST_DATABASE === 'embedded' ? 30 : 60));

describe('property: the respondent page and create_response agree (fast-check)', () => {
  let app: NestFastifyApplication;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp();
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(() => app.close());

  const stored = async (publicId: string) =>
    (await app
      .get(DataSource)
      .query(
        'SELECT r.answers, r.hidden, r.shown FROM responses r JOIN forms f ON f.id = r.form_id WHERE f.public_id = $1 ORDER BY r.submitted_at',
        [publicId],
      )) as Array<{ answers: Record<string, unknown>; hidden: Record<string, string>; shown: string[] | null }>;

  /** Creates and publishes the form (see formInput). */
  async function create(specs: Spec[]) {
    const created = await callTool(app, token, 'create_form', formInput(specs));
    if (created.status !== 200) throw new Error(`create_form refused the form: ${JSON.stringify(created.body)}`);
    await callTool(app, token, 'publish_form', { publicId: created.body.publicId });
    const blocks = created.body.blocks as Array<{
      id: string;
      type: string;
      choices?: Array<{ id: string; label: string }>;
    }>;
    return { publicId: created.body.publicId as string, blocks };
  }

  /** The person walks the page: fills in every question it shows, presses the button it shows, until thanked or refused. */
  async function walkPage(
    publicId: string,
    blocks: Array<{ id: string; type: string; choices?: Array<{ id: string; label: string }> }>,
    person: Record<string, unknown>,
    src: string | undefined,
  ): Promise<{ taken: boolean; steps: number }> {
    let res = await request(app.getHttpServer()).get(`/f/${publicId}${src ? `?src=${src}` : ''}`);
    for (let steps = 1; steps <= 40; steps++) {
      if (res.text.includes('Thank you!')) return { taken: true, steps };
      if (res.status === 400) return { taken: false, steps };
      expect(res.status).toBe(200);
      const state = /name="_state" value="([^"]+)"/.exec(res.text)![1];
      const action = /value="(next|submit)" name="_action"/.exec(res.text)![1];
      const fields = new URLSearchParams([['_state', state]]);
      for (const m of res.text.matchAll(/<div id="q-([^"]+)">/g)) {
        const block = blocks.find((b) => b.id === m[1])!;
        const value = person[block.id];
        const label = (l: string) => block.choices!.find((c) => c.label === l)!.id;
        if (value === undefined) continue;
        if (block.type === 'checkboxes') for (const v of value as string[]) fields.append(block.id, label(v));
        else if (block.type === 'multiple_choice') fields.append(block.id, label(value as string));
        else fields.append(block.id, String(value));
      }
      fields.append('_action', action);
      res = await request(app.getHttpServer()).post(`/f/${publicId}`).type('form').send(fields.toString());
    }
    throw new Error('the walk did not end in 40 steps');
  }

  it('for random forms and answers: the same answers taken or refused, and the same answers and shown set stored', async () => {
    const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;
    const counts = { taken: 0, refused: 0, steps: 0, dropped: 0 };
    await fc.assert(
      fc.asyncProperty(formAndAnswersArb, async ({ specs, answers, src }) => {
        const { publicId, blocks } = await create(specs);
        const person = Object.fromEntries(blocks.map((b, i) => [b.id, answers[i]]));
        const web = await walkPage(publicId, blocks, person, src);
        counts.steps += web.steps;
        // The tool is given every answer the person had ready; answers it refuses because their
        // question was not shown (which the page drops: the person never saw them, or changed an
        // earlier answer) are left out and the rest sent again, as its hint says.
        const send = (answers: Record<string, unknown>) =>
          callTool(app, token, 'create_response', { publicId, answers, ...(src ? { hidden: { src } } : {}) });
        const ready = Object.fromEntries(Object.entries(person).filter(([, v]) => v !== undefined));
        let tool = await send(ready);
        const notShown = ((tool.body.error?.details ?? []) as Array<{ path: string; message: string }>)
          .filter((d) => d.message.startsWith('was not shown'))
          .map((d) => d.path.replace('/answers/', ''));
        if (notShown.length) {
          tool = await send(Object.fromEntries(Object.entries(ready).filter(([id]) => !notShown.includes(id))));
          counts.dropped++;
        }
        expect([web.taken, tool.status]).toEqual([tool.status === 200, tool.status === 200 ? 200 : 400]);
        if (!web.taken) {
          counts.refused++;
          expect(tool.body.error.code).toBe('invalid_arguments');
          return;
        }
        counts.taken++;
        const [fromPage, fromTool] = await stored(publicId);
        expect(fromPage).toEqual(fromTool);
      }),
      { numRuns: RUNS, seed, endOnFailure: true },
    );
    // Both outcomes were exercised, and pages were walked (not only one-page forms).
    expect(counts.taken).toBeGreaterThan(RUNS / 10);
    expect(counts.refused).toBeGreaterThan(RUNS / 10);
    expect(counts.steps).toBeGreaterThan(RUNS * 2);
    expect(counts.dropped).toBeGreaterThan(RUNS / 10);
  }, 180_000);
});

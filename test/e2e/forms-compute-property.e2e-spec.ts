import { NestFastifyApplication } from '@nestjs/platform-fastify';
import fc from 'fast-check';
import { createToken, createWorkspace } from '../factories';
import { createTestApp } from '../utils/create-test-app';
import { callTool } from '../utils/http';

/**
 * Issue 46's property: for random answer sets to a form that computes (a quiz's points and
 * correct answers, calculations on numbers and text, conditions and jumps on variables, three
 * endings, a division that may be by zero), check_response and create_response give the same
 * variables and ending, both equal to an evaluation written here independently of the server's
 * (by hand for this one form), and what is stored (list_responses) is that too.
 * FC_SEED=<seed> replays a failure, FC_RUNS=<n> runs more or fewer.
 */
const RUNS = Number(process.env.FC_RUNS ?? 1000);

const FORM = {
  title: 'Computing',
  variables: [
    { name: 'total', type: 'number' },
    { name: 'tag', type: 'text', initial: '' },
  ],
  blocks: [
    {
      ref: 'q1',
      type: 'multiple_choice',
      title: 'One',
      choices: ['A', 'B', 'C'],
      correct: 'B',
      points: { A: 0, B: 3, C: 1 },
    },
    {
      ref: 'q2',
      type: 'checkboxes',
      title: 'Two',
      choices: ['A', 'B', 'C'],
      correct: ['A', 'C'],
      points: { A: 1, B: -1, C: 2 },
    },
    {
      ref: 'n',
      type: 'number',
      title: 'N',
      calculate: [
        { variable: 'total', op: 'add', value: { block: 'n' } },
        { if: { block: 'n', op: 'gt', value: 5 }, variable: 'tag', op: 'add', value: 'big' },
      ],
    },
    {
      type: 'page_break',
      title: 'Two',
      showIf: { variable: 'score', op: 'gte', value: 3 },
      jumps: [{ if: { variable: 'total', op: 'lt', value: 0 }, to: 'ending:neg' }],
    },
    {
      ref: 'm',
      type: 'number',
      title: 'M',
      calculate: [
        { variable: 'total', op: 'multiply', value: { block: 'm' } },
        { variable: 'total', op: 'divide', value: { block: 'n' } },
      ],
    },
    {
      ref: 'yn',
      type: 'yes_no',
      title: 'Sure?',
      showIf: { variable: 'total', op: 'gt', value: 2 },
      calculate: [{ if: { block: 'yn', op: 'equals', value: true }, variable: 'tag', op: 'set', value: 'yes' }],
    },
    {
      type: 'page_break',
      title: 'Three',
      jumps: [{ if: { variable: 'score', op: 'gte', value: 6 }, to: 'ending:top' }],
    },
    { ref: 'q3', type: 'dropdown', title: 'Three', choices: ['X', 'Y'], correct: 'X' },
  ],
  endings: [
    { ref: 'plain', title: 'Done' },
    { ref: 'neg', title: 'Negative' },
    { ref: 'top', title: 'Top' },
  ],
};

interface Answers {
  q1?: string;
  q2?: string[];
  n?: number;
  m?: number;
  yn?: boolean;
  q3?: string;
}

/** This form's evaluation, by hand: the answers its path takes, the variables and the ending. */
function expected(a: Answers) {
  let score = 0;
  let correctCount = 0;
  let total = 0;
  let tag = '';
  const kept: Answers = {};
  if (a.q1 !== undefined) {
    kept.q1 = a.q1;
    score += { A: 0, B: 3, C: 1 }[a.q1]!;
    if (a.q1 === 'B') correctCount += 1;
  }
  if (a.q2 !== undefined && a.q2.length) {
    kept.q2 = a.q2;
    score += a.q2.reduce((s, c) => s + { A: 1, B: -1, C: 2 }[c]!, 0);
    if (a.q2.length === 2 && a.q2.includes('A') && a.q2.includes('C')) correctCount += 1;
  }
  if (a.n !== undefined) {
    kept.n = a.n;
    total += a.n;
    if (a.n > 5) tag += 'big';
  }
  // As JSON has them (-0 is 0).
  const done = (ending: string) => ({
    kept,
    variables: JSON.parse(JSON.stringify({ total, tag, score, correctCount })),
    ending,
  });
  if (total < 0) return done('neg');
  if (score >= 3) {
    if (a.m !== undefined) {
      kept.m = a.m;
      total *= a.m;
    }
    if (a.n !== undefined && a.n !== 0) total /= a.n;
    if (total > 2 && a.yn !== undefined) {
      kept.yn = a.yn;
      if (a.yn) tag = 'yes';
    }
    if (score >= 6) return done('top');
  }
  if (a.q3 !== undefined) {
    kept.q3 = a.q3;
    if (a.q3 === 'X') {
      correctCount += 1;
      score += 1;
    }
  }
  return done('plain');
}

const answersArb: fc.Arbitrary<Answers> = fc.record(
  {
    q1: fc.constantFrom('A', 'B', 'C'),
    q2: fc.subarray(['A', 'B', 'C'], { minLength: 1 }),
    n: fc.integer({ min: -6, max: 9 }),
    m: fc.integer({ min: -3, max: 4 }),
    yn: fc.boolean(),
    q3: fc.constantFrom('X', 'Y'),
  },
  { requiredKeys: [] },
);

describe('property: what a form computes (issue 46, fast-check)', () => {
  let app: NestFastifyApplication;
  let token: string;

  beforeAll(async () => {
    app = await createTestApp();
    const ws = await createWorkspace(app, 'pro');
    token = (await createToken(app, ws, { role: 'admin' })).token;
  });
  afterAll(() => app.close());

  it(`for ${RUNS} random answer sets: check_response, create_response and what is stored equal an independent evaluation`, async () => {
    const made = await callTool(app, token, 'create_form', FORM);
    expect(made.status).toBe(200);
    const { publicId } = made.body;
    const stored: Array<{ variables: unknown; ending: string }> = [];
    const endings = new Set<string>();
    const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;
    await fc.assert(
      fc.asyncProperty(answersArb, async (answers) => {
        const want = expected(answers);
        const args = { publicId, answers: want.kept };
        const dry = await callTool(app, token, 'check_response', args);
        expect([dry.body.ok, dry.body.variables, dry.body.ending]).toEqual([true, want.variables, want.ending]);
        const real = await callTool(app, token, 'create_response', args);
        expect([real.status, real.body.variables, real.body.ending]).toEqual([200, want.variables, want.ending]);
        stored.push({ variables: want.variables, ending: want.ending });
        endings.add(want.ending);
      }),
      { numRuns: RUNS, ...(seed !== undefined ? { seed } : {}) },
    );
    // Not vacuous: every ending was reached.
    expect([...endings].sort()).toEqual(['neg', 'plain', 'top']);
    const read: Array<{ variables: unknown; ending: string }> = [];
    for (let offset = 0; offset < stored.length; offset += 100) {
      const page = await callTool(app, token, 'list_responses', { publicId, offset, limit: 100 });
      read.push(
        ...page.body.responses.map((r: { variables: unknown; ending: string }) => ({
          variables: r.variables,
          ending: r.ending,
        })),
      );
    }
    expect(read).toEqual(stored);
  }, 300_000); // 2,000 tool calls: 50 s to 3 min on the embedded database of a loaded 2-core machine
});

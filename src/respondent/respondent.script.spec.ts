import fc from 'fast-check';
import { runInNewContext } from 'node:vm';
import type { Condition, Facts } from '../forms/conditions';
import { CONDITIONS_JS, RESPONDENT_SCRIPT } from './respondent.script';

/**
 * The page's script evaluates conditions with its own copy of the evaluator (respondent.script.ts
 * says why). Here every case of conditions.spec.ts runs through that copy: the module's evaluate()
 * is replaced by the browser's, which must also agree with the server's on each call, and the
 * spec's own expectations then check the browser's answers. Random conditions and answers compare
 * the two as well.
 */
type Evaluate = (c: Condition, f: Facts) => boolean;
const browser = runInNewContext(`${CONDITIONS_JS}; evaluate`) as Evaluate;

jest.mock('../forms/conditions/evaluate', () => {
  const actual = jest.requireActual('../forms/conditions/evaluate');
  const { runInNewContext: run } = jest.requireActual('node:vm');
  const { CONDITIONS_JS: js } = jest.requireActual('./respondent.script');
  const inBrowser = run(`${js}; evaluate`) as Evaluate;
  return {
    ...actual,
    evaluate: (c: Condition, f: Facts) => {
      (globalThis as { mockEvaluations?: number }).mockEvaluations =
        ((globalThis as { mockEvaluations?: number }).mockEvaluations ?? 0) + 1;
      const server = actual.evaluate(c, f);
      const answer = inBrowser(c, f);
      expect([c, answer]).toEqual([c, server]);
      return answer;
    },
  };
});

// eslint-disable-next-line @typescript-eslint/no-require-imports
require('../forms/conditions/conditions.spec');

describe("the page script's evaluator", () => {
  it('took the cases above (not vacuous: they went through the browser evaluator)', () => {
    expect((globalThis as { mockEvaluations?: number }).mockEvaluations).toBeGreaterThan(100);
  });

  it('is the whole served script, which parses as a script (no module syntax, no eval)', () => {
    expect(RESPONDENT_SCRIPT).toContain(CONDITIONS_JS);
    expect(RESPONDENT_SCRIPT).not.toMatch(/\beval\(|new Function|import\(/);
    // Parses, and does nothing on a page without a form of several pages.
    const document = { querySelector: () => null };
    expect(() => runInNewContext(RESPONDENT_SCRIPT, { document })).not.toThrow();
  });

  it('agrees with the server on random conditions and answers', () => {
    const { evaluate } = jest.requireActual('../forms/conditions/evaluate') as { evaluate: Evaluate };
    const ids = ['b_a', 'b_b', 'b_c'];
    const scalar = fc.oneof(
      fc.constantFrom('c_1', 'c_2', 'Hello', 'hello', '2026-01-02', ''),
      fc.string({ maxLength: 4 }),
      fc.integer({ min: -3, max: 3 }),
      fc.boolean(),
    );
    const value = fc.oneof(
      scalar,
      fc.array(fc.oneof(fc.constantFrom('c_1', 'c_2', 'c_3'), fc.integer()), { maxLength: 3 }),
    );
    const leaf = fc.record(
      {
        block: fc.constantFrom(...ids),
        op: fc.constantFrom(
          'equals',
          'not_equals',
          'in',
          'contains',
          'not_contains',
          'gt',
          'gte',
          'lt',
          'lte',
          'answered',
          'not_answered',
        ),
        value,
      },
      { requiredKeys: ['block', 'op'] },
    );
    const hiddenLeaf = fc.record({ hidden: fc.constant('source'), op: fc.constantFrom('equals', 'contains'), value });
    const condition = fc.letrec<{ c: Condition }>((tie) => ({
      c: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        leaf as fc.Arbitrary<Condition>,
        hiddenLeaf as fc.Arbitrary<Condition>,
        fc.record({ all: fc.array(tie('c'), { maxLength: 3 }) }),
        fc.record({ any: fc.array(tie('c'), { maxLength: 3 }) }),
        fc.record({ not: tie('c') }),
      ),
    })).c;
    const answers = fc.dictionary(fc.constantFrom(...ids), fc.oneof(value, fc.constant(undefined), fc.constant(null)));
    fc.assert(
      fc.property(condition, answers, fc.option(fc.string({ maxLength: 4 })), (c, a, source) => {
        const facts: Facts = { answer: (id) => a[id], hidden: () => source ?? undefined };
        expect(browser(c, facts)).toBe(evaluate(c, facts));
      }),
      { numRuns: 2000 },
    );
  });
});

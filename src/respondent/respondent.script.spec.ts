import fc from 'fast-check';
import { runInNewContext } from 'node:vm';
import { OPERATORS, type Condition, type Facts } from '../forms/conditions';
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
        op: fc.constantFrom(...OPERATORS),
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

  /**
   * The page part against a stand-in DOM: a form with data-logic, its fields and the question
   * wrappers; a change runs the walk of the page, as an input or change event would.
   */
  function page(logic: unknown, fields: Array<{ name: string; type: string; value: string; checked?: boolean }>) {
    const handlers: Record<string, () => void> = {};
    const button = { value: 'next', textContent: 'Next' };
    const live = { textContent: '' };
    const progress = { textContent: 'Page 1 of 3' };
    const boxes: Record<string, { hidden: boolean }> = {};
    const elements: Array<Record<string, unknown>> = [...fields];
    const form = {
      getAttribute: () => JSON.stringify(logic),
      querySelector: () => button,
      elements,
      appendChild: (el: Record<string, unknown>) => elements.push(el),
      addEventListener: (type: string, f: () => void) => (handlers[type] = f),
    };
    const document = {
      title: 'Page 1 of 3: Party',
      querySelector: (selector: string) =>
        selector.includes('data-uploads') || selector.includes('data-recall') ? null : form,
      getElementById: (id: string) =>
        id === 'announce' ? live : id === 'progress' ? progress : (boxes[id.slice(2)] ??= { hidden: true }),
      createElement: () => ({}),
    };
    runInNewContext(RESPONDENT_SCRIPT, { document });
    return {
      set(name: string, value: string) {
        for (const f of fields) {
          if (f.name !== name) continue;
          if (f.type === 'radio' || f.type === 'checkbox') f.checked = f.value === value;
          else f.value = value;
        }
        handlers.change();
      },
      button,
      live,
      progress,
      title: () => document.title,
      shown: () => Object.keys(boxes).filter((id) => !boxes[id].hidden),
      seen: () => elements.find((e) => e.name === '_seen')?.value,
    };
  }
  const yesNo = (name: string) => [
    { name, type: 'radio', value: 'true' },
    { name, type: 'radio', value: 'false' },
  ];

  it('shows a question and turns Next into Submit as the answers on the page change, up to a page whose showIf fails', () => {
    const logic = {
      blocks: [
        { id: 'b_a', type: 'yes_no', title: 'Coming?' },
        { id: 'b_b', type: 'short_text', title: 'Why not?', showIf: { block: 'b_a', op: 'equals', value: false } },
        { id: 'b_c', type: 'number', title: 'Guests', min: 0, max: 5 },
        { id: 'b_d', type: 'short_text', title: 'Diet', showIf: { block: 'b_c', op: 'gt', value: 0 } },
      ],
      answers: {},
      hidden: {},
      // The next page only for those coming.
      breaks: [{ id: 'b_p2', showIf: { block: 'b_a', op: 'equals', value: true } }],
    };
    const p = page(logic, [
      ...yesNo('b_a'),
      { name: 'b_b', type: 'text', value: '' },
      { name: 'b_c', type: 'number', value: '' },
      { name: 'b_d', type: 'text', value: '' },
    ]);
    // Not answered: the next page is not on the path, so this page ends the form.
    expect(p.shown()).toEqual(['b_a', 'b_c']);
    expect(p.button).toEqual({ value: 'submit', textContent: 'Submit' });
    expect(p.live.textContent).toBe('');
    p.set('b_a', 'false');
    expect(p.shown()).toEqual(['b_a', 'b_b', 'b_c']);
    expect(p.button.textContent).toBe('Submit');
    expect(p.live.textContent).toBe('A question was added below: Why not?');
    expect(p.seen()).toBe('b_a b_b b_c');
    p.set('b_a', 'true');
    expect(p.shown()).toEqual(['b_a', 'b_c']);
    expect(p.button).toEqual({ value: 'next', textContent: 'Next' });
    expect(p.live.textContent).toBe(
      'A question was removed: Why not? The form goes on after this page: the button now says Next.',
    );
    // Numbers as the server reads them: out of range or not a number is not an answer.
    p.set('b_c', '3');
    expect(p.shown()).toContain('b_d');
    p.set('b_c', '9');
    expect(p.shown()).not.toContain('b_d');
    p.set('b_c', '0x10');
    expect(p.shown()).not.toContain('b_d');
    p.set('b_c', ' 2 ');
    expect(p.shown()).toContain('b_d');
  });

  it('follows a jump past a page whose showIf fails, with the earlier answers and hidden values the page carries', () => {
    const logic = {
      blocks: [{ id: 'b_a', type: 'checkboxes', title: 'Pets' }],
      answers: { b_first: 'Ada' },
      hidden: { source: 'ad' },
      breaks: [
        { id: 'b_p2', jumps: [{ if: { block: 'b_a', op: 'contains', value: 'c_cat' }, to: 'b_p3' }] },
        { id: 'b_p3', showIf: { hidden: 'source', op: 'equals', value: 'mail' } },
        { id: 'b_p4', showIf: { block: 'b_first', op: 'equals', value: 'Bob' } },
      ],
    };
    const p = page(logic, [
      { name: 'b_a', type: 'checkbox', value: 'c_cat' },
      { name: 'b_a', type: 'checkbox', value: 'c_dog' },
    ]);
    // No jump: page 2 follows.
    expect(p.button.textContent).toBe('Next');
    // The jump to page 3, whose showIf fails (source is "ad"), then page 4's (first is "Ada"): the form ends here.
    p.set('b_a', 'c_cat');
    expect(p.button.textContent).toBe('Submit');
    p.set('b_a', 'c_dog');
    expect(p.button.textContent).toBe('Next');
  });
  it('counts the pages the answers now lead through in "Page 1 of 3" and the title (issue 34)', () => {
    const logic = {
      position: 1,
      blocks: [{ id: 'b_a', type: 'yes_no', title: 'Coming?' }],
      answers: {},
      hidden: { source: 'ad' },
      breaks: [
        { id: 'b_p2', jumps: [{ if: { block: 'b_a', op: 'equals', value: false }, to: 'end' }] },
        // Page 3 only for the newsletter's readers; page 4 jumps over page 5 for those coming.
        { id: 'b_p3', showIf: { hidden: 'source', op: 'equals', value: 'mail' } },
        { id: 'b_p4' },
        { id: 'b_p5', jumps: [{ if: { block: 'b_a', op: 'equals', value: true }, to: 'end' }] },
        { id: 'b_p6' },
      ],
    };
    const p = page(logic, yesNo('b_a'));
    // Nothing changed yet: the server's count stands.
    expect(p.progress.textContent).toBe('Page 1 of 3');
    p.set('b_a', 'false');
    expect(p.progress.textContent).toBe('Page 1 of 1');
    expect(p.title()).toBe('Page 1 of 1: Party');
    expect(p.button.textContent).toBe('Submit');
    // Yes: page 2, page 3 skipped (source is "ad"), page 4, then the jump on page 5's break ends it.
    p.set('b_a', 'true');
    expect(p.progress.textContent).toBe('Page 1 of 3');
    expect(p.title()).toBe('Page 1 of 3: Party');
    expect(p.button.textContent).toBe('Next');
  });
});

import fc from 'fast-check';

/**
 * Random forms and answers for property tests (issue 25's generators): forms with pages, rules
 * (showIf and jumps on random earlier questions or a hidden field "src") and, per question, an
 * answer a person might have ready: right, wrong, or none. Shared by the respondent page's
 * property test and check_response's (issue 39).
 */
export const TYPES = ['short_text', 'number', 'multiple_choice', 'checkboxes', 'yes_no'] as const;
export type QType = (typeof TYPES)[number];
export const CHOICES = ['A', 'B', 'C'];

export interface Spec {
  type: QType | 'page_break';
  required: boolean;
  /** For showIf and jumps: [index of an earlier question, operator, value], drawn at random. */
  showIf?: Leaf;
  jumps?: Array<{ if: Leaf; to: 'end' | number }>;
}
export type Leaf = { block: number; op: string; value?: unknown } | { hidden: 'src'; op: string; value?: unknown };

/** A condition that fits the type of the block it names. */
function leafArb(types: QType[]): fc.Arbitrary<Leaf> {
  const onHidden = fc.oneof(
    fc.record({
      hidden: fc.constant('src' as const),
      op: fc.constantFrom('equals', 'contains'),
      value: fc.constantFrom('ad', 'mail'),
    }),
    fc.record({ hidden: fc.constant('src' as const), op: fc.constantFrom('answered', 'not_answered') }),
  );
  if (!types.length) return onHidden;
  const onBlock = fc.nat({ max: types.length - 1 }).chain((i) => {
    const any = fc.constantFrom({ op: 'answered' }, { op: 'not_answered' });
    const byType: Record<QType, fc.Arbitrary<{ op: string; value?: unknown }>> = {
      short_text: fc.oneof(
        any,
        fc.record({ op: fc.constantFrom('equals', 'not_equals', 'contains'), value: fc.constantFrom('a', 'b') }),
      ),
      number: fc.oneof(
        any,
        fc.record({ op: fc.constantFrom('equals', 'gt', 'lte', 'not_equals'), value: fc.integer({ min: 0, max: 10 }) }),
      ),
      multiple_choice: fc.oneof(
        any,
        fc.record({ op: fc.constantFrom('equals', 'not_equals'), value: fc.constantFrom(...CHOICES) }),
        fc.record({ op: fc.constant('in'), value: fc.subarray(CHOICES, { minLength: 1 }) }),
      ),
      checkboxes: fc.oneof(
        any,
        fc.record({ op: fc.constantFrom('contains', 'not_contains'), value: fc.constantFrom(...CHOICES) }),
        fc.record({ op: fc.constantFrom('equals', 'in'), value: fc.subarray(CHOICES, { minLength: 1 }) }),
      ),
      yes_no: fc.oneof(any, fc.record({ op: fc.constantFrom('equals', 'not_equals'), value: fc.boolean() })),
    };
    return byType[types[i]].map((c) => ({ block: i, ...c }));
  });
  return fc.oneof({ weight: 4, arbitrary: onBlock }, { weight: 1, arbitrary: onHidden });
}

/** 2 to 10 blocks, about a third of them page_breaks (never two in a row, nor first); rules on about half of them. */
export const formArb: fc.Arbitrary<Spec[]> = fc
  .array(
    fc.record({
      type: fc.oneof(
        { weight: 5, arbitrary: fc.constantFrom<Spec['type']>(...TYPES) },
        { weight: 2, arbitrary: fc.constant<Spec['type']>('page_break') },
      ),
      required: fc.boolean(),
    }),
    {
      minLength: 2,
      maxLength: 10,
    },
  )
  .chain((raw) => {
    const specs = raw.filter((s, i) => s.type !== 'page_break' || (i > 0 && raw[i - 1].type !== 'page_break'));
    if (!specs.some((s) => s.type !== 'page_break')) specs.unshift({ type: 'short_text', required: false });
    const rules = specs.map((s, i) => {
      const before = specs.slice(0, i);
      const questions = before.filter((b) => b.type !== 'page_break').map((b) => b.type as QType);
      const laterBreaks = specs.map((b, k) => (k > i && b.type === 'page_break' ? k : -1)).filter((k) => k >= 0);
      const showIf = fc.option(leafArb(questions), { freq: 2 });
      const jumps =
        s.type === 'page_break'
          ? fc.option(
              fc.array(
                fc.record({ if: leafArb(questions), to: fc.constantFrom<'end' | number>('end', ...laterBreaks) }),
                {
                  minLength: 1,
                  maxLength: 2,
                },
              ),
              { freq: 2 },
            )
          : fc.constant(null);
      return fc.record({ showIf, jumps });
    });
    return fc.tuple(...rules).map((r) =>
      specs.map((s, i) => ({
        ...s,
        required: s.type !== 'page_break' && s.required,
        ...(r[i].showIf ? { showIf: r[i].showIf } : {}),
        ...(r[i].jumps ? { jumps: r[i].jumps } : {}),
      })),
    );
  });

/** What a person has ready for a question: a right answer, a wrong one, or nothing. */
export const answerArb: Record<QType, fc.Arbitrary<unknown>> = {
  short_text: fc.constantFrom(undefined, 'a', 'b', 'Ab', 'xyz'),
  number: fc.constantFrom(undefined, 0, 3, 7, 10, 11, 'abc'),
  multiple_choice: fc.constantFrom(undefined, ...CHOICES),
  checkboxes: fc.subarray(CHOICES),
  yes_no: fc.constantFrom(undefined, true, false),
};

/** create_form's arguments for a random form; refs q0, q1, ... name the blocks in the rules. */
export function formInput(specs: Spec[]) {
  const ref = (i: number) => `q${i}`;
  const questions = specs.map((s, i) => (s.type === 'page_break' ? -1 : i)).filter((i) => i >= 0);
  const leaf = (l: Leaf) => ('block' in l ? { ...l, block: ref(questions[l.block]) } : l);
  return {
    title: 'Random',
    hiddenFields: ['src'],
    blocks: specs.map((s, i) => ({
      ref: ref(i),
      type: s.type,
      ...(s.type === 'page_break' ? {} : { title: `Question ${i}`, required: s.required }),
      ...(s.type === 'number' ? { min: 0, max: 10 } : {}),
      ...(s.type === 'multiple_choice' || s.type === 'checkboxes' ? { choices: CHOICES } : {}),
      ...(s.showIf ? { showIf: leaf(s.showIf) } : {}),
      ...(s.jumps ? { jumps: s.jumps.map((j) => ({ if: leaf(j.if), to: j.to === 'end' ? 'end' : ref(j.to) })) } : {}),
    })),
  };
}

/** A random form with, per block, what the person has ready (undefined for page_breaks), and the hidden "src" or none. */
export const formAndAnswersArb = formArb.chain((specs) =>
  fc.record({
    specs: fc.constant(specs),
    answers: fc.tuple(...specs.map((s) => (s.type === 'page_break' ? fc.constant(undefined) : answerArb[s.type]))),
    src: fc.constantFrom(undefined, 'ad', 'mail'),
  }),
);

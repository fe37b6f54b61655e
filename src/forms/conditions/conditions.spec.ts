import { gatherDefinitions } from '../../common/validation/schema-definitions';
import { createAjv } from '../../common/validation/schema-validator';
import {
  ConditionSchema,
  checkCondition,
  Condition,
  conditionView,
  evaluate,
  Facts,
  MAX_DEPTH,
  OPERATORS,
  Subjects,
  SUBJECT_KINDS,
} from './index';
import { BLOCKS, CASES, FOLDING, GENERIC } from '../../../test/utils/condition-cases';

const subjects: Subjects = {
  block: (key) => BLOCKS.find((b) => b.id === key || b.ref === key) ?? { error: 'is not a block of this form' },
  hidden: (name) => (name === 'source' ? true : { error: `is not a hidden field of this form` }),
};

const check = (c: unknown) => checkCondition(c, subjects, '/c');
const ok = (c: unknown): Condition => {
  const { condition, details } = check(c);
  expect(details).toEqual([]);
  return condition!;
};
const paths = (c: unknown) => check(c).details.map((d) => d.path);

/** Facts from answers by block id (as stored) and hidden values. */
const facts = (answers: Record<string, unknown>, hidden: Record<string, string> = {}): Facts => ({
  answer: (id) => answers[id],
  hidden: (name) => hidden[name],
});

describe('the condition language', () => {
  describe('every operator on every block type it fits', () => {
    for (const [ref, kind] of GENERIC) {
      const block = BLOCKS.find((b) => b.ref === ref)!;
      for (const [op, rows] of Object.entries(CASES[kind].ops)) {
        it(`${block.type}: ${op}`, () => {
          for (const [value, expected] of rows!) {
            const c = ok(value === undefined ? { block: ref, op } : { block: ref, op, value });
            expect(c).toEqual(value === undefined ? { block: block.id, op } : { block: block.id, op, value });
            expect(evaluate(c, facts({ [block.id]: CASES[kind].answer }))).toBe(expected);
          }
        });
      }
      const refused = OPERATORS.filter((op) => !(op in CASES[kind].ops));
      if (refused.length)
        it(`${block.type}: refuses ${refused.join(', ')}`, () => {
          for (const op of refused) expect(paths({ block: ref, op, value: 1 })).toEqual(['/c/op']);
        });
    }

    it('hidden fields take the text operators and answered / not_answered', () => {
      for (const [op, rows] of Object.entries(CASES.text.ops)) {
        for (const [value, expected] of rows!) {
          const c = ok(value === undefined ? { hidden: 'source', op } : { hidden: 'source', op, value });
          expect(evaluate(c, facts({}, { source: 'Hello World' }))).toBe(expected);
        }
      }
      for (const op of ['gt', 'gte', 'lt', 'lte'] as const)
        expect(paths({ hidden: 'source', op, value: 'a' })).toEqual(['/c/op']);
      expect(paths({ hidden: 'medium', op: 'answered' })).toEqual(['/c/hidden']);
    });

    describe('single choice (multiple_choice, dropdown)', () => {
      for (const ref of ['colour', 'size']) {
        const block = BLOCKS.find((b) => b.ref === ref)!;
        const [first, second] = block.choices!;
        it(`${block.type}: equals, not_equals, in, answered, not_answered; choices by label or id, stored by id`, () => {
          const byLabel = ok({ block: ref, op: 'equals', value: first.label });
          expect(byLabel).toEqual({ block: block.id, op: 'equals', value: first.id });
          expect(ok({ block: block.id, op: 'equals', value: first.id })).toEqual(byLabel);
          const answer = facts({ [block.id]: first.id });
          expect(evaluate(byLabel, answer)).toBe(true);
          expect(evaluate(ok({ block: ref, op: 'not_equals', value: second.label }), answer)).toBe(true);
          expect(evaluate(ok({ block: ref, op: 'not_equals', value: first.label }), answer)).toBe(false);
          expect(evaluate(ok({ block: ref, op: 'in', value: [second.label, first.id] }), answer)).toBe(true);
          expect(evaluate(ok({ block: ref, op: 'in', value: [second.label] }), answer)).toBe(false);
          expect(evaluate(ok({ block: ref, op: 'answered' }), answer)).toBe(true);
          expect(evaluate(ok({ block: ref, op: 'not_answered' }), answer)).toBe(false);
        });
        it(`${block.type}: refuses contains, not_contains, gt..lte and a choice it does not have`, () => {
          for (const op of ['contains', 'not_contains', 'gt', 'gte', 'lt', 'lte'])
            expect(paths({ block: ref, op, value: first.label })).toEqual(['/c/op']);
          expect(paths({ block: ref, op: 'equals', value: 'Purple' })).toEqual(['/c/value']);
          expect(paths({ block: ref, op: 'in', value: [first.label, 'Purple'] })).toEqual(['/c/value/1']);
          expect(paths({ block: ref, op: 'equals', value: [first.label] })).toEqual(['/c/value']);
        });
      }
    });

    describe('checkboxes', () => {
      const pets = facts({ b_cb: ['c_cat', 'c_dog'] });
      it('contains: that choice is among those ticked; not_contains: it is not', () => {
        expect(evaluate(ok({ block: 'pets', op: 'contains', value: 'Cat' }), pets)).toBe(true);
        expect(evaluate(ok({ block: 'pets', op: 'contains', value: 'c_fish' }), pets)).toBe(false);
        expect(evaluate(ok({ block: 'pets', op: 'not_contains', value: 'Fish' }), pets)).toBe(true);
        expect(evaluate(ok({ block: 'pets', op: 'not_contains', value: 'Dog' }), pets)).toBe(false);
      });
      it('equals: the exact set ticked (a list, in any order); not_equals: another set', () => {
        expect(evaluate(ok({ block: 'pets', op: 'equals', value: ['Dog', 'Cat'] }), pets)).toBe(true);
        expect(evaluate(ok({ block: 'pets', op: 'equals', value: ['Cat'] }), pets)).toBe(false);
        expect(evaluate(ok({ block: 'pets', op: 'equals', value: ['Cat', 'Dog', 'Fish'] }), pets)).toBe(false);
        expect(evaluate(ok({ block: 'pets', op: 'not_equals', value: ['Cat'] }), pets)).toBe(true);
        expect(evaluate(ok({ block: 'pets', op: 'not_equals', value: ['c_cat', 'c_dog'] }), pets)).toBe(false);
      });
      it('in: at least one of the listed is ticked', () => {
        expect(evaluate(ok({ block: 'pets', op: 'in', value: ['Fish', 'Dog'] }), pets)).toBe(true);
        expect(evaluate(ok({ block: 'pets', op: 'in', value: ['Fish'] }), pets)).toBe(false);
      });
      it('answered / not_answered; refuses gt..lte, a list for contains, one value for equals, an unknown choice', () => {
        expect(evaluate(ok({ block: 'pets', op: 'answered' }), pets)).toBe(true);
        expect(evaluate(ok({ block: 'pets', op: 'not_answered' }), facts({ b_cb: [] }))).toBe(true);
        for (const op of ['gt', 'gte', 'lt', 'lte'])
          expect(paths({ block: 'pets', op, value: 'Cat' })).toEqual(['/c/op']);
        expect(paths({ block: 'pets', op: 'contains', value: ['Cat'] })).toEqual(['/c/value']);
        expect(paths({ block: 'pets', op: 'equals', value: 'Cat' })).toEqual(['/c/value']);
        expect(paths({ block: 'pets', op: 'contains', value: 'Hamster' })).toEqual(['/c/value']);
        expect(ok({ block: 'pets', op: 'equals', value: ['Cat', 'c_dog'] })).toEqual({
          block: 'b_cb',
          op: 'equals',
          value: ['c_cat', 'c_dog'],
        });
      });
    });

    it('text contains ignores case (both ways)', () => {
      const c = ok({ block: 'short', op: 'contains', value: 'ÉCOLE' });
      expect(evaluate(c, facts({ b_short: 'Une école' }))).toBe(true);
      expect(evaluate(ok({ block: 'short', op: 'not_contains', value: 'ecole' }), facts({ b_short: 'ECOLE' }))).toBe(
        false,
      );
    });
  });

  describe('refusals', () => {
    it('a block that takes no answer (statement, page_break) cannot be tested', () => {
      expect(paths({ block: 'hello', op: 'answered' })).toEqual(['/c/block']);
      expect(paths({ block: 'page2', op: 'answered' })).toEqual(['/c/block']);
    });
    it('values of the wrong type, a missing or extra value', () => {
      expect(paths({ block: 'number', op: 'gt', value: '3' })).toEqual(['/c/value']);
      expect(paths({ block: 'rating', op: 'in', value: [1, 'x'] })).toEqual(['/c/value/1']);
      expect(paths({ block: 'date', op: 'lt', value: '2026-02-30' })).toEqual(['/c/value']);
      expect(paths({ block: 'date', op: 'lt', value: '31/03/2026' })).toEqual(['/c/value']);
      expect(paths({ block: 'agree', op: 'equals', value: 'yes' })).toEqual(['/c/value']);
      expect(paths({ block: 'short', op: 'equals', value: 3 })).toEqual(['/c/value']);
      expect(paths({ block: 'short', op: 'equals' })).toEqual(['/c/value']);
      expect(paths({ block: 'short', op: 'answered', value: 'x' })).toEqual(['/c/value']);
      expect(paths({ block: 'short', op: 'in', value: [] })).toEqual(['/c/value']);
      expect(paths({ block: 'short', op: 'in', value: 'x' })).toEqual(['/c/value']);
    });
    it('an unknown block, an unknown operator, both block and hidden, neither, an unknown field', () => {
      expect(paths({ block: 'nope', op: 'answered' })).toEqual(['/c/block']);
      expect(paths({ block: 'short', op: 'like', value: 'x' })).toEqual(['/c/op']);
      expect(paths({ block: 'short', hidden: 'source', op: 'answered' })).toEqual(['/c']);
      expect(paths({ op: 'answered' })).toEqual(['/c']);
      expect(paths({ block: 'short', op: 'answered', extra: 1 })).toEqual(['/c/extra']);
      expect(paths('short')).toEqual(['/c']);
    });
    it(`combinators: non-empty lists, one combinator per object, at most ${MAX_DEPTH} levels`, () => {
      const leaf = { block: 'short', op: 'answered' };
      expect(paths({ all: [] })).toEqual(['/c/all']);
      expect(paths({ all: [leaf], any: [leaf] })).toEqual(['/c']);
      expect(paths({ all: [leaf, { any: [leaf, { block: 'nope', op: 'answered' }] }] })).toEqual([
        '/c/all/1/any/1/block',
      ]);
      ok({ all: [leaf, { any: [leaf, leaf] }, { not: leaf }] });
      expect(paths({ all: [{ any: [{ not: leaf }] }] })).toEqual(['/c/all/0/any/0']);
      expect(paths({ not: { not: { not: leaf } } })).toEqual(['/c/not/not']);
    });
  });

  describe('a block not shown or not answered', () => {
    it('makes answered false, not_answered true and every other operator false, not_equals and not_contains included', () => {
      const none = facts({});
      for (const [ref, kind] of GENERIC) {
        for (const [op, rows] of Object.entries(CASES[kind].ops)) {
          for (const [value] of rows!) {
            const c = ok(value === undefined ? { block: ref, op } : { block: ref, op, value });
            expect([ref, op, evaluate(c, none)]).toEqual([ref, op, op === 'not_answered']);
          }
        }
      }
      for (const op of ['not_equals', 'not_contains', 'in', 'equals', 'contains'])
        expect(evaluate(ok({ block: 'pets', op, value: op.endsWith('contains') ? 'Cat' : ['Cat'] }), none)).toBe(false);
      expect(evaluate(ok({ hidden: 'source', op: 'not_equals', value: 'x' }), facts({}, {}))).toBe(false);
      expect(evaluate(ok({ hidden: 'source', op: 'not_answered' }), facts({}, { source: '' }))).toBe(true);
    });
    it('not negates its whole condition', () => {
      const c = ok({ not: { block: 'short', op: 'equals', value: 'x' } });
      expect(evaluate(c, facts({}))).toBe(true);
      expect(evaluate(c, facts({ b_short: 'x' }))).toBe(false);
      expect(evaluate(c, facts({ b_short: 'y' }))).toBe(true);
    });
    it('all needs every condition, any one of them', () => {
      const all = ok({
        all: [
          { block: 'agree', op: 'equals', value: true },
          { hidden: 'source', op: 'equals', value: 'ad' },
        ],
      });
      const any = ok({
        any: [
          { block: 'agree', op: 'equals', value: true },
          { hidden: 'source', op: 'equals', value: 'ad' },
        ],
      });
      expect(evaluate(all, facts({ b_yn: true }, { source: 'ad' }))).toBe(true);
      expect(evaluate(all, facts({ b_yn: true }, { source: 'mail' }))).toBe(false);
      expect(evaluate(any, facts({ b_yn: false }, { source: 'ad' }))).toBe(true);
      expect(evaluate(any, facts({}, {}))).toBe(false);
    });
  });

  it('reads back with blocks named by ref where they have one', () => {
    const c = ok({
      all: [{ block: 'b_mc', op: 'equals', value: 'Red' }, { not: { hidden: 'source', op: 'answered' } }],
    });
    const refOf = (id: string) => BLOCKS.find((b) => b.id === id)?.ref ?? id;
    expect(conditionView(c, refOf)).toEqual({
      all: [{ block: 'colour', op: 'equals', value: 'c_red' }, { not: { hidden: 'source', op: 'answered' } }],
    });
    expect(ok(conditionView(c, refOf))).toEqual(c);
  });

  it('covers every block type that takes an answer', () => {
    expect(Object.keys(SUBJECT_KINDS).sort()).toEqual([
      ...new Set(
        BLOCKS.filter((b) => !['statement', 'page_break'].includes(b.type))
          .map((b) => b.type)
          .sort(),
      ),
    ]);
  });

  it('has one recursive JSON Schema definition, gathered at the root of the schema using it, that Ajv compiles strictly', () => {
    const schema = gatherDefinitions({ type: 'object', properties: { a: ConditionSchema(), b: ConditionSchema('b') } });
    // Written out once, however many arguments take a condition.
    expect(JSON.stringify(schema).split('"not_answered"')).toHaveLength(2);
    const validate = createAjv().compile(schema);
    const ok = (c: unknown) => validate({ a: c });
    const leaf = { block: 'short', op: 'answered' };
    expect(ok({ all: [leaf, { any: [leaf, { hidden: 'source', op: 'in', value: ['a', 'b'] }] }] })).toBe(true);
    // Too deep: taken by the schema, refused by checkCondition with a message about depth.
    expect(ok({ all: [{ any: [{ not: leaf }] }] })).toBe(true);
    expect(paths({ all: [{ any: [{ not: leaf }] }] })).toEqual(['/c/all/0/any/0']);
    expect(ok({ block: 'short', op: 'like' })).toBe(false);
    expect(ok({ block: 'short', op: 'answered', extra: 1 })).toBe(false);
    expect(ok({ all: [{ any: [{ not: { block: 'short', op: 'answered', extra: 1 } }] }] })).toBe(false);
  });

  it('ignores case beyond ASCII as SQL does (final sigma, ẞ, İ, accents, emoji: the shared FOLDING cases)', () => {
    for (const [answer, value, expected] of FOLDING) {
      const holds = evaluate(ok({ block: 'short', op: 'contains', value }), facts({ b_short: answer }));
      const hidden = evaluate(ok({ hidden: 'source', op: 'not_contains', value }), facts({}, { source: answer }));
      expect({ answer, value, holds, hidden }).toEqual({ answer, value, holds: expected, hidden: !expected });
    }
  });
});

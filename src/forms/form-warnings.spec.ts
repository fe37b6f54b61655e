import type { Block } from './blocks';
import { alwaysFalse, alwaysTrue, formWarnings } from './form-warnings';

const q = (id: string, extra: Partial<Block> = {}): Block => ({
  id,
  type: 'short_text',
  title: id,
  required: false,
  ...extra,
});
const br = (id: string, extra: Partial<Block> = {}): Block => ({
  id,
  type: 'page_break',
  title: '',
  required: false,
  ...extra,
});
const either = {
  any: [
    { block: 'a', op: 'answered' as const },
    { block: 'a', op: 'not_answered' as const },
  ],
};
const maybe = { block: 'a', op: 'equals' as const, value: 'x' };
const paths = (blocks: Block[]) => formWarnings(blocks).map((w) => w.path);

describe('formWarnings', () => {
  it('says nothing of a form whose every page, jump and required block can be reached and shown', () => {
    expect(
      paths([
        q('a', { required: true }),
        br('p2', { jumps: [{ if: maybe, to: 'p3' }] }),
        q('b'),
        br('p3'),
        q('c', { required: true }),
      ]),
    ).toEqual([]);
  });

  it('a page after one that always jumps away is reached only by a jump to it', () => {
    const always = [q('a'), br('p2', { jumps: [{ if: either, to: 'p3' }] }), q('b'), br('p3'), q('c')];
    expect(paths(always)).toEqual(['/blocks/1']);
    // A jump to the end instead: the pages after are never reached.
    const ends = [q('a'), br('p2', { jumps: [{ if: either, to: 'end' }] }), q('b'), br('p3'), q('c')];
    expect(paths(ends)).toEqual(['/blocks/1', '/blocks/3']);
  });

  it('a page that may be skipped by its showIf lets the next page be reached', () => {
    const blocks = [br('p1', { showIf: maybe }), q('a'), br('p2', { jumps: [{ if: either, to: 'end' }] }), q('b')];
    expect(paths(blocks)).toEqual([]);
  });

  it('a jump after one always taken, or whose condition never holds, can never be taken', () => {
    const never = {
      all: [
        { block: 'a', op: 'answered' as const },
        { block: 'a', op: 'not_answered' as const },
      ],
    };
    const blocks = [
      q('a'),
      br('p2', {
        jumps: [
          { if: never, to: 'end' },
          { if: either, to: 'p3' },
          { if: maybe, to: 'end' },
        ],
      }),
      q('b'),
      br('p3'),
    ];
    expect(paths(blocks).sort()).toEqual(['/blocks/1', '/blocks/1/jumps/0', '/blocks/1/jumps/2']);
  });

  it('a required block logic can hide: its showIf, its page, a jump over it', () => {
    const blocks = [
      q('a'),
      q('b', { required: true, showIf: maybe }),
      br('p2', { jumps: [{ if: maybe, to: 'p3' }] }),
      q('c', { required: true }),
      br('p3', { showIf: maybe }),
      q('d', { required: true }),
    ];
    expect(formWarnings(blocks).map((w) => [w.path, w.message.split(' can')[0]])).toEqual([
      ['/blocks/1/required', 'is required, but its showIf'],
      ['/blocks/3/required', 'is required, but the jump at /blocks/2/jumps/0'],
      ['/blocks/5/required', "is required, but its page's showIf"],
    ]);
  });

  it('a recall of a block not required, or of a hidden field, can be empty; of a required block always shown, not', () => {
    const blocks = [
      q('a', { ref: 'name', required: true }),
      q('b', { ref: 'pet' }),
      q('c', { title: '{{name}} {{pet}} {{hidden:src}} {{variable:v}}' }),
    ];
    expect(formWarnings(blocks).map((w) => w.message)).toEqual([
      '{{pet}} can be empty: the block is not required',
      '{{hidden:src}} can be empty: a link may not carry the hidden field src',
    ]);
  });

  it('tells always true and always false only when certain', () => {
    expect(alwaysTrue([either])).toBe(true);
    expect(
      alwaysTrue([
        { block: 'a', op: 'answered' },
        { block: 'a', op: 'not_answered' },
      ]),
    ).toBe(true);
    expect(alwaysTrue([maybe, { block: 'a', op: 'not_equals', value: 'x' }])).toBe(false);
    expect(alwaysFalse({ all: [maybe, { block: 'b', op: 'not_answered' }] })).toBe(false);
  });
});

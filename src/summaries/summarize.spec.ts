import type { Block } from '../forms/blocks';
import { BlockSummary, StoredResponse, summarize } from './summarize';

const block = (b: Partial<Block> & Pick<Block, 'id' | 'type'>): Block => ({
  title: `Title of ${b.id}`,
  required: false,
  ...b,
});

const colour = block({
  id: 'colour',
  type: 'multiple_choice',
  choices: [
    { id: 'c_red', label: 'Red' },
    { id: 'c_green', label: 'Green' },
    { id: 'c_blue', label: 'Blue' },
  ],
});
const toppings = block({
  id: 'toppings',
  type: 'checkboxes',
  choices: [
    { id: 'c_ham', label: 'Ham' },
    { id: 'c_egg', label: 'Egg' },
  ],
});
const size = block({
  id: 'size',
  type: 'dropdown',
  choices: [
    { id: 'c_s', label: 'S' },
    { id: 'c_l', label: 'L' },
  ],
});
const likes = block({ id: 'likes', type: 'yes_no' });
const age = block({ id: 'age', type: 'number' });
const stars = block({ id: 'stars', type: 'rating', max: 5 });
const scale = block({ id: 'scale', type: 'linear_scale', min: 0, max: 10 });
const when = block({ id: 'when', type: 'date' });
const comment = block({ id: 'comment', type: 'long_text' });
const intro = block({ id: 'intro', type: 'statement' });

const clock = Date.parse('2026-03-01T09:00:00.000Z');
/** A response submitted `minutes` after the start of the test data. */
const at = (minutes: number) => new Date(clock + minutes * 60_000);
const response = (minutes: number, answers: Record<string, unknown>): StoredResponse => ({
  submittedAt: at(minutes),
  answers,
});

function blockOf(summary: { blocks: BlockSummary[] }, id: string): BlockSummary {
  const found = summary.blocks.find((b) => b.blockId === id);
  if (!found) throw new Error(`no summary for block ${id}`);
  return found;
}

describe('summarize', () => {
  describe('choice blocks', () => {
    it("counts each choice and its share of the answers, in the block's choice order", () => {
      const summary = summarize(
        [colour],
        [
          response(0, { colour: 'c_red' }),
          response(1, { colour: 'c_blue' }),
          response(2, { colour: 'c_red' }),
          response(3, {}),
        ],
      );
      expect(blockOf(summary, 'colour')).toEqual({
        blockId: 'colour',
        type: 'multiple_choice',
        title: 'Title of colour',
        answered: 3,
        skipped: 1,
        choices: [
          { id: 'c_red', label: 'Red', count: 2, share: 0.6667 },
          { id: 'c_green', label: 'Green', count: 0, share: 0 },
          { id: 'c_blue', label: 'Blue', count: 1, share: 0.3333 },
        ],
      });
    });

    it('counts dropdowns the same way', () => {
      const s = blockOf(summarize([size], [response(0, { size: 'c_l' }), response(1, { size: 'c_l' })]), 'size');
      expect(s.choices).toEqual([
        { id: 'c_s', label: 'S', count: 0, share: 0 },
        { id: 'c_l', label: 'L', count: 2, share: 1 },
      ]);
    });

    it('counts every choice ticked in a checkboxes answer, shares out of the people who answered', () => {
      const s = blockOf(
        summarize(
          [toppings],
          [
            response(0, { toppings: ['c_ham', 'c_egg'] }),
            response(1, { toppings: ['c_egg'] }),
            response(2, { toppings: ['c_egg'] }),
            response(3, { toppings: ['c_ham'] }),
          ],
        ),
        'toppings',
      );
      expect(s.answered).toBe(4);
      expect(s.choices).toEqual([
        { id: 'c_ham', label: 'Ham', count: 2, share: 0.5 },
        { id: 'c_egg', label: 'Egg', count: 3, share: 0.75 },
      ]);
    });

    it('lists every choice with zero counts and shares when nobody answered', () => {
      const s = blockOf(summarize([colour], [response(0, {})]), 'colour');
      expect(s.answered).toBe(0);
      expect(s.choices!.map((c) => [c.count, c.share])).toEqual([
        [0, 0],
        [0, 0],
        [0, 0],
      ]);
    });
  });

  it('counts yes and no', () => {
    const s = blockOf(
      summarize(
        [likes],
        [response(0, { likes: true }), response(1, { likes: false }), response(2, { likes: true }), response(3, {})],
      ),
      'likes',
    );
    expect(s).toMatchObject({ yes: 2, no: 1, answered: 3, skipped: 1 });
  });

  describe('numeric blocks', () => {
    it('gives min, max and mean of numbers', () => {
      const s = blockOf(
        summarize([age], [response(0, { age: 30 }), response(1, { age: -2.5 }), response(2, { age: 100 })]),
        'age',
      );
      expect(s).toMatchObject({ min: -2.5, max: 100, mean: 42.5 });
    });

    it('gives min, max and a rounded mean of ratings', () => {
      const s = blockOf(
        summarize([stars], [response(0, { stars: 5 }), response(1, { stars: 4 }), response(2, { stars: 4 })]),
        'stars',
      );
      expect(s).toMatchObject({ min: 4, max: 5, mean: 4.3333 });
    });

    it('keeps 0 as a real minimum on a linear scale', () => {
      const s = blockOf(summarize([scale], [response(0, { scale: 0 }), response(1, { scale: 10 })]), 'scale');
      expect(s).toMatchObject({ min: 0, max: 10, mean: 5 });
    });

    it('gives null min, max and mean when nobody answered', () => {
      const s = blockOf(summarize([stars], [response(0, {})]), 'stars');
      expect(s).toMatchObject({ min: null, max: null, mean: null, answered: 0, skipped: 1 });
    });
  });

  it('gives the earliest and latest date answered', () => {
    const s = blockOf(
      summarize(
        [when],
        [response(0, { when: '2026-05-10' }), response(1, { when: '2025-12-31' }), response(2, { when: '2026-01-15' })],
      ),
      'when',
    );
    expect(s).toMatchObject({ min: '2025-12-31', max: '2026-05-10' });
  });

  describe('text blocks', () => {
    it('shows the latest texts, newest first, whatever order the responses come in', () => {
      const s = blockOf(
        summarize(
          [comment],
          [response(5, { comment: 'five' }), response(1, { comment: 'one' }), response(3, { comment: 'three' })],
        ),
        'comment',
      );
      expect(s.latest).toEqual([
        { value: 'five', submittedAt: at(5).toISOString() },
        { value: 'three', submittedAt: at(3).toISOString() },
        { value: 'one', submittedAt: at(1).toISOString() },
      ]);
    });

    it('shows at most 5 texts: the 5 newest', () => {
      const responses = [7, 2, 6, 1, 5, 3, 4].map((m) => response(m, { comment: `at ${m}` }));
      const s = blockOf(summarize([comment], responses), 'comment');
      expect(s.latest!.map((l) => l.value)).toEqual(['at 7', 'at 6', 'at 5', 'at 4', 'at 3']);
      expect(s.answered).toBe(7);
    });

    it('shows an empty list when nobody answered', () => {
      expect(blockOf(summarize([comment], []), 'comment').latest).toEqual([]);
    });
  });

  it('counts answered and skipped per block', () => {
    const summary = summarize(
      [age, comment],
      [response(0, { age: 1 }), response(1, { age: 2, comment: 'x' }), response(2, {})],
    );
    expect(blockOf(summary, 'age')).toMatchObject({ answered: 2, skipped: 1 });
    expect(blockOf(summary, 'comment')).toMatchObject({ answered: 1, skipped: 2 });
  });

  it('gives the total and the first and last submission times', () => {
    const summary = summarize([age], [response(10, {}), response(0, {}), response(25, {}), response(5, {})]);
    expect(summary.total).toBe(4);
    expect(summary.firstSubmittedAt).toBe(at(0).toISOString());
    expect(summary.lastSubmittedAt).toBe(at(25).toISOString());
  });

  it('gives zero responses and null times for a form without responses', () => {
    const summary = summarize([age, colour], []);
    expect(summary).toMatchObject({ total: 0, firstSubmittedAt: null, lastSubmittedAt: null });
    expect(summary.blocks.map((b) => [b.answered, b.skipped])).toEqual([
      [0, 0],
      [0, 0],
    ]);
  });

  it('leaves out statement blocks and keeps the other blocks in form order', () => {
    const summary = summarize([intro, likes, age, comment], [response(0, { likes: true })]);
    expect(summary.blocks.map((b) => b.blockId)).toEqual(['likes', 'age', 'comment']);
  });

  it('accepts any iterable of responses, such as a generator', () => {
    function* rows() {
      yield response(0, { likes: true });
      yield response(1, { likes: true });
    }
    expect(summarize([likes], rows())).toMatchObject({ total: 2, blocks: [{ yes: 2, no: 0 }] });
  });
});

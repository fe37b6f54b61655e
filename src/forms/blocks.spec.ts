import { answersView, Block, BlockInput, normalizeBlocks, validateAnswers } from './blocks';

/** The paths of the details, for compact assertions. */
const paths = (details: Array<{ path: string }>) => details.map((d) => d.path);

/** Normalizes one block that must be valid, and returns it. */
function oneBlock(input: BlockInput, previous: Block[] = []): Block {
  const { blocks, details } = normalizeBlocks([input], previous);
  expect(details).toEqual([]);
  expect(blocks).toHaveLength(1);
  return blocks[0];
}

describe('normalizeBlocks', () => {
  describe('block ids', () => {
    it('assigns a fresh id to every block sent without one', () => {
      const { blocks, details } = normalizeBlocks([
        { type: 'short_text', title: 'Name' },
        { type: 'email', title: 'Email' },
      ]);
      expect(details).toEqual([]);
      expect(blocks[0].id).toMatch(/^b_[0-9A-Za-z]{10}$/);
      expect(blocks[1].id).toMatch(/^b_[0-9A-Za-z]{10}$/);
      expect(blocks[0].id).not.toBe(blocks[1].id);
    });

    it('keeps the id of a block the form already has', () => {
      const previous: Block[] = [{ id: 'b_mine', type: 'short_text', title: 'Name', required: false }];
      expect(oneBlock({ id: 'b_mine', type: 'short_text', title: 'Full name' }, previous).id).toBe('b_mine');
    });

    it('refuses an id the form does not have (ids are assigned by Formwork)', () => {
      expect(paths(normalizeBlocks([{ id: 'b_invented', type: 'short_text', title: 'Name' }]).details)).toEqual([
        '/blocks/0/id',
      ]);
      const previous: Block[] = [{ id: 'b_mine', type: 'short_text', title: 'Name', required: false }];
      const { details } = normalizeBlocks([{ id: 'b_typo', type: 'short_text', title: 'Name' }], previous);
      expect(details).toEqual([
        { path: '/blocks/0/id', message: 'is not a block of this form; omit id to add a new block' },
      ]);
    });

    it('refuses two blocks with the same id, pointing at the second one', () => {
      const previous: Block[] = [{ id: 'b_same', type: 'short_text', title: 'A', required: false }];
      const { details } = normalizeBlocks(
        [
          { id: 'b_same', type: 'short_text', title: 'A' },
          { id: 'b_same', type: 'long_text', title: 'B' },
        ],
        previous,
      );
      expect(paths(details)).toEqual(['/blocks/1/id']);
    });

    it('keeps the blocks in the order they were sent, with defaults filled in', () => {
      const { blocks, details } = normalizeBlocks([
        { type: 'short_text', title: 'First' },
        { type: 'yes_no', title: 'Second', required: true, description: 'Be honest' },
      ]);
      expect(details).toEqual([]);
      expect(blocks).toEqual([
        { id: expect.any(String), type: 'short_text', title: 'First', description: null, required: false },
        { id: expect.any(String), type: 'yes_no', title: 'Second', description: 'Be honest', required: true },
      ]);
    });
  });

  describe('settings a type does not take', () => {
    it('refuses choices on a short_text block, with the detail path of that field', () => {
      const { details } = normalizeBlocks([
        { type: 'short_text', title: 'ok' },
        { type: 'short_text', title: 'Name', choices: ['A'] },
      ]);
      expect(paths(details)).toEqual(['/blocks/1/choices']);
      expect(details[0].message).toContain('short_text');
    });

    it('refuses min on a rating block, saying that a rating runs from 1 to its max', () => {
      const { details } = normalizeBlocks([{ type: 'rating', title: 'Stars', min: 1 }]);
      expect(details).toEqual([
        {
          path: '/blocks/0/min',
          message:
            'is not a setting of rating blocks: a rating runs from 1 to its max (3 to 10, default 5); for a scale from 0, use linear_scale',
        },
      ]);
    });

    it('says where a setting belongs', () => {
      const { details } = normalizeBlocks([
        { type: 'short_text', title: 'Name', choices: ['A'], max: 3 },
        { type: 'rating', title: 'Stars', choices: ['A'] },
      ]);
      expect(details.map((d) => d.message)).toEqual([
        'is not a setting of short_text blocks: choices go on multiple_choice, checkboxes, dropdown and ranking blocks',
        'is not a setting of short_text blocks: min and max go on number, rating (max only) and linear_scale blocks',
        'is not a setting of rating blocks: choices go on multiple_choice, checkboxes, dropdown and ranking blocks',
      ]);
    });

    it('refuses min and max on a text block and choices on a number block', () => {
      const { details } = normalizeBlocks([
        { type: 'long_text', title: 'Essay', min: 1, max: 2 },
        { type: 'number', title: 'Age', choices: ['1'] },
      ]);
      expect(paths(details)).toEqual(['/blocks/0/min', '/blocks/0/max', '/blocks/1/choices']);
    });

    it('uses the base path it is given', () => {
      const { details } = normalizeBlocks([{ type: 'date', title: 'When', max: 3 }], [], '/form/blocks');
      expect(paths(details)).toEqual(['/form/blocks/0/max']);
    });
  });

  describe('choices', () => {
    it('turns plain labels into choices with fresh ids', () => {
      const block = oneBlock({ type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Green'] });
      expect(block.choices!.map((c) => c.label)).toEqual(['Red', 'Green']);
      for (const c of block.choices!) expect(c.id).toMatch(/^c_[0-9A-Za-z]{8}$/);
      expect(block.choices![0].id).not.toBe(block.choices![1].id);
    });

    it('keeps the ids of {id, label} choices and gives new ones to those without', () => {
      const previous: Block[] = [
        {
          id: 'b_t',
          type: 'checkboxes',
          title: 'Toppings',
          required: false,
          choices: [{ id: 'c_cheese', label: 'Cheddar' }],
        },
      ];
      const block = oneBlock(
        {
          id: 'b_t',
          type: 'checkboxes',
          title: 'Toppings',
          choices: [{ id: 'c_cheese', label: 'Cheese' }, { label: 'Ham' }],
        },
        previous,
      );
      expect(block.choices![0]).toEqual({ id: 'c_cheese', label: 'Cheese' });
      expect(block.choices![1].label).toBe('Ham');
      expect(block.choices![1].id).toMatch(/^c_/);
    });

    it('lets a caller swap labels between choice ids (the explicit id wins over label matching)', () => {
      const previous: Block = {
        id: 'b1',
        type: 'multiple_choice',
        title: 'Colour',
        required: false,
        choices: [{ id: 'c_red', label: 'Red' }],
      };
      const block = oneBlock(
        { id: 'b1', type: 'multiple_choice', title: 'Colour', choices: [{ id: 'c_red', label: 'Green' }, 'Red'] },
        [previous],
      );
      expect(block.choices![0]).toEqual({ id: 'c_red', label: 'Green' });
      expect(block.choices![1].label).toBe('Red');
      expect(block.choices![1].id).not.toBe('c_red');
    });

    it('trims labels', () => {
      const block = oneBlock({ type: 'dropdown', title: 'Size', choices: ['  Small ', 'Large'] });
      expect(block.choices!.map((c) => c.label)).toEqual(['Small', 'Large']);
    });

    it('refuses a label that appears twice in the block', () => {
      const { details } = normalizeBlocks([
        { type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Blue', 'Red'] },
      ]);
      expect(paths(details)).toEqual(['/blocks/0/choices/2']);
      expect(details[0].message).toContain('Red');
    });

    it('refuses labels that differ only by surrounding spaces as duplicates', () => {
      const { details } = normalizeBlocks([{ type: 'multiple_choice', title: 'Colour', choices: ['Red', ' Red '] }]);
      expect(paths(details)).toEqual(['/blocks/0/choices/1']);
    });

    it('refuses an empty label', () => {
      const { details } = normalizeBlocks([{ type: 'dropdown', title: 'Size', choices: ['Small', '   '] }]);
      expect(paths(details)).toEqual(['/blocks/0/choices/1']);
    });

    it('refuses two choices with the same id', () => {
      const previous: Block[] = [
        { id: 'b_s', type: 'dropdown', title: 'Size', required: false, choices: [{ id: 'c_x', label: 'Small' }] },
      ];
      const { details } = normalizeBlocks(
        [
          {
            id: 'b_s',
            type: 'dropdown',
            title: 'Size',
            choices: [
              { id: 'c_x', label: 'Small' },
              { id: 'c_x', label: 'Large' },
            ],
          },
        ],
        previous,
      );
      expect(paths(details)).toEqual(['/blocks/0/choices/1/id']);
    });

    it('refuses a choice id the block does not have', () => {
      const { details } = normalizeBlocks([
        { type: 'dropdown', title: 'Size', choices: [{ id: 'c_invented', label: 'Small' }] },
      ]);
      expect(details).toEqual([
        { path: '/blocks/0/choices/0/id', message: 'is not a choice of this block; omit id to add a new choice' },
      ]);
    });

    it.each(['multiple_choice', 'checkboxes', 'dropdown'] as const)(
      'refuses a %s block with no choices, or an empty list',
      (type) => {
        const { details } = normalizeBlocks([
          { type, title: 'Missing' },
          { type, title: 'Empty', choices: [] },
        ]);
        expect(paths(details)).toEqual(['/blocks/0/choices', '/blocks/1/choices']);
      },
    );

    it('keeps the previous choice id when the same block is sent again with bare labels', () => {
      const previous: Block[] = [
        {
          id: 'b_colour',
          type: 'multiple_choice',
          title: 'Colour',
          required: false,
          choices: [
            { id: 'c_red', label: 'Red' },
            { id: 'c_green', label: 'Green' },
          ],
        },
      ];
      const block = oneBlock(
        { id: 'b_colour', type: 'multiple_choice', title: 'Colour', choices: ['Green', 'Red', 'Blue'] },
        previous,
      );
      expect(block.choices![0]).toEqual({ id: 'c_green', label: 'Green' });
      expect(block.choices![1]).toEqual({ id: 'c_red', label: 'Red' });
      expect(block.choices![2].label).toBe('Blue');
      expect(['c_red', 'c_green']).not.toContain(block.choices![2].id);
    });

    it("does not borrow choice ids from another block's previous choices", () => {
      const previous: Block[] = [
        { id: 'b_other', type: 'dropdown', title: 'Other', required: false, choices: [{ id: 'c_red', label: 'Red' }] },
      ];
      const { blocks, details } = normalizeBlocks(
        [previous[0], { type: 'dropdown', title: 'Colour', choices: ['Red'] }],
        previous,
      );
      expect(details).toEqual([]);
      const block = blocks[1];
      expect(block.choices![0].id).not.toBe('c_red');
    });

    it('renaming a choice under its id keeps the id', () => {
      const previous: Block[] = [
        { id: 'b_c', type: 'dropdown', title: 'Colour', required: false, choices: [{ id: 'c_red', label: 'Red' }] },
      ];
      const block = oneBlock(
        { id: 'b_c', type: 'dropdown', title: 'Colour', choices: [{ id: 'c_red', label: 'Crimson' }] },
        previous,
      );
      expect(block.choices).toEqual([{ id: 'c_red', label: 'Crimson' }]);
    });
  });

  describe('rating', () => {
    it('defaults max to 5', () => {
      expect(oneBlock({ type: 'rating', title: 'Stars' }).max).toBe(5);
    });

    it.each([3, 10])('accepts max %i', (max) => {
      expect(oneBlock({ type: 'rating', title: 'Stars', max }).max).toBe(max);
    });

    it.each([2, 11, 4.5])('refuses max %p', (max) => {
      const { details } = normalizeBlocks([{ type: 'rating', title: 'Stars', max }]);
      expect(paths(details)).toEqual(['/blocks/0/max']);
    });
  });

  describe('linear_scale', () => {
    it('defaults to 1..5', () => {
      const block = oneBlock({ type: 'linear_scale', title: 'Scale' });
      expect([block.min, block.max]).toEqual([1, 5]);
    });

    it.each([
      [0, 2],
      [1, 10],
    ])('accepts min %i and max %i', (min, max) => {
      const block = oneBlock({ type: 'linear_scale', title: 'Scale', min, max });
      expect([block.min, block.max]).toEqual([min, max]);
    });

    it.each([2, -1, 0.5])('refuses min %p', (min) => {
      const { details } = normalizeBlocks([{ type: 'linear_scale', title: 'Scale', min }]);
      expect(paths(details)).toEqual(['/blocks/0/min']);
    });

    it.each([1, 11, 7.5])('refuses max %p', (max) => {
      const { details } = normalizeBlocks([{ type: 'linear_scale', title: 'Scale', max }]);
      expect(paths(details)).toEqual(['/blocks/0/max']);
    });
  });

  describe('number bounds', () => {
    it('refuses answers and settings beyond ±10^15 (sums of them must stay finite)', () => {
      const age: Block = { id: 'age', type: 'number', title: 'Age', required: false };
      expect(validateAnswers([age], { age: 1.7e308 }).details.map((d) => d.path)).toEqual(['/answers/age']);
      expect(validateAnswers([age], { age: -1e16 }).details.map((d) => d.path)).toEqual(['/answers/age']);
      expect(validateAnswers([age], { age: 1e15 }).stored).toEqual({ age: 1e15 });
      expect(paths(normalizeBlocks([{ type: 'number', title: 'n', min: -1e300, max: 1e300 }]).details)).toEqual([
        '/blocks/0/min',
        '/blocks/0/max',
      ]);
    });
  });

  describe('number', () => {
    it('keeps min and max', () => {
      const block = oneBlock({ type: 'number', title: 'Age', min: 0, max: 130 });
      expect([block.min, block.max]).toEqual([0, 130]);
    });

    it('accepts min equal to max, and no bounds at all', () => {
      oneBlock({ type: 'number', title: 'Exactly', min: 7, max: 7 });
      const free = oneBlock({ type: 'number', title: 'Any' });
      expect(free.min).toBeUndefined();
      expect(free.max).toBeUndefined();
    });

    it('refuses min greater than max', () => {
      const { details } = normalizeBlocks([{ type: 'number', title: 'Age', min: 10, max: 5 }]);
      expect(paths(details)).toEqual(['/blocks/0/max']);
    });
  });

  describe('statement', () => {
    it('cannot be required', () => {
      const { details } = normalizeBlocks([{ type: 'statement', title: 'Welcome', required: true }]);
      expect(paths(details)).toEqual(['/blocks/0/required']);
    });

    it('is stored as not required', () => {
      expect(oneBlock({ type: 'statement', title: 'Welcome' }).required).toBe(false);
    });
  });

  it('refuses more than 200 blocks', () => {
    const input: BlockInput[] = Array.from({ length: 201 }, (_, i) => ({ type: 'short_text', title: `Q${i}` }));
    expect(paths(normalizeBlocks(input).details)).toEqual(['/blocks']);
    expect(normalizeBlocks(input.slice(0, 200)).details).toEqual([]);
  });
});

describe('validateAnswers', () => {
  const block = (b: Partial<Block> & Pick<Block, 'id' | 'type'>): Block => ({ title: b.id, required: false, ...b });
  const choices = [
    { id: 'c_red', label: 'Red' },
    { id: 'c_green', label: 'Green' },
    { id: 'c_blue', label: 'Blue' },
  ];

  /** Validates one answer against one block; returns what was stored for it and the detail messages. */
  function answer(b: Block, value: unknown) {
    const { stored, details } = validateAnswers([b], { [b.id]: value });
    return { stored: stored[b.id], details };
  }
  const accepts = (b: Block, value: unknown, storedAs: unknown = value) => {
    const r = answer(b, value);
    expect(r.details).toEqual([]);
    expect(r.stored).toEqual(storedAs);
  };
  const refuses = (b: Block, value: unknown) => {
    const r = answer(b, value);
    expect(paths(r.details)).toEqual([`/answers/${b.id}`]);
    expect(r.stored).toBeUndefined();
  };

  describe('text types', () => {
    it('short_text takes a string (trimmed) and refuses other types and over-long text', () => {
      const b = block({ id: 'name', type: 'short_text' });
      accepts(b, '  Ada  ', 'Ada');
      refuses(b, 42);
      refuses(b, ['Ada']);
      refuses(b, 'x'.repeat(1001));
      accepts(b, 'x'.repeat(1000));
    });

    it('refuses text PostgreSQL cannot store: the NUL character and lone surrogates', () => {
      refuses(block({ id: 'name', type: 'short_text' }), 'Ada\u0000');
      refuses(block({ id: 'essay', type: 'long_text' }), '\u0000');
      refuses(block({ id: 'name', type: 'short_text' }), 'half an emoji \ud83d');
      accepts(block({ id: 'name', type: 'short_text' }), 'a whole emoji \ud83d\ude00');
    });

    it('long_text keeps its text as sent, up to 10000 characters', () => {
      const b = block({ id: 'essay', type: 'long_text' });
      accepts(b, '  line one\nline two  ');
      accepts(b, 'y'.repeat(10000));
      refuses(b, 'y'.repeat(10001));
      refuses(b, true);
    });

    it('email takes an address and refuses anything else', () => {
      const b = block({ id: 'email', type: 'email' });
      accepts(b, 'ada@example.com');
      accepts(b, ' ada@example.com ', 'ada@example.com');
      refuses(b, 'ada');
      refuses(b, 'ada@example');
      refuses(b, 'ada @example.com');
      refuses(b, 7);
    });

    it('url takes http(s) URLs only', () => {
      const b = block({ id: 'site', type: 'url' });
      accepts(b, 'https://example.com/path?q=1');
      accepts(b, 'http://localhost:3000');
      refuses(b, 'ftp://example.com');
      refuses(b, 'javascript:alert(1)');
      refuses(b, 'example.com');
    });

    it('phone takes digits with spaces, +, - and parentheses inside', () => {
      const b = block({ id: 'phone', type: 'phone' });
      accepts(b, '+44 20 7946 0958');
      accepts(b, '+1 (555) 123-4567');
      accepts(b, '555.123.4567');
      accepts(b, '(555) 123-4567'); // the common US form starts with a parenthesis
      refuses(b, 'call me');
      refuses(b, '12');
      refuses(b, '+44 20 7946 0958 ext');
      refuses(b, 5551234567);
    });
  });

  describe('number', () => {
    const b = block({ id: 'age', type: 'number', min: 0, max: 130 });

    it('takes a number within its bounds, bounds included', () => {
      accepts(b, 0);
      accepts(b, 130);
      accepts(b, 42.5);
    });

    it('refuses numbers outside its bounds', () => {
      refuses(b, -1);
      refuses(b, 130.5);
      expect(answer(b, -1).details[0].message).toContain('0');
      expect(answer(b, 131).details[0].message).toContain('130');
    });

    it('refuses a numeric string and non-finite numbers', () => {
      refuses(b, '42');
      refuses(block({ id: 'n', type: 'number' }), Infinity);
      refuses(block({ id: 'n', type: 'number' }), NaN);
    });

    it('takes any finite number when unbounded', () => {
      accepts(block({ id: 'n', type: 'number' }), -1e9);
    });
  });

  describe.each(['multiple_choice', 'dropdown'] as const)('%s', (type) => {
    const b = block({ id: 'colour', type, choices });

    it('takes a label and stores its choice id', () => {
      accepts(b, 'Green', 'c_green');
      accepts(b, ' Green ', 'c_green');
    });

    it('takes a choice id and stores it as is', () => {
      accepts(b, 'c_blue', 'c_blue');
    });

    it('refuses a label that is not a choice, and a list', () => {
      refuses(b, 'Purple');
      refuses(b, 'green');
      refuses(b, ['Red']);
      expect(answer(b, 'Purple').details[0].message).toContain('"Red"');
    });
  });

  describe('checkboxes', () => {
    const b = block({ id: 'toppings', type: 'checkboxes', choices });

    it('takes a list of labels and ids and stores the ids, in the order given', () => {
      accepts(b, ['Blue', 'c_red'], ['c_blue', 'c_red']);
      accepts(b, ['Green'], ['c_green']);
    });

    it('refuses a choice given twice, even once by label and once by id', () => {
      refuses(b, ['Red', 'Red']);
      refuses(b, ['Red', 'c_red']);
    });

    it('refuses an unknown choice, a non-list and a list with non-strings', () => {
      refuses(b, ['Red', 'Purple']);
      refuses(b, 'Red');
      refuses(b, ['Red', 3]);
    });
  });

  describe('rating', () => {
    it('takes an integer from 1 to its max', () => {
      const b = block({ id: 'stars', type: 'rating', max: 5 });
      accepts(b, 1);
      accepts(b, 5);
      refuses(b, 0);
      refuses(b, 6);
      refuses(b, 3.5);
      refuses(b, '3');
    });

    it('follows a larger max', () => {
      const b = block({ id: 'stars', type: 'rating', max: 10 });
      accepts(b, 10);
      refuses(b, 11);
    });
  });

  describe('linear_scale', () => {
    it('takes an integer within min..max, including 0 when min is 0', () => {
      const b = block({ id: 'scale', type: 'linear_scale', min: 0, max: 10 });
      accepts(b, 0);
      accepts(b, 10);
      refuses(b, -1);
      refuses(b, 11);
      refuses(b, 2.5);
    });

    it('refuses 0 when min is 1', () => {
      const b = block({ id: 'scale', type: 'linear_scale', min: 1, max: 4 });
      refuses(b, 0);
      accepts(b, 1);
      refuses(b, 5);
    });
  });

  describe('date', () => {
    const b = block({ id: 'when', type: 'date' });

    it('takes an ISO calendar date, leap days included', () => {
      accepts(b, '2026-03-15');
      accepts(b, '2024-02-29');
    });

    it('takes years before 100 as written', () => {
      accepts(b, '0099-01-01');
    });

    it('refuses dates that do not exist', () => {
      refuses(b, '2026-02-30');
      refuses(b, '2025-02-29');
      refuses(b, '2026-13-01');
      refuses(b, '2026-04-31');
      expect(answer(b, '2026-02-30').details[0].message).toBe('is not a real date');
    });

    it('refuses other date shapes and non-strings', () => {
      refuses(b, '15/03/2026');
      refuses(b, '2026-03-15T10:00:00Z');
      refuses(b, '2026-3-5');
      refuses(b, 20260315);
    });
  });

  describe('yes_no', () => {
    const b = block({ id: 'ok', type: 'yes_no' });

    it('takes true and false', () => {
      accepts(b, true);
      accepts(b, false);
    });

    it('refuses strings and numbers', () => {
      refuses(b, 'yes');
      refuses(b, 'true');
      refuses(b, 1);
    });
  });

  describe('the answer set', () => {
    const blocks: Block[] = [
      block({ id: 'intro', type: 'statement' }),
      block({ id: 'name', type: 'short_text', required: true }),
      block({ id: 'colour', type: 'multiple_choice', required: true, choices }),
      block({ id: 'note', type: 'long_text' }),
    ];

    it('stores a complete, valid set', () => {
      const { stored, details } = validateAnswers(blocks, { name: 'Ada', colour: 'Red', note: 'hi' });
      expect(details).toEqual([]);
      expect(stored).toEqual({ name: 'Ada', colour: 'c_red', note: 'hi' });
    });

    it('reports every required block left unanswered, blanks included', () => {
      const { details } = validateAnswers(blocks, { name: '   ', note: 'hi' });
      expect(details).toEqual([
        { path: '/answers/name', message: 'is required' },
        { path: '/answers/colour', message: 'is required' },
      ]);
    });

    it('treats an empty list and null as unanswered', () => {
      const b = block({ id: 'boxes', type: 'checkboxes', required: true, choices });
      expect(paths(validateAnswers([b], { boxes: [] }).details)).toEqual(['/answers/boxes']);
      expect(paths(validateAnswers([b], { boxes: null }).details)).toEqual(['/answers/boxes']);
    });

    it('refuses an answer for a block the form does not have, with its path', () => {
      const { details } = validateAnswers(blocks, { name: 'Ada', colour: 'Red', b_ghost: 'boo' });
      expect(paths(details)).toEqual(['/answers/b_ghost']);
    });

    it('refuses an answer to a statement, but lets a blank one pass', () => {
      expect(paths(validateAnswers(blocks, { name: 'Ada', colour: 'Red', intro: 'hello' }).details)).toEqual([
        '/answers/intro',
      ]);
      const { stored, details } = validateAnswers(blocks, { name: 'Ada', colour: 'Red', intro: '' });
      expect(details).toEqual([]);
      expect(stored).not.toHaveProperty('intro');
    });

    it('drops blank optional answers instead of storing them', () => {
      const { stored, details } = validateAnswers(blocks, { name: 'Ada', colour: 'Red', note: '   ' });
      expect(details).toEqual([]);
      expect(stored).toEqual({ name: 'Ada', colour: 'c_red' });
    });

    it('reports every bad answer at once and uses the base path it is given', () => {
      const { stored, details } = validateAnswers(blocks, { name: 5, colour: 'Purple' }, '/body');
      expect(paths(details)).toEqual(['/body/name', '/body/colour']);
      expect(stored).toEqual({});
    });
  });
});

describe('answersView', () => {
  const blocks: Block[] = [
    {
      id: 'colour',
      type: 'dropdown',
      title: 'Colour',
      required: false,
      choices: [
        { id: 'c_red', label: 'Crimson' },
        { id: 'c_blue', label: 'Blue' },
      ],
    },
    {
      id: 'toppings',
      type: 'checkboxes',
      title: 'Toppings',
      required: false,
      choices: [
        { id: 'c_ham', label: 'Ham' },
        { id: 'c_egg', label: 'Egg' },
      ],
    },
    { id: 'age', type: 'number', title: 'Age', required: false },
    { id: 'ok', type: 'yes_no', title: 'OK?', required: false },
  ];

  it('shows choice answers with their current labels and other answers as stored', () => {
    expect(answersView(blocks, { colour: 'c_red', toppings: ['c_egg', 'c_ham'], age: 42, ok: false })).toEqual({
      colour: 'Crimson',
      toppings: ['Egg', 'Ham'],
      age: 42,
      ok: false,
    });
  });

  it('skips answers to blocks that were removed', () => {
    expect(answersView(blocks, { age: 42, b_removed: 'whatever' })).toEqual({ age: 42 });
  });

  it('leaves out choices that no longer exist', () => {
    expect(answersView(blocks, { colour: 'c_gone', toppings: ['c_gone', 'c_ham'] })).toEqual({ toppings: ['Ham'] });
  });

  it('round-trips what validateAnswers stored back to labels', () => {
    const { stored } = validateAnswers(blocks, { colour: 'Blue', toppings: ['Ham', 'c_egg'] });
    expect(answersView(blocks, stored)).toEqual({ colour: 'Blue', toppings: ['Ham', 'Egg'] });
  });
});

describe('validateAnswers: common misses get a message that says what to send', () => {
  const message = (b: Partial<Block> & Pick<Block, 'id' | 'type'>, value: unknown) =>
    validateAnswers([{ title: b.id, required: false, ...b }], { [b.id]: value }).details.map((d) => d.message);
  const yesNo = [
    { id: 'c_yes', label: 'Yes' },
    { id: 'c_no', label: 'No' },
  ];

  it('a number, rating or scale sent as a string', () => {
    expect(message({ id: 'age', type: 'number' }, '42')).toEqual(['must be a number (send 42, not "42")']);
    expect(message({ id: 'sat', type: 'linear_scale', min: 0, max: 10 }, '7')).toEqual([
      'must be an integer from 0 to 10 (send 7, not "7")',
    ]);
    expect(message({ id: 'age', type: 'number' }, 'forty')).toEqual(['must be a number']);
  });

  it('a rating out of its range says that ratings run from 1 to the block max', () => {
    expect(message({ id: 'sat', type: 'rating', max: 5 }, 0)).toEqual([
      'must be an integer from 1 to 5 (this rating runs from 1 to its max, 5)',
    ]);
    expect(message({ id: 'sat', type: 'rating', max: 10 }, 11)).toEqual([
      'must be an integer from 1 to 10 (this rating runs from 1 to its max, 10)',
    ]);
  });

  it('a yes_no sent as a string or a number', () => {
    expect(message({ id: 'ok', type: 'yes_no' }, 'yes')).toEqual(['must be true or false (JSON booleans, not "yes")']);
    expect(message({ id: 'ok', type: 'yes_no' }, 1)).toEqual(['must be true or false (JSON booleans, not 1)']);
  });

  it('a choice sent as a list, a list sent as one choice, and a label off by case or a typo', () => {
    expect(message({ id: 'pick', type: 'multiple_choice', choices: yesNo }, ['Yes'])).toEqual([
      'takes one choice, not a list (only checkboxes take a list): send "Yes"',
    ]);
    expect(message({ id: 'tick', type: 'checkboxes', choices: yesNo }, 'Yes')).toEqual([
      'must be a list of choice labels (or choice ids): send ["Yes"]',
    ]);
    expect(message({ id: 'pick', type: 'dropdown', choices: yesNo }, 'yes')).toEqual([
      'must be one of "Yes", "No"; did you mean "Yes"?',
    ]);
    expect(message({ id: 'tick', type: 'checkboxes', choices: yesNo }, ['Noo'])).toEqual([
      '"Noo" is not one of "Yes", "No"; did you mean "No"?',
    ]);
    expect(message({ id: 'pick', type: 'multiple_choice', choices: yesNo }, 'Maybe')).toEqual([
      'must be one of "Yes", "No"',
    ]);
  });

  it('a text answer sent as a number, and a date sent with a time', () => {
    expect(message({ id: 'phone', type: 'phone' }, 5551234)).toEqual(['must be a string (send "5551234")']);
    expect(message({ id: 'day', type: 'date' }, '2026-03-31T10:00:00Z')).toEqual([
      'must be a date (YYYY-MM-DD) without a time: send "2026-03-31"',
    ]);
  });

  it('keeps the wording for people as it was', () => {
    const details = validateAnswers(
      [{ id: 'ok', type: 'yes_no', title: 'OK', required: false }],
      { ok: 'yes' },
      '/answers',
      'person',
    ).details;
    expect(details).toEqual([{ path: '/answers/ok', message: 'Choose Yes or No.' }]);
  });
});

describe('file_upload blocks (issue 35)', () => {
  it('defaults to one file of 10 MB of any type, and checks each setting', () => {
    expect(oneBlock({ type: 'file_upload', title: 'CV' })).toMatchObject({ maxFiles: 1, maxSizeMb: 10 });
    expect(
      oneBlock({ type: 'file_upload', title: 'CV', accept: ['Application/PDF', '.docx', 'image/*'] }).accept,
    ).toEqual(['application/pdf', '.docx', 'image/*']);
    const { details } = normalizeBlocks([
      { type: 'file_upload', title: 'A', maxFiles: 11, maxSizeMb: 101, accept: ['pdf', 'image/'] },
      { type: 'short_text', title: 'B', maxFiles: 2 },
    ]);
    expect(paths(details)).toEqual([
      '/blocks/0/maxFiles',
      '/blocks/0/maxSizeMb',
      '/blocks/0/accept/0',
      '/blocks/0/accept/1',
      '/blocks/1/maxFiles',
    ]);
  });

  it('takes upload ids as a list, and a single id when maxFiles is 1; stores a list', () => {
    const one = oneBlock({ type: 'file_upload', title: 'CV' });
    const many = oneBlock({ type: 'file_upload', title: 'Photos', maxFiles: 2 });
    const id = 'upl_0123456789ABCDEFGHIJKL';
    const id2 = 'upl_0123456789ABCDEFGHIJKM';
    expect(validateAnswers([one], { [one.id]: id }).stored).toEqual({ [one.id]: [id] });
    expect(validateAnswers([many], { [many.id]: [id, id2] }).stored).toEqual({ [many.id]: [id, id2] });
    for (const bad of ['upl_short', [id, id2], ['../etc/passwd'], 42]) {
      expect(paths(validateAnswers([one], { [one.id]: bad }).details)).toEqual([`/answers/${one.id}`]);
    }
    expect(paths(validateAnswers([many], { [many.id]: id }).details)).toEqual([`/answers/${many.id}`]);
    expect(paths(validateAnswers([many], { [many.id]: [id, id] }).details)).toEqual([`/answers/${many.id}`]);
    expect(validateAnswers([many], { [many.id]: 'x' }).hint).toMatch(/create_upload/);
  });
});

/**
 * The condition language's cases, shared by its unit spec (src/forms/conditions/conditions.spec.ts:
 * the evaluator) and by the response filters' e2e spec (the same cases through the SQL translation,
 * against PostgreSQL): one list, so logic and filters are held to the same table.
 */
import type { BlockSubject, Operator } from '../../src/forms/conditions';

/** One block of every type, with the refs the conditions use. */
export const BLOCKS: BlockSubject[] = [
  { id: 'b_short', type: 'short_text', title: 'Short', ref: 'short' },
  { id: 'b_long', type: 'long_text', title: 'Long', ref: 'long' },
  { id: 'b_email', type: 'email', title: 'Email', ref: 'email' },
  { id: 'b_url', type: 'url', title: 'Url', ref: 'url' },
  { id: 'b_phone', type: 'phone', title: 'Phone', ref: 'phone' },
  { id: 'b_number', type: 'number', title: 'Number', ref: 'number' },
  { id: 'b_rating', type: 'rating', title: 'Rating', ref: 'rating' },
  { id: 'b_scale', type: 'linear_scale', title: 'Scale', ref: 'scale' },
  { id: 'b_date', type: 'date', title: 'Date', ref: 'date' },
  {
    id: 'b_mc',
    type: 'multiple_choice',
    title: 'Colour',
    ref: 'colour',
    choices: [
      { id: 'c_red', label: 'Red' },
      { id: 'c_blue', label: 'Blue' },
    ],
  },
  {
    id: 'b_dd',
    type: 'dropdown',
    title: 'Size',
    ref: 'size',
    choices: [
      { id: 'c_s', label: 'Small' },
      { id: 'c_l', label: 'Large' },
    ],
  },
  {
    id: 'b_cb',
    type: 'checkboxes',
    title: 'Pets',
    ref: 'pets',
    choices: [
      { id: 'c_cat', label: 'Cat' },
      { id: 'c_dog', label: 'Dog' },
      { id: 'c_fish', label: 'Fish' },
    ],
  },
  { id: 'b_yn', type: 'yes_no', title: 'Agree', ref: 'agree' },
  { id: 'b_file', type: 'file_upload', title: 'CV', ref: 'cv' },
  { id: 'b_nps', type: 'nps', title: 'NPS', ref: 'nps' },
  {
    id: 'b_rank',
    type: 'ranking',
    title: 'Rank',
    ref: 'rank',
    choices: [
      { id: 'c_price', label: 'Price' },
      { id: 'c_speed', label: 'Speed' },
      { id: 'c_care', label: 'Care' },
    ],
  },
  ...(['grid', 'tags'] as const).map((ref) => ({
    id: `b_${ref}`,
    type: 'matrix',
    title: ref,
    ref,
    rows: [
      { id: 'r_price', label: 'Price' },
      { id: 'r_speed', label: 'Speed' },
    ],
    columns: [
      { id: 'k_good', label: 'Good' },
      { id: 'k_bad', label: 'Bad' },
    ],
    ...(ref === 'tags' ? { multiple: true } : {}),
  })),
  { id: 'b_st', type: 'statement', title: 'Hello', ref: 'hello' },
  { id: 'b_pb', type: 'page_break', title: 'Page 2', ref: 'page2' },
];

/**
 * Per kind: a sample answer (as stored), and for each operator it takes, a value (as sent) with
 * whether the condition holds on the sample.
 */
export const CASES: Record<string, { answer: unknown; ops: Partial<Record<Operator, Array<[unknown, boolean]>>> }> = {
  text: {
    answer: 'Hello World',
    ops: {
      equals: [
        ['Hello World', true],
        ['hello world', false],
      ],
      not_equals: [
        ['Hello World', false],
        ['Bye', true],
      ],
      in: [
        [['x', 'Hello World'], true],
        [['x'], false],
      ],
      contains: [
        ['WORLD', true],
        ['moon', false],
      ],
      not_contains: [
        ['world', false],
        ['moon', true],
      ],
      answered: [[undefined, true]],
      not_answered: [[undefined, false]],
    },
  },
  number: {
    answer: 4,
    ops: {
      equals: [
        [4, true],
        [5, false],
      ],
      not_equals: [
        [4, false],
        [5, true],
      ],
      in: [
        [[3, 4], true],
        [[5], false],
      ],
      gt: [
        [3, true],
        [4, false],
      ],
      gte: [
        [4, true],
        [5, false],
      ],
      lt: [
        [5, true],
        [4, false],
      ],
      lte: [
        [4, true],
        [3, false],
      ],
      answered: [[undefined, true]],
      not_answered: [[undefined, false]],
    },
  },
  date: {
    answer: '2026-03-31',
    ops: {
      equals: [
        ['2026-03-31', true],
        ['2026-04-01', false],
      ],
      not_equals: [
        ['2026-03-31', false],
        ['2026-04-01', true],
      ],
      in: [
        [['2026-03-31'], true],
        [['2025-01-01'], false],
      ],
      gt: [
        ['2026-03-30', true],
        ['2026-03-31', false],
      ],
      gte: [
        ['2026-03-31', true],
        ['2026-04-01', false],
      ],
      lt: [
        ['2026-04-01', true],
        ['2026-03-31', false],
      ],
      lte: [
        ['2026-03-31', true],
        ['2026-03-30', false],
      ],
      answered: [[undefined, true]],
      not_answered: [[undefined, false]],
    },
  },
  boolean: {
    answer: false,
    ops: {
      equals: [
        [false, true],
        [true, false],
      ],
      not_equals: [
        [true, true],
        [false, false],
      ],
      answered: [[undefined, true]],
      not_answered: [[undefined, false]],
    },
  },
  // file_upload: whether a file was given, nothing else (no value comparisons).
  files: {
    answer: ['upl_0123456789ABCDEFGHIJKL'],
    ops: { answered: [[undefined, true]], not_answered: [[undefined, false]] },
  },
};

/** A block of each kind the generic cases apply to, with a stored sample of the right type. */
export const GENERIC: Array<[string, string, unknown?]> = [
  ['short', 'text'],
  ['long', 'text'],
  ['email', 'text'],
  ['url', 'text'],
  ['phone', 'text'],
  ['number', 'number'],
  ['rating', 'number'],
  ['scale', 'number'],
  ['date', 'date'],
  ['agree', 'boolean'],
  ['cv', 'files'],
  ['nps', 'number'],
  ['rank', 'files'],
];

/** A condition (as sent: blocks by ref, choices by label or id), a row (answers as stored, by block id), and whether it holds. */
export interface RowCase {
  where: Record<string, unknown>;
  answers: Record<string, unknown>;
  hidden?: Record<string, unknown>;
  expected: boolean;
}

const idOf = (ref: string) => BLOCKS.find((b) => b.ref === ref)!.id;
const leaf = (key: 'block' | 'hidden', name: string, op: string, value: unknown) =>
  value === undefined ? { [key]: name, op } : { [key]: name, op, value };

/**
 * Every case above as rows: each operator of each kind on its sample, on a block not answered
 * (absent, null, "" or [] as stored) and on a value of another type, on hidden fields, choices,
 * checkboxes, case-insensitive contains and the combinators.
 */
export function rowCases(): RowCase[] {
  const out: RowCase[] = [];
  const missing: unknown[] = [undefined, null, '', []];
  for (const [ref, kind] of GENERIC) {
    for (const [op, rows] of Object.entries(CASES[kind].ops)) {
      for (const [value, expected] of rows!) {
        const where = leaf('block', ref, op, value);
        out.push({ where, answers: { [idOf(ref)]: CASES[kind].answer }, expected });
        for (const m of missing)
          out.push({ where, answers: m === undefined ? {} : { [idOf(ref)]: m }, expected: op === 'not_answered' });
        // A stored value of another type (data from before a block was retyped): no order, no equality.
        const other = typeof CASES[kind].answer === 'string' ? 4 : 'Hello World';
        out.push({
          where,
          answers: { [idOf(ref)]: other },
          expected: ['answered', 'not_equals', 'not_contains'].includes(op),
        });
      }
    }
  }
  for (const [op, rows] of Object.entries(CASES.text.ops)) {
    for (const [value, expected] of rows!) {
      const where = leaf('hidden', 'source', op, value);
      out.push({ where, answers: {}, hidden: { source: CASES.text.answer }, expected });
      for (const hidden of [{}, { source: '' }, { other: 'Hello World' }])
        out.push({ where, answers: {}, hidden, expected: op === 'not_answered' });
    }
  }
  // A ranking's choice: its place (1 first) as a number; not ranked (or no ranking) is not answered.
  for (const [op, value, place, expected] of [
    ['lte', 2, 2, true],
    ['lte', 1, 2, false],
    ['equals', 3, 3, true],
    ['gt', 1, 1, false],
    ['in', [1, 3], 3, true],
    ['not_equals', 1, 2, true],
    ['answered', undefined, 1, true],
  ] as const) {
    const others = ['c_speed', 'c_care'];
    const answer = [...others.slice(0, place - 1), 'c_price', ...others.slice(place - 1)];
    const where = { ...leaf('block', 'rank', op, value), choice: 'Price' };
    out.push({ where, answers: { b_rank: answer }, expected });
    out.push({ where, answers: { b_rank: ['c_speed', 'c_care'] }, expected: false });
    out.push({ where, answers: {}, expected: false });
  }
  // A matrix's row: as a single choice (grid) or checkboxes (tags, multiple); a row not answered is not answered.
  const grid = { b_grid: { r_price: 'k_good' }, b_tags: { r_price: ['k_good', 'k_bad'] } };
  for (const [ref, row, op, value, expected] of [
    ['grid', 'Price', 'equals', 'Good', true],
    ['grid', 'Price', 'equals', 'Bad', false],
    ['grid', 'Price', 'not_equals', 'Bad', true],
    ['grid', 'Price', 'in', ['Bad', 'Good'], true],
    ['grid', 'Price', 'in', ['Bad'], false],
    ['grid', 'Price', 'answered', undefined, true],
    ['grid', 'Speed', 'answered', undefined, false],
    ['grid', 'Speed', 'not_answered', undefined, true],
    ['tags', 'Price', 'contains', 'Bad', true],
    ['tags', 'Price', 'not_contains', 'Good', false],
    ['tags', 'Price', 'equals', ['Bad', 'Good'], true],
    ['tags', 'Price', 'equals', ['Good'], false],
    ['tags', 'Price', 'in', ['Bad'], true],
    ['tags', 'Speed', 'contains', 'Bad', false],
  ] as const) {
    const where = { ...leaf('block', ref, op, value), row };
    out.push({ where, answers: grid, expected });
    out.push({ where, answers: {}, expected: op === 'not_answered' });
  }
  for (const ref of ['colour', 'size']) {
    const block = BLOCKS.find((b) => b.ref === ref)!;
    const [first, second] = block.choices!;
    const answers = { [block.id]: first.id };
    const rows: Array<[string, unknown, boolean]> = [
      ['equals', first.label, true],
      ['equals', second.label, false],
      ['not_equals', second.label, true],
      ['not_equals', first.id, false],
      ['in', [second.label, first.id], true],
      ['in', [second.label], false],
      ['answered', undefined, true],
      ['not_answered', undefined, false],
    ];
    for (const [op, value, expected] of rows) {
      out.push({ where: leaf('block', ref, op, value), answers, expected });
      out.push({ where: leaf('block', ref, op, value), answers: {}, expected: op === 'not_answered' });
    }
  }
  const pets = { b_cb: ['c_cat', 'c_dog'] };
  const petRows: Array<[string, unknown, boolean]> = [
    ['contains', 'Cat', true],
    ['contains', 'c_fish', false],
    ['not_contains', 'Fish', true],
    ['not_contains', 'Dog', false],
    ['equals', ['Dog', 'Cat'], true],
    ['equals', ['Cat'], false],
    ['equals', ['Cat', 'Dog', 'Fish'], false],
    ['not_equals', ['Cat'], true],
    ['not_equals', ['c_cat', 'c_dog'], false],
    ['in', ['Fish', 'Dog'], true],
    ['in', ['Fish'], false],
    ['answered', undefined, true],
    ['not_answered', undefined, false],
  ];
  for (const [op, value, expected] of petRows) {
    out.push({ where: leaf('block', 'pets', op, value), answers: pets, expected });
    for (const m of missing)
      out.push({
        where: leaf('block', 'pets', op, value),
        answers: m === undefined ? {} : { b_cb: m },
        expected: op === 'not_answered',
      });
  }
  out.push(
    { where: { block: 'short', op: 'contains', value: 'ÉCOLE' }, answers: { b_short: 'Une école' }, expected: true },
    { where: { block: 'short', op: 'not_contains', value: 'ecole' }, answers: { b_short: 'ECOLE' }, expected: false },
    // Beyond ASCII, one folding on both sides (foldCase): each code point lowercased on its own,
    // Greek final sigma as sigma; no letter becomes two, no normalization.
    ...foldingCases(),
    { where: { block: 'short', op: 'contains', value: '%_' }, answers: { b_short: 'a%_b' }, expected: true },
    { where: { block: 'short', op: 'contains', value: '%' }, answers: { b_short: 'ab' }, expected: false },
    { where: { not: { block: 'short', op: 'equals', value: 'x' } }, answers: {}, expected: true },
    { where: { not: { block: 'short', op: 'equals', value: 'x' } }, answers: { b_short: 'x' }, expected: false },
  );
  const both = [
    { block: 'agree', op: 'equals', value: true },
    { hidden: 'source', op: 'equals', value: 'ad' },
  ];
  out.push(
    { where: { all: both }, answers: { b_yn: true }, hidden: { source: 'ad' }, expected: true },
    { where: { all: both }, answers: { b_yn: true }, hidden: { source: 'mail' }, expected: false },
    { where: { any: both }, answers: { b_yn: false }, hidden: { source: 'ad' }, expected: true },
    { where: { any: both }, answers: {}, hidden: {}, expected: false },
    {
      where: { all: [{ any: both }, { not: both[0] }] },
      answers: { b_yn: false },
      hidden: { source: 'ad' },
      expected: true,
    },
  );
  return out;
}

/** contains and not_contains beyond ASCII: [answer, value, whether the answer contains the value]. */
export const FOLDING: Array<[string, string, boolean]> = [
  // Greek: a final sigma is a sigma, in the answer and in the value.
  ['ΣΑΣ', 'σας', true],
  ['σας', 'ΣΑΣ', true],
  ['Η ΟΔΟΣ ΣΑΣ', 'οδοσ', true],
  ['ευχαριστώ σας', 'ΣΑΣ', true],
  ['Ὀδυσσεύς', 'ΟΔΥΣΣΕΥΣ', false], // the accents differ
  // German: ẞ is ß; ß is not ss (no letter becomes two).
  ['STRAẞE', 'straße', true],
  ['Straße', 'STRAẞE', true],
  ['Straße', 'strasse', false],
  ['STRASSE', 'ß', false],
  // Turkish: İ is i, I is i; ı stays ı.
  ['İSTANBUL', 'istanbul', true],
  ['istanbul', 'İST', true],
  ['ILIK', 'ılık', false],
  ['ılık', 'ILIK', false],
  ['Iğdır', 'ığdır', false],
  // Accents: case folds, accents stay, and a precomposed é is not e + U+0301.
  ['ÉCOLE ÀÇÑ', 'école àçñ', true],
  ['Ørsted Æble Œuvre', 'øRSTED æBLE œUVRE', true],
  ['école', 'ecole', false],
  ['e\u0301cole', 'école', false],
  // Cyrillic, Armenian, Deseret (beyond the BMP).
  ['ПРИВЕТ МИР', 'привет', true],
  ['ԲԱՐԵՎ', 'բարև', false], // և is one letter of its own
  ['ԲԱՐԵՎ', 'բարեվ', true],
  ['𐐀𐐁', '𐐨𐐩', true],
  // Emoji and symbols: no case, compared as they are.
  ['ok 👍🏽 thanks', '👍🏽', true],
  ['ok 👍🏽', '👍🏿', false],
  ['I ❤️ NY', '❤️ ny', true],
  ['µ-Wert', 'μ-WERT', true], // the micro sign is mu
  ['ſtraße', 'STRASSE', false],
];

/** The FOLDING cases as rows: contains and not_contains, on a text block and on a hidden field. */
function foldingCases(): RowCase[] {
  return FOLDING.flatMap(([answer, value, expected]) => [
    { where: { block: 'short', op: 'contains', value }, answers: { b_short: answer }, expected },
    { where: { block: 'long', op: 'not_contains', value }, answers: { b_long: answer }, expected: !expected },
    { where: { hidden: 'source', op: 'contains', value }, answers: {}, hidden: { source: answer }, expected },
  ]);
}

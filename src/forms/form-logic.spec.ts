import { Block, BlockInput } from './blocks';
import { blocksView, normalizeForm, validateResponse, walk } from './form-logic';

/** A form as saved from `input` (which must be valid). */
function form(input: BlockInput[], hiddenFields: string[] = []): Block[] {
  const { blocks, details } = normalizeForm(input, [], hiddenFields);
  expect(details).toEqual([]);
  return blocks;
}
/** The refs of the blocks `walk` shows for these answers (by ref) and hidden values. */
function shownRefs(blocks: Block[], answers: Record<string, unknown>, hidden: Record<string, string> = {}): string[] {
  const id = (ref: string) => blocks.find((b) => b.ref === ref)?.id ?? ref;
  const byId = Object.fromEntries(Object.entries(answers).map(([k, v]) => [id(k), v]));
  const path = walk(
    blocks,
    (b) => byId[b],
    (n) => hidden[n],
  );
  return blocks.filter((b) => path.shown.has(b.id)).map((b) => b.ref ?? b.id);
}

const yes = (ref: string) => ({ block: ref, op: 'equals', value: true });

describe('walk: the path of a response', () => {
  const THREE_PAGES: BlockInput[] = [
    { ref: 'a', type: 'yes_no', title: 'A' },
    { ref: 'p2', type: 'page_break', jumps: [{ if: { block: 'a', op: 'equals', value: false }, to: 'p3' }] },
    { ref: 'b', type: 'yes_no', title: 'B' },
    { ref: 'p3', type: 'page_break', showIf: { block: 'b', op: 'not_answered' } },
    { ref: 'c', type: 'short_text', title: 'C' },
    { ref: 'p4', type: 'page_break', title: 'Last' },
    { ref: 'd', type: 'short_text', title: 'D', showIf: { hidden: 'src', op: 'contains', value: 'ad' } },
  ];

  it('without rules, every block is shown', () => {
    const blocks = form([
      { ref: 'a', type: 'short_text', title: 'A' },
      { ref: 'p', type: 'page_break' },
      { ref: 'b', type: 'statement', title: 'B' },
    ]);
    expect(shownRefs(blocks, {})).toEqual(['a', 'p', 'b']);
  });

  it('the next page follows when no jump holds; a jump goes over the pages between', () => {
    const blocks = form(THREE_PAGES, ['src']);
    expect(shownRefs(blocks, { a: true })).toEqual(['a', 'p2', 'b', 'p3', 'c', 'p4']);
    expect(shownRefs(blocks, { a: false })).toEqual(['a', 'p3', 'c', 'p4']);
  });

  it('a page whose page_break showIf fails is skipped, and Next goes on to the next shown page', () => {
    const blocks = form(THREE_PAGES, ['src']);
    expect(shownRefs(blocks, { a: true, b: true })).toEqual(['a', 'p2', 'b', 'p4']);
  });

  it('a jump that lands on a hidden page goes on to the next shown one', () => {
    const blocks = form([
      { ref: 'a', type: 'yes_no', title: 'A' },
      { ref: 'p2', type: 'page_break', jumps: [{ if: yes('a'), to: 'p3' }] },
      { ref: 'b', type: 'short_text', title: 'B' },
      { ref: 'p3', type: 'page_break', showIf: { block: 'b', op: 'answered' } },
      { ref: 'c', type: 'short_text', title: 'C' },
      { ref: 'p4', type: 'page_break' },
      { ref: 'd', type: 'short_text', title: 'D' },
    ]);
    expect(shownRefs(blocks, { a: true })).toEqual(['a', 'p4', 'd']);
  });

  it('a jump to end finishes the form; the first jump that holds wins', () => {
    const blocks = form([
      { ref: 'a', type: 'number', title: 'A' },
      {
        ref: 'p2',
        type: 'page_break',
        jumps: [
          { if: { block: 'a', op: 'gt', value: 10 }, to: 'end' },
          { if: { block: 'a', op: 'gt', value: 5 }, to: 'p3' },
        ],
      },
      { ref: 'b', type: 'short_text', title: 'B' },
      { ref: 'p3', type: 'page_break' },
      { ref: 'c', type: 'short_text', title: 'C' },
    ]);
    expect(shownRefs(blocks, { a: 11 })).toEqual(['a']);
    expect(shownRefs(blocks, { a: 6 })).toEqual(['a', 'p3', 'c']);
    expect(shownRefs(blocks, { a: 1 })).toEqual(['a', 'p2', 'b', 'p3', 'c']);
    expect(shownRefs(blocks, {})).toEqual(['a', 'p2', 'b', 'p3', 'c']);
  });

  it('showIf on a block sees the blocks before it on the same page; a hidden block counts as not answered', () => {
    const blocks = form(
      [
        { ref: 'colour', type: 'multiple_choice', title: 'Colour', choices: ['Red', 'Other'] },
        {
          ref: 'other',
          type: 'short_text',
          title: 'Which?',
          showIf: { block: 'colour', op: 'equals', value: 'Other' },
        },
        { ref: 'why', type: 'short_text', title: 'Why?', showIf: { block: 'other', op: 'not_answered' } },
        { ref: 'd', type: 'short_text', title: 'D', showIf: { hidden: 'src', op: 'contains', value: 'AD' } },
      ],
      ['src'],
    );
    const other = blocks[0].choices![1].id;
    expect(shownRefs(blocks, { colour: other, other: 'Teal' })).toEqual(['colour', 'other']);
    // "other" answered but not shown: not answered for the rules after it.
    expect(shownRefs(blocks, { colour: blocks[0].choices![0].id, other: 'Teal' })).toEqual(['colour', 'why']);
    expect(shownRefs(blocks, {}, { src: 'google-ads' })).toEqual(['colour', 'why', 'd']);
  });
});

describe('validateResponse', () => {
  const blocks = form(
    [
      { ref: 'a', type: 'yes_no', title: 'A', required: true },
      { ref: 'b', type: 'short_text', title: 'B', required: true, showIf: yes('a') },
    ],
    ['src'],
  );
  it('drops answers to blocks not shown and ignores unknown hidden names on the respondent page', () => {
    const web = validateResponse(
      { blocks, hiddenFields: ['src'] },
      { a: false, b: 'stale' },
      { utm_source: 'x', src: 'mail' },
      { source: 'web' },
    );
    expect(web.details).toEqual([]);
    expect(web.answers).toEqual({ [blocks[0].id]: false });
    expect(web.hidden).toEqual({ src: 'mail' });
    expect(web.shown).toEqual([blocks[0].id]);
  });
  it('refuses them on the API, at the key the caller used', () => {
    const api = validateResponse({ blocks, hiddenFields: ['src'] }, { a: false, b: 'stale' }, { utm_source: 'x' });
    expect(api.details.map((d) => d.path)).toEqual(['/hidden/utm_source', '/answers/b']);
    expect(api.notShown).toBe('"B" (b) is shown only when {"block":"a","op":"equals","value":true}');
  });

  describe('names each answer as the caller did', () => {
    const survey = form(
      [
        { ref: 'sat', type: 'rating', title: 'Satisfied?', required: true },
        { type: 'short_text', title: 'Name', required: true },
        { ref: 'why', type: 'long_text', title: 'Why?', required: true, showIf: { block: 'sat', op: 'lte', value: 2 } },
      ],
      ['source'],
    );
    const [sat, name] = survey;
    const paths = (answers: Record<string, unknown>, source?: 'web') =>
      validateResponse({ blocks: survey, hiddenFields: ['source'] }, answers, undefined, { source }).details.map(
        (d) => d.path,
      );

    it('by the key sent (ref or id), and a block left out by its ref where it has one, by id else', () => {
      expect(paths({ sat: 9 })).toEqual(['/answers/sat', `/answers/${name.id}`]);
      expect(paths({ [sat.id]: 9, [name.id]: 'Ada' })).toEqual([`/answers/${sat.id}`]);
      expect(paths({ sat: null, [name.id]: 'Ada' })).toEqual(['/answers/sat']);
      expect(paths({})).toEqual(['/answers/sat', `/answers/${name.id}`]);
      // On a form with rules: required on a shown block left out, and an answer not shown.
      expect(paths({ sat: 1, [name.id]: 'Ada' })).toEqual(['/answers/why']);
      expect(paths({ sat: 5, [name.id]: 'Ada', why: 'x' })).toEqual(['/answers/why']);
      expect(paths({ [sat.id]: 5, [name.id]: 'Ada', [survey[2].id]: 'x' })).toEqual([`/answers/${survey[2].id}`]);
    });

    it('by id on the respondent page, whose fields are named by id', () => {
      expect(paths({}, 'web')).toEqual([`/answers/${sat.id}`, `/answers/${name.id}`]);
    });
  });

  describe('an answer that names no block says what was meant', () => {
    const survey = form(
      [
        { ref: 'sat', type: 'rating', title: 'Satisfied?' },
        { ref: 'comment', type: 'long_text', title: 'Anything else?' },
      ],
      ['source'],
    );
    const check = (answers: Record<string, unknown>) => {
      const r = validateResponse({ blocks: survey, hiddenFields: ['source'] }, answers, undefined);
      return { details: r.details, hint: r.hint };
    };

    it('a hidden field sent in answers belongs in hidden', () => {
      expect(check({ sat: 4, source: 'newsletter' })).toEqual({
        details: [
          {
            path: '/answers/source',
            message: 'is a hidden field of this form, not a block: send it in hidden, beside answers',
          },
        ],
        hint: 'Send hidden field values in hidden, beside answers: "hidden": { "source": "newsletter" }.',
      });
    });

    it('a misspelt ref (or hidden field) gets "did you mean"', () => {
      expect(check({ stat: 4 })).toEqual({
        details: [
          { path: '/answers/stat', message: 'this form has no block with this id or ref; did you mean `sat`?' },
        ],
        hint: 'Did you mean `sat`? Answers are keyed by block id or ref, as get_form shows them.',
      });
      expect(check({ Comment: 'Fine' }).details[0].message).toBe(
        'this form has no block with this id or ref; did you mean `comment`?',
      );
      expect(check({ sources: 'x' }).details[0].message).toBe(
        'this form has no block with this id or ref; did you mean the hidden field `source` (send it in hidden, beside answers)?',
      );
    });

    it('a key like none of them lists the refs', () => {
      expect(check({ colour: 'red' })).toEqual({
        details: [{ path: '/answers/colour', message: 'this form has no block with this id or ref' }],
        hint: "Answers are keyed by block id or ref, as get_form shows them (this form's refs: sat, comment).",
      });
    });

    it('the page keeps its own wording', () => {
      const r = validateResponse({ blocks: survey, hiddenFields: ['source'] }, { source: 'x' }, undefined, {
        wording: 'person',
        source: 'web',
      });
      expect(r.details).toEqual([{ path: '/answers/source', message: 'This form has no question with this id.' }]);
      expect(r.hint).toBeUndefined();
    });
  });
});

describe('blocksView', () => {
  it('names blocks in rules by ref where they have one, by id otherwise', () => {
    const blocks = form([
      { type: 'yes_no', title: 'No ref' },
      { ref: 'a', type: 'yes_no', title: 'A' },
      { type: 'page_break', jumps: [{ if: { all: [yes('a')] }, to: 'end' }] },
    ]);
    const view = blocksView(blocks);
    expect(view[2]).toEqual({
      id: blocks[2].id,
      type: 'page_break',
      required: false,
      jumps: [{ if: { all: [{ block: 'a', op: 'equals', value: true }] }, to: 'end' }],
    });
    const noRef = blocks[0].id;
    const again = normalizeForm(
      [
        { id: noRef, type: 'yes_no', title: 'No ref' },
        { type: 'short_text', title: 'B', showIf: { block: noRef, op: 'answered' } },
      ],
      blocks,
      [],
    );
    expect(again.details).toEqual([]);
    expect(blocksView(again.blocks)[1].showIf).toEqual({ block: noRef, op: 'answered' });
  });
});

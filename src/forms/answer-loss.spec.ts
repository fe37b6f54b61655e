import { describeLoss, lossCandidates } from './answer-loss';
import type { Block } from './blocks';

const before: Block[] = [
  { id: 'b_intro', type: 'statement', title: 'Hello', required: false },
  { id: 'b_name', type: 'short_text', title: 'Name', required: true },
  {
    id: 'b_colour',
    type: 'multiple_choice',
    title: 'Colour',
    required: false,
    choices: [
      { id: 'c_r', label: 'Red' },
      { id: 'c_g', label: 'Green' },
    ],
  },
  { id: 'b_pets', type: 'checkboxes', title: 'Pets', required: false, choices: [{ id: 'c_cat', label: 'Cat' }] },
];

describe('lossCandidates', () => {
  it('finds nothing when every block and choice keeps its id, whatever is renamed or reordered', () => {
    const after: Block[] = [
      {
        ...before[3],
        title: 'Animals',
        choices: [
          { id: 'c_cat', label: 'Kitten' },
          { id: 'c_new', label: 'Dog' },
        ],
      },
      {
        ...before[2],
        choices: [
          { id: 'c_g', label: 'Verde' },
          { id: 'c_r', label: 'Rojo' },
        ],
      },
      { ...before[1], title: 'Full name', required: false },
      { id: 'b_extra', type: 'date', title: 'When', required: false },
    ];
    expect(lossCandidates(before, after)).toEqual([]);
  });

  it('reports a removed block, a retyped block and a removed choice, with paths into the new list', () => {
    const after: Block[] = [
      { ...before[2], choices: [{ id: 'c_r', label: 'Red' }] },
      { ...before[3], type: 'dropdown' },
    ];
    expect(lossCandidates(before, after)).toEqual([
      { kind: 'block_removed', blockId: 'b_name', blockTitle: 'Name', path: '/blocks' },
      {
        kind: 'choice_removed',
        blockId: 'b_colour',
        blockTitle: 'Colour',
        choiceId: 'c_g',
        choiceLabel: 'Green',
        multiple: false,
        path: '/blocks/0/choices',
      },
      { kind: 'block_retyped', blockId: 'b_pets', blockTitle: 'Pets', path: '/blocks/1/type' },
    ]);
  });

  it('never counts a statement, which holds no answers', () => {
    expect(lossCandidates(before, before.slice(1))).toEqual([]);
  });

  it('marks checkbox choices as multiple (answers hold a list)', () => {
    const after: Block[] = [...before.slice(0, 3), { ...before[3], choices: [{ id: 'c_dog', label: 'Dog' }] }];
    expect(
      lossCandidates(
        before,
        after.map((b) => (b.id === 'b_pets' ? { ...b, choices: [] } : b)),
      )[0],
    ).toMatchObject({ choiceId: 'c_cat', multiple: true });
  });
});

describe('describeLoss', () => {
  it('says what goes and how many answers', () => {
    const [removed] = lossCandidates(before, [before[0], before[2], before[3]]);
    expect(describeLoss(removed, 1)).toBe('removing the block "Name" (b_name) would discard 1 answer');
    expect(describeLoss(removed, 3)).toContain('3 answers');
  });
});

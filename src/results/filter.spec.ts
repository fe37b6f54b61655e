import { OPERATOR_TABLE, SubjectKind } from '../forms/conditions';
import type { FormRecord } from '../forms/forms.service';
import { filterFields, PAGE_OPERATORS, questionsOf, toFilter } from './filter';

const form = {
  hiddenFields: ['source'],
  blocks: [
    { id: 'b_colour', type: 'multiple_choice', title: 'Colour', choices: [{ id: 'c_g', label: 'Green' }] },
    { id: 'b_when', type: 'date', title: 'When' },
    { id: 'b_note', type: 'statement', title: 'Thanks' },
  ],
} as unknown as FormRecord;

const filter = (q: Record<string, string>) => toFilter(form, filterFields(q));

describe('the results pages filter', () => {
  it('offers per kind only conditions the condition language takes for it', () => {
    const foreign = Object.entries(PAGE_OPERATORS).flatMap(([kind, ops]) =>
      ops.filter((op) => !OPERATOR_TABLE[kind as SubjectKind][op]).map((op) => `${kind} ${op}`),
    );
    expect(foreign).toEqual([]);
  });

  it('lists the blocks that take an answer, then the hidden fields', () => {
    expect(questionsOf(form).map((q) => [q.key, q.kind])).toEqual([
      ['b_colour', 'choice'],
      ['b_when', 'date'],
      ['hidden:source', 'text'],
    ]);
  });

  it('makes days that exist into since/until (the last day included), and names the field of one that does not', () => {
    expect(filter({ since: '2026-02-28', until: '2026-02-28' }).filter).toEqual({
      since: '2026-02-28T00:00:00.000Z',
      until: '2026-03-01T00:00:00.000Z',
    });
    expect(filter({ until: '9999-12-31' })).toEqual({ filter: {}, errors: {} });
    for (const day of ['2026-13-45', '0000-00-00', '2026-02-29', '0000-01-01', '26-01-01'])
      expect(Object.keys(filter({ until: day }).errors)).toEqual(['until']);
  });

  it('matches a choice by its label ignoring case; a hidden field as text; a date that exists', () => {
    expect(filter({ block: 'b_colour', op: 'equals', value: ' gREEN ' }).filter.where).toEqual({
      block: 'b_colour',
      op: 'equals',
      value: 'Green',
    });
    expect(filter({ block: 'hidden:source', op: 'in', value: 'a, b' }).filter.where).toEqual({
      hidden: 'source',
      op: 'in',
      value: ['a', 'b'],
    });
    expect(filter({ block: 'b_when', op: 'gt', value: '2026-02-30' }).errors).toEqual({
      value: 'Enter a day for “When” as YYYY-MM-DD.',
    });
  });
});

import type { Block } from './blocks';
import { answerFacts, CAP, checkQuotas, countersOf } from './limits';

describe('caps and quotas (forms/limits.ts)', () => {
  const blocks = [
    {
      id: 'b1',
      ref: 'country',
      type: 'multiple_choice',
      title: 'Country',
      choices: [
        { id: 'c_fr', label: 'France' },
        { id: 'c_de', label: 'Germany' },
      ],
    },
    { id: 'b2', ref: 'age', type: 'number', title: 'Age' },
  ] as unknown as Block[];
  const form = { blocks, hiddenFields: ['source'], compute: { endings: [{ ref: 'sorry', title: 'Sorry' }] } };

  it('stores a quota with its condition by id and its choice by id; onFull defaults to "end"', () => {
    const { quotas, details } = checkQuotas(form, [
      { name: 'France', limit: 10, when: { block: 'country', op: 'equals', value: 'France' } },
      { name: 'Adults', limit: 5, when: { block: 'age', op: 'gte', value: 18 }, onFull: 'ending:sorry' },
    ]);
    expect(details).toEqual([]);
    expect(quotas).toEqual([
      { name: 'France', limit: 10, when: { block: 'b1', op: 'equals', value: 'c_fr' }, onFull: 'end' },
      { name: 'Adults', limit: 5, when: { block: 'b2', op: 'gte', value: 18 }, onFull: 'ending:sorry' },
    ]);
  });

  it('refuses what does not exist at its path, with "did you mean", and a quota of the wrong shape', () => {
    const { quotas, details } = checkQuotas(form, [
      { name: 'A', limit: 1, when: { block: 'contry', op: 'answered' }, onFull: 'ending:sory' },
      { name: 'A', limit: 1, when: { hidden: 'sourse', op: 'equals', value: 'x' } },
      { name: 'B', limit: 0, when: { block: 'age', op: 'answered' }, lmit: 3 } as never,
    ]);
    expect(quotas).toEqual([]);
    expect(details).toEqual([
      { path: '/quotas/0/onFull', message: '"sory" is not an ending of this form; did you mean "sorry"?' },
      { path: '/quotas/0/when/block', message: expect.stringContaining('did you mean "country"?') },
      { path: '/quotas/1/name', message: '"A" names another quota' },
      { path: '/quotas/1/when/hidden', message: expect.stringContaining('did you mean "source"?') },
      { path: '/quotas/2/lmit', message: 'is not a field of a quota; did you mean "limit"?' },
      { path: '/quotas/2/limit', message: 'must be an integer from 1 to 1000000000' },
    ]);
  });

  it('counts a response toward the cap first, then the quotas it matches, in the form order', () => {
    const { quotas } = checkQuotas(form, [
      { name: 'France', limit: 10, when: { block: 'country', op: 'equals', value: 'France' } },
      { name: 'Adults', limit: 5, when: { block: 'age', op: 'gte', value: 18 } },
    ]);
    const fr = answerFacts({ b1: 'c_fr', b2: 30 });
    expect(countersOf({ ...form, maxResponses: 3, quotas }, fr)).toEqual([CAP, 'France', 'Adults']);
    expect(countersOf({ ...form, maxResponses: null, quotas }, answerFacts({ b1: 'c_de', b2: 12 }))).toBeUndefined();
    expect(countersOf({ ...form, maxResponses: 3, quotas: null }, fr)).toEqual([CAP]);
  });
});

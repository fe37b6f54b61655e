import type { Block } from '../forms/blocks';
import { hiddenFromQuery, keepPage, pagesOf, walksPages } from './respondent.steps';

const block = (id: string, type: Block['type'] = 'short_text'): Block => ({ id, type, title: id, required: false });

describe('respondent steps', () => {
  it('splits blocks into pages at page_breaks, the page_break heading its page and never among its blocks', () => {
    const pages = pagesOf([block('a'), block('p2', 'page_break'), block('b'), block('p3', 'page_break')]);
    expect(pages.map((p) => [p.key, p.start?.id, p.blocks.map((b) => b.id)])).toEqual([
      ['', undefined, ['a']],
      ['p2', 'p2', ['b']],
      ['p3', 'p3', []],
    ]);
    // A form that starts with a page_break has no empty page before it.
    expect(pagesOf([block('p1', 'page_break'), block('a')]).map((p) => p.key)).toEqual(['p1']);
  });

  it('walks only forms with pages, rules, hidden fields or partial responses saved (each step saves)', () => {
    expect(walksPages({ blocks: [block('a'), block('b')] })).toBe(false);
    expect(walksPages({ blocks: [block('a')], partialResponses: true })).toBe(true);
    expect(walksPages({ blocks: [block('a')], hiddenFields: ['source'] })).toBe(true);
    expect(walksPages({ blocks: [block('a'), block('p', 'page_break')] })).toBe(true);
  });

  it('takes declared hidden fields from the query and ignores everything else', () => {
    const query = Object.assign(Object.create(null), {
      source: ['newsletter', 'twice'],
      utm_source: 'x',
      campaign: 'a'.repeat(1001),
      empty: '',
    });
    expect(hiddenFromQuery(['source', 'campaign', 'empty', 'constructor'], query)).toEqual({ source: 'newsletter' });
    expect(hiddenFromQuery(['source'], undefined)).toEqual({});
  });

  it('keeps a page’s posted fields and forgets the ones left empty', () => {
    const [page] = pagesOf([block('a'), block('b', 'checkboxes')]);
    expect(keepPage(page, { a: 'old', b: ['x'], z: 'other page' }, { a: 'new', b: [] })).toEqual({
      a: 'new',
      z: 'other page',
    });
  });
});

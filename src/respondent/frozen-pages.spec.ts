import { FrozenPages, STATE_SLOT } from './frozen-pages';

describe('FrozenPages', () => {
  const key = { formId: 'f1', version: 1, page: 'one' as const };
  const draw = (text: string) => async (slot: string) => ({
    html: `<p>${text}</p><i>${slot}</i>`,
    state: { s: [''], r: [] },
  });

  it('draws a page once per key and fills in each request its own state', async () => {
    const pages = new FrozenPages();
    let draws = 0;
    const counted = async (slot: string) => (draws++, draw('A')(slot));
    const a = (await pages.page(key, counted))!;
    const b = (await pages.page(key, counted))!;
    expect(draws).toBe(1);
    expect(FrozenPages.fill(a, 'one.sig')).toBe('<p>A</p><i>one.sig</i>');
    expect(FrozenPages.fill(b, 'two.sig')).toBe('<p>A</p><i>two.sig</i>');
  });

  it('keys by version, plan and language (a new version is drawn afresh)', () => {
    const k = FrozenPages.keyOf(key);
    expect(FrozenPages.keyOf({ ...key, version: 2 })).not.toBe(k);
    expect(FrozenPages.keyOf({ ...key, plan: 'pro' })).not.toBe(k);
    expect(FrozenPages.keyOf({ ...key, language: 'fr' })).not.toBe(k);
  });

  it('keeps nothing for a page that holds the slot other than once', async () => {
    const pages = new FrozenPages();
    const twice = async (slot: string) => ({ html: `${slot}${slot}`, state: { s: [''], r: [] } });
    expect(await pages.page(key, twice)).toBeUndefined();
    expect(pages.size).toBe(0);
    expect(STATE_SLOT).toMatch(/^[A-Za-z0-9-]+$/);
  });

  it('is bounded: the least recently used pages go first', async () => {
    const pages = new FrozenPages(2, 1_000_000);
    for (const v of [1, 2, 3]) await pages.page({ ...key, version: v }, draw(`v${v}`));
    expect(pages.size).toBe(2);
    let drawn = false;
    await pages.page({ ...key, version: 1 }, async (slot) => ((drawn = true), draw('v1')(slot)));
    expect(drawn).toBe(true);
    const small = new FrozenPages(100, 30);
    for (const v of [1, 2, 3]) await small.page({ ...key, version: v }, draw('x'.repeat(5)));
    expect(small.size).toBe(1);
  });
});

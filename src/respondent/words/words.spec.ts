import { parse, type Token } from '@messageformat/parser';
import { CATALOGUES, catalogueLanguage, directionOf, pageWords } from './index';

/** The plural messages' cases in a message, by argument. */
function pluralCases(tokens: Token[], found: Map<string, string[]> = new Map()): Map<string, string[]> {
  for (const token of tokens) {
    if (token.type === 'plural' || token.type === 'selectordinal') {
      found.set(token.arg, [...(found.get(token.arg) ?? []), ...token.cases.map((c) => c.key)]);
      for (const c of token.cases) pluralCases(c.tokens, found);
    }
  }
  return found;
}

describe('the page words catalogues', () => {
  const english = Object.keys(CATALOGUES.en).sort();

  it('ships the ten languages of issue 51', () => {
    expect(Object.keys(CATALOGUES).sort()).toEqual(['ar', 'de', 'en', 'es', 'fr', 'it', 'ja', 'nl', 'pl', 'pt']);
  });

  it.each(Object.keys(CATALOGUES))('%s has every key English has, and no other', (language) => {
    expect(Object.keys(CATALOGUES[language]).sort()).toEqual(english);
  });

  it.each(Object.keys(CATALOGUES))(
    '%s: every message parses, keeps English values, covers its plural forms',
    (language) => {
      // The plural forms counts of 0 to 200 take in the language (French "many" is for millions only).
      const rules = new Intl.PluralRules(language);
      const needed = new Set(Array.from({ length: 201 }, (_, n) => rules.select(n)));
      for (const [key, message] of Object.entries(CATALOGUES[language])) {
        const tokens = parse(message);
        const englishArgs = [...CATALOGUES.en[key as keyof typeof CATALOGUES.en].matchAll(/\{(\w+)\s*[,}]/g)].map(
          (m) => m[1],
        );
        for (const arg of englishArgs) expect({ key, has: message.includes(`{${arg}`) }).toEqual({ key, has: true });
        for (const [arg, cases] of pluralCases(tokens))
          for (const form of needed)
            expect({ key, arg, form, has: cases.includes(form) }).toEqual({ key, arg, form, has: true });
        expect(
          typeof pageWords(language).t(key as never, {
            count: 2,
            max: 2,
            position: 1,
            total: 2,
            mark: '*',
            title: 't',
            name: 'n',
            types: 'x',
            mb: 1,
          }),
        ).toBe('string');
      }
    },
  );

  it('counts follow each language: one problem, two, five', () => {
    expect(pageWords('en').t('problems', { count: 1 })).toBe('There is a problem with your answers');
    expect(pageWords('en').t('problems', { count: 3 })).toBe('There are 3 problems with your answers');
    expect(pageWords('fr').t('problems', { count: 1 })).toBe('Vos réponses comportent 1 problème');
    expect(pageWords('pl').t('problems', { count: 3 })).toBe('W odpowiedziach są 3 problemy');
    expect(pageWords('pl').t('problems', { count: 5 })).toBe('W odpowiedziach jest 5 problemów');
    expect(pageWords('ar').t('problems', { count: 2 })).toBe('توجد مشكلتان في إجاباتك');
  });

  it('a regional tag takes its base language, an unknown one English; Arabic and Hebrew are right to left', () => {
    expect(catalogueLanguage('fr-CA')).toBe('fr');
    expect(catalogueLanguage('pt-BR')).toBe('pt');
    expect(catalogueLanguage('sw')).toBe('en');
    expect(pageWords('fr-CA').t('next')).toBe('Suivant');
    expect(directionOf('ar')).toBe('rtl');
    expect(directionOf('ar-EG')).toBe('rtl');
    expect(directionOf('he')).toBe('rtl');
    expect(directionOf('fr')).toBe('ltr');
    expect(directionOf('az-Arab')).toBe('rtl');
    expect(pageWords('ar').dir).toBe('rtl');
    expect(pageWords('fr').number(1234.5)).toMatch(/^1\s234,5$/);
  });
});

/**
 * The respondent page's own words (issue 51): one catalogue per language shipped, compiled with
 * ICU MessageFormat (@messageformat/core) so counts follow each language's plural rules. A form's
 * language without a catalogue of its own takes its base language's ("fr-CA" → fr), else English.
 */
import MessageFormat from '@messageformat/core';
import { ar } from './ar';
import { de } from './de';
import { en, type Catalogue, type PageWordKey } from './en';
import { es } from './es';
import { fr } from './fr';
import { it } from './it';
import { ja } from './ja';
import { nl } from './nl';
import { pl } from './pl';
import { pt } from './pt';

export type { PageWordKey } from './en';

/** Every catalogue shipped, by language subtag. */
export const CATALOGUES: Record<string, Catalogue> = { en, fr, de, es, pt, it, nl, pl, ja, ar };

type Values = Record<string, string | number>;

/** The page's words in one language: `t('next')`, `t('problems', { count: 2 })`. */
export interface PageWords {
  /** The BCP 47 tag the page is in (for `<html lang>`). */
  lang: string;
  dir: 'ltr' | 'rtl';
  t(key: PageWordKey, values?: Values): string;
  /** A number as the language writes it (1 234,5 in French). */
  number(n: number): string;
}

/** The catalogue's language for a tag: itself, its base language, else English. */
export function catalogueLanguage(tag: string): string {
  const lower = tag.toLowerCase();
  if (CATALOGUES[lower]) return lower;
  const base = lower.split('-')[0];
  return CATALOGUES[base] ? base : 'en';
}

/** Languages written right to left, by language subtag; a script subtag (…-Arab, …-Hebr) says so too. */
const RTL_LANGUAGES = new Set(['ar', 'arc', 'ckb', 'dv', 'fa', 'he', 'iw', 'ks', 'ps', 'sd', 'ug', 'ur', 'yi']);
const RTL_SCRIPTS = new Set(['arab', 'hebr', 'thaa', 'syrc', 'nkoo', 'adlm', 'rohg', 'mand', 'samr']);

export function directionOf(tag: string): 'ltr' | 'rtl' {
  const parts = tag.toLowerCase().split('-');
  const script = parts.find((p, i) => i > 0 && p.length === 4);
  if (script) return RTL_SCRIPTS.has(script) ? 'rtl' : 'ltr';
  return RTL_LANGUAGES.has(parts[0]) ? 'rtl' : 'ltr';
}

const compiled = new Map<string, PageWords>();

/** The page's words for a language tag (compiled once per tag). */
export function pageWords(tag = 'en'): PageWords {
  const hit = compiled.get(tag);
  if (hit) return hit;
  const language = catalogueLanguage(tag);
  const catalogue = CATALOGUES[language];
  const mf = new MessageFormat(language);
  const messages = new Map<PageWordKey, (values?: Values) => string>();
  let numbers: Intl.NumberFormat;
  try {
    numbers = new Intl.NumberFormat(tag);
  } catch {
    numbers = new Intl.NumberFormat(language);
  }
  const words: PageWords = {
    lang: tag,
    dir: directionOf(tag),
    t(key, values) {
      let message = messages.get(key);
      if (!message) {
        message = mf.compile(catalogue[key] ?? en[key]) as (values?: Values) => string;
        messages.set(key, message);
      }
      return message(values);
    },
    number: (n) => numbers.format(n),
  };
  compiled.set(tag, words);
  return words;
}

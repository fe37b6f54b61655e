/**
 * A form's languages and translations (issue 51). `languages` are BCP 47 tags, the first the
 * default (the language of the form's own texts). A translation maps text keys to strings:
 *   title, description, thankYou/title, thankYou/message,
 *   blocks/<block id>/title | description | minLabel | maxLabel, blocks/<block id>/choices/<choice id>,
 *   endings/<ref>/title | message.
 * Keys name blocks and choices by id, so renaming a choice in the default language keeps its
 * translations; a key that names something the form no longer has is dropped (pruneTranslations).
 * A text a translation lacks falls back to the default language's.
 */
import type { ErrorDetail } from '../../common/errors/api-error';
import type { Block } from '../blocks';
import type { FormCompute } from '../compute/compute.types';

export type Translations = Record<string, Record<string, string>>;

/** What translating needs of a form. */
export interface Translatable {
  title: string;
  description: string | null;
  blocks: Block[];
  compute: FormCompute | null;
  languages?: string[] | null;
  translations?: Translations | null;
}

/** The most languages a form lists, and the longest tag. */
export const MAX_LANGUAGES = 20;

/** Each text key of a form with its default-language text and the longest translation it takes. */
export function textKeys(form: Translatable): Map<string, { text: string; max: number }> {
  const keys = new Map<string, { text: string; max: number }>();
  const put = (key: string, text: string | null | undefined, max: number) => {
    if (text) keys.set(key, { text, max });
  };
  put('title', form.title, 500);
  put('description', form.description, 5000);
  for (const b of form.blocks) {
    put(`blocks/${b.id}/title`, b.title, 1000);
    put(`blocks/${b.id}/description`, b.description, 5000);
    put(`blocks/${b.id}/minLabel`, b.minLabel, 100);
    put(`blocks/${b.id}/maxLabel`, b.maxLabel, 100);
    for (const c of b.choices ?? []) put(`blocks/${b.id}/choices/${c.id}`, c.label, 500);
  }
  for (const e of form.compute?.endings ?? []) {
    put(`endings/${e.ref}/title`, e.title, 500);
    put(`endings/${e.ref}/message`, e.message, 5000);
  }
  put('thankYou/title', form.compute?.thankYou?.title, 500);
  put('thankYou/message', form.compute?.thankYou?.message, 5000);
  return keys;
}

/** A tag as BCP 47 writes it ("fr-ca" → "fr-CA"), or undefined when it is not one. */
export function canonicalTag(tag: string): string | undefined {
  if (tag.length > 35) return undefined;
  try {
    return Intl.getCanonicalLocales(tag)[0];
  } catch {
    return undefined;
  }
}

/** The problems of a `languages` list, at /languages/<i>: bad tags, the same language twice, too many. */
export function checkLanguages(
  languages: string[],
  path = '/languages',
): { languages: string[]; details: ErrorDetail[] } {
  const details: ErrorDetail[] = [];
  const tags: string[] = [];
  languages.forEach((tag, i) => {
    const canonical = canonicalTag(tag);
    if (!canonical)
      details.push({ path: `${path}/${i}`, message: `"${tag}" is not a BCP 47 language tag (e.g. "en", "fr-CA")` });
    else if (tags.includes(canonical)) details.push({ path: `${path}/${i}`, message: `${canonical} is listed twice` });
    else tags.push(canonical);
  });
  if (languages.length > MAX_LANGUAGES) details.push({ path, message: `at most ${MAX_LANGUAGES} languages` });
  return { languages: tags, details };
}

/**
 * The problems of one language's texts for set_translation: a language the form does not list (or
 * its default, whose texts are the form's own), a key that names nothing, a text too long.
 */
export function checkTranslation(form: Translatable, language: string, texts: Record<string, string>): ErrorDetail[] {
  const languages = form.languages ?? [];
  const tag = canonicalTag(language);
  if (!tag || !languages.slice(1).includes(tag))
    return [
      {
        path: '/language',
        message: !tag
          ? `"${language}" is not a BCP 47 language tag`
          : languages[0] === tag
            ? `${tag} is the form's default language: its texts are the form's own (update_form)`
            : `the form does not list ${tag} (update_form sets languages)`,
      },
    ];
  const keys = textKeys(form);
  const details: ErrorDetail[] = [];
  for (const [key, text] of Object.entries(texts)) {
    const target = keys.get(key);
    const path = `/texts/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (!target) details.push({ path, message: 'names no text of the form' });
    else if (text.length > target.max) details.push({ path, message: `must be at most ${target.max} characters` });
  }
  return details;
}

/** A form's translations with only the languages it lists (not its default) and the keys that still name a text. */
export function pruneTranslations(form: Translatable): { translations: Translations; dropped: string[] } {
  const keys = textKeys(form);
  const listed = (form.languages ?? []).slice(1);
  const translations: Translations = {};
  const dropped: string[] = [];
  for (const [language, texts] of Object.entries(form.translations ?? {})) {
    if (!listed.includes(language)) {
      dropped.push(...Object.keys(texts).map((k) => `${language}:${k}`));
      continue;
    }
    translations[language] = {};
    for (const [key, text] of Object.entries(texts)) {
      if (keys.has(key)) translations[language][key] = text;
      else dropped.push(`${language}:${key}`);
    }
  }
  return { translations, dropped };
}

/**
 * The form in one of its languages: every text with a translation in it replaced, the others left
 * in the default language, and the keys that fell back (`missing`). The default language (or one
 * the form does not list) answers the form as it is.
 */
export function translate<F extends Translatable>(form: F, language: string): { form: F; missing: string[] } {
  const texts = form.translations?.[language];
  if (!texts || language === form.languages?.[0]) return { form, missing: [] };
  const missing = [...textKeys(form).keys()].filter((k) => texts[k] === undefined);
  const t = (key: string, text: string) => texts[key] ?? text;
  const tn = (key: string, text: string | null | undefined) => (text ? t(key, text) : text);
  const blocks = form.blocks.map((b) => ({
    ...b,
    title: t(`blocks/${b.id}/title`, b.title),
    ...(b.description ? { description: t(`blocks/${b.id}/description`, b.description) } : {}),
    ...(b.minLabel !== undefined ? { minLabel: t(`blocks/${b.id}/minLabel`, b.minLabel) } : {}),
    ...(b.maxLabel !== undefined ? { maxLabel: t(`blocks/${b.id}/maxLabel`, b.maxLabel) } : {}),
    ...(b.choices
      ? { choices: b.choices.map((c) => ({ ...c, label: t(`blocks/${b.id}/choices/${c.id}`, c.label) })) }
      : {}),
  }));
  const compute = form.compute && {
    ...form.compute,
    ...(form.compute.endings
      ? {
          endings: form.compute.endings.map((e) => ({
            ...e,
            title: t(`endings/${e.ref}/title`, e.title),
            ...(e.message ? { message: t(`endings/${e.ref}/message`, e.message) } : {}),
          })),
        }
      : {}),
    ...(form.compute.thankYou
      ? {
          thankYou: {
            ...form.compute.thankYou,
            title: tn('thankYou/title', form.compute.thankYou.title) ?? undefined,
            message: tn('thankYou/message', form.compute.thankYou.message) ?? undefined,
          },
        }
      : {}),
  };
  return {
    form: {
      ...form,
      title: t('title', form.title),
      description: tn('description', form.description) ?? null,
      blocks,
      compute,
    },
    missing,
  };
}

/**
 * The form's language for a respondent: `?lang=` when the form lists it (or its base language
 * matches one), else the best match of Accept-Language, else the default. Undefined for a form
 * with no languages.
 */
export function chooseLanguage(languages: string[], asked: string | undefined, acceptLanguage: string | undefined) {
  if (!languages.length) return undefined;
  const match = (tag: string) => {
    const lower = tag.toLowerCase();
    return (
      languages.find((l) => l.toLowerCase() === lower) ??
      languages.find((l) => l.toLowerCase().split('-')[0] === lower.split('-')[0])
    );
  };
  if (asked) {
    const hit = match(asked);
    if (hit) return hit;
  }
  const ranked = (acceptLanguage ?? '')
    .split(',')
    .map((part, i) => {
      const [tag, ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return { tag: tag.trim(), q: q === undefined ? 1 : Number(q), i };
    })
    .filter((r) => r.tag && r.tag !== '*' && r.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  for (const r of ranked) {
    const hit = match(r.tag);
    if (hit) return hit;
  }
  return languages[0];
}

import type { ErrorDetail } from '../common/errors/api-error';
import { isStorableText } from '../common/validation/schema-validator';
import type { Block } from '../forms/blocks';
import { hasLogic, MAX_HIDDEN_VALUE, validateResponse } from '../forms/form-logic';
import { answersFromFormPost, RawAnswers } from './respondent.page';

/**
 * The walk through a form of several pages, as plain functions of the form and the answers so
 * far. Which pages and blocks are shown is decided by the forms' one evaluator (validateResponse,
 * which runs walk()), exactly as for a submission, so the page and create_response agree.
 */

/** One page: the blocks between two page_breaks. `key` is '' for the page before the first page_break, else that page_break's id. */
export interface Page {
  key: string;
  start?: Block;
  blocks: Block[];
}

/** A form that needs the page walk: pages, rules or hidden fields. Any other form is one page, drawn as it always was. */
export function walksPages(form: { blocks: Block[]; hiddenFields?: string[] | null }): boolean {
  return (
    form.blocks.some((b) => b.type === 'page_break') || hasLogic(form.blocks) || (form.hiddenFields?.length ?? 0) > 0
  );
}

const pagesCache = new WeakMap<Block[], Page[]>();
export function pagesOf(blocks: Block[]): Page[] {
  let pages = pagesCache.get(blocks);
  if (!pages) {
    pages = [];
    let current: Page | undefined;
    for (const b of blocks) {
      if (b.type === 'page_break') {
        current = { key: b.id, start: b, blocks: [] };
        pages.push(current);
      } else {
        if (!current) {
          current = { key: '', blocks: [] };
          pages.push(current);
        }
        current.blocks.push(b);
      }
    }
    if (!pages.length) pages.push({ key: '', blocks: [] });
    pagesCache.set(blocks, pages);
  }
  return pages;
}

/** Where the answers so far lead: the pages and blocks shown, and the problems of each answer (worded for people). */
export interface Route {
  pages: Page[];
  /** The pages on the path, in order. */
  onPath: Page[];
  isShown: (blockId: string) => boolean;
  details: ErrorDetail[];
  answers: Record<string, unknown>;
}

export function route(
  form: { blocks: Block[]; hiddenFields?: string[] | null },
  raw: RawAnswers,
  hidden: Record<string, string>,
): Route {
  const answers = answersFromFormPost(form.blocks, raw);
  const checked = validateResponse({ blocks: form.blocks, hiddenFields: form.hiddenFields ?? [] }, answers, hidden, {
    wording: 'person',
    source: 'web',
  });
  const shown = checked.shown ? new Set(checked.shown) : undefined;
  const isShown = (id: string) => !shown || shown.has(id);
  const pages = pagesOf(form.blocks);
  const onPath = pages.filter((p) => !p.start || isShown(p.start.id));
  return { pages, onPath, isShown, details: checked.details, answers };
}

/** The blocks of a page that the answers so far show. */
export function shownBlocks(page: Page, r: Route): Block[] {
  return page.blocks.filter((b) => r.isShown(b.id));
}

/** The problems of the answers on one page (blocks shown there only). */
export function pageProblems(page: Page, r: Route): ErrorDetail[] {
  const ids = new Set(shownBlocks(page, r).map((b) => b.id));
  return r.details.filter((d) => ids.has(blockIdOf(d.path)));
}

export function blockIdOf(path: string): string {
  return path
    .replace(/^\/answers\//, '')
    .replace(/~1/g, '/')
    .replace(/~0/g, '~');
}

/** The page after `key` on the path, or undefined when the form ends there (last page, or a jump to end). */
export function nextPage(key: string, r: Route): Page | undefined {
  const at = r.pages.findIndex((p) => p.key === key);
  return r.pages.slice(at + 1).find((p) => r.onPath.includes(p));
}

/** Keeps a page's posted fields in the answers so far: a field left empty (or a box unticked) is no longer answered. */
export function keepPage(page: Page, answers: RawAnswers, posted: RawAnswers): RawAnswers {
  const kept: RawAnswers = { ...answers };
  for (const b of page.blocks) {
    const value = posted[b.id];
    if (value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) delete kept[b.id];
    else kept[b.id] = value;
  }
  return kept;
}

/**
 * The hidden values of a link's query (`/f/{id}?source=newsletter`): declared names only, the
 * first value of a repeated one, and only values that could be stored (a person cannot fix a link,
 * so a value that does not fit is left out rather than refused). Other parameters (utm tags) are ignored.
 */
export function hiddenFromQuery(declared: string[] | null | undefined, query: unknown): Record<string, string> {
  const hidden: Record<string, string> = {};
  if (!query || typeof query !== 'object') return hidden;
  for (const name of declared ?? []) {
    if (!Object.hasOwn(query, name)) continue;
    const raw = (query as Record<string, unknown>)[name];
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (typeof value === 'string' && value !== '' && value.length <= MAX_HIDDEN_VALUE && isStorableText(value))
      hidden[name] = value;
  }
  return hidden;
}

import { ErrorDetail, pointerSegment } from '../common/errors/api-error';
import type { FormCompute } from '../forms/compute';
import { isStorableText } from '../common/validation/schema-validator';
import type { Block } from '../forms/blocks';
import { Condition, namesOf } from '../forms/conditions';
import { hasLogic, MAX_HIDDEN_VALUE, validateResponse } from '../forms/form-logic';
import type { PageState } from './page-state';
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

/**
 * A form that needs the page walk: pages, rules, hidden fields, or partial responses saved as
 * people go (each post of the walk saves). Any other form is one page, drawn as it always was.
 */
export function walksPages(form: {
  blocks: Block[];
  hiddenFields?: string[] | null;
  partialResponses?: boolean;
}): boolean {
  return (
    form.blocks.some((b) => b.type === 'page_break') ||
    hasLogic(form.blocks) ||
    (form.hiddenFields?.length ?? 0) > 0 ||
    form.partialResponses === true
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
  /** The answers as stored (valid answers to shown blocks only): what conditions see. */
  stored: Record<string, unknown>;
  /** The hidden values. */
  hidden: Record<string, string>;
}

export function route(
  form: { blocks: Block[]; hiddenFields?: string[] | null; compute?: FormCompute | null },
  raw: RawAnswers,
  hidden: Record<string, string>,
): Route {
  const answers = answersFromFormPost(form.blocks, raw);
  const { blocks, hiddenFields, compute } = form;
  const checked = validateResponse({ blocks, hiddenFields: hiddenFields ?? [], compute }, answers, hidden, {
    wording: 'person',
    source: 'web',
  });
  const shown = checked.shown ? new Set(checked.shown) : undefined;
  const isShown = (id: string) => !shown || shown.has(id);
  const pages = pagesOf(form.blocks);
  const onPath = pages.filter((p) => !p.start || isShown(p.start.id));
  return { pages, onPath, isShown, details: checked.details, answers, stored: checked.answers, hidden: checked.hidden };
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

/**
 * What the page's script needs to walk the page as walk() does (respondent.script.ts): the page's
 * position on the path, its blocks in order (id, type, title, showIf; a number's bounds), the stored answers and hidden
 * values that the rules name from elsewhere (only those), and the page_breaks from the one that
 * closes this page on, with their showIf and jumps, which decide whether the form ends here.
 */
export interface PageLogic {
  /** The page's place on the path ("Page {position} of ..."), from which the script counts the pages after it. */
  position: number;
  blocks: Array<{ id: string; type: string; title: string; showIf?: Condition; min?: number; max?: number }>;
  answers: Record<string, unknown>;
  hidden: Record<string, string>;
  breaks: Array<{ id: string; showIf?: Condition; jumps?: Block['jumps'] }>;
  /** Variables as the pages before this one computed them (issue 46); a change on this page shows on the next post. */
  variables?: Record<string, number | string>;
}

export function pageLogic(page: Page, r: Route, variables?: Record<string, number | string>): PageLogic {
  const at = r.pages.indexOf(page);
  const breaks = r.pages.slice(at + 1).map((p) => p.start!);
  const names = { blocks: new Set<string>(), hidden: new Set<string>() };
  const blocks = page.blocks
    .filter((b) => b.type !== 'page_break')
    .map((b) => {
      if (b.showIf) namesOf(b.showIf, names);
      return {
        id: b.id,
        type: b.type,
        title: b.title,
        ...(b.showIf ? { showIf: b.showIf } : {}),
        ...(b.type === 'number' ? { min: b.min, max: b.max } : {}),
        ...(b.type === 'matrix' && b.multiple ? { multiple: true } : {}),
      };
    });
  for (const pb of breaks) {
    if (pb.showIf) namesOf(pb.showIf, names);
    for (const j of pb.jumps ?? []) namesOf(j.if, names);
  }
  // Answers on earlier pages only: a rule that reaches past this page sees blocks not shown yet.
  const earlier = new Set(
    r.pages.slice(0, at).flatMap((p) => [...(p.start ? [p.start.id] : []), ...p.blocks.map((b) => b.id)]),
  );
  const answers: Record<string, unknown> = {};
  for (const id of names.blocks) if (earlier.has(id) && Object.hasOwn(r.stored, id)) answers[id] = r.stored[id];
  const hidden: Record<string, string> = {};
  for (const name of names.hidden) if (Object.hasOwn(r.hidden, name)) hidden[name] = r.hidden[name];
  return {
    position: Math.max(1, r.onPath.indexOf(page) + 1),
    blocks,
    answers,
    hidden,
    ...(variables ? { variables } : {}),
    breaks: breaks.map((pb) => ({
      id: pb.id,
      ...(pb.showIf ? { showIf: pb.showIf } : {}),
      ...(pb.jumps?.length ? { jumps: pb.jumps } : {}),
    })),
  };
}

/** The ids a post's _seen field lists (the questions the page's script showed), on the given page only. */
export function seenOn(page: Page, posted: RawAnswers): string[] {
  const raw = Array.isArray(posted._seen) ? posted._seen[0] : posted._seen;
  if (typeof raw !== 'string') return [];
  const here = new Set(page.blocks.map((b) => b.id));
  return raw.split(' ').filter((id) => here.has(id));
}

/**
 * How large the signed state may grow. Every post of the walk carries it besides the page's own
 * fields, and a form post may be 200 KB (the route's limit, past which the body is refused with a
 * 413 before the page is reached): half of it is left for the page's fields.
 */
export const MAX_STATE_BYTES = 100 * 1024;

/**
 * When the answers so far would make a state larger than MAX_STATE_BYTES, the problem to show on
 * the page: on its longest answer (the state was under the limit before this page's answers).
 */
export function stateTooLarge(state: PageState, page: Page): ErrorDetail | undefined {
  // base64url of the JSON, a dot and the 43-character MAC; r and t change a little when signed.
  const bytes = Math.ceil((Buffer.byteLength(JSON.stringify(state)) * 4) / 3) + 44 + 2 * 1024;
  if (bytes <= MAX_STATE_BYTES) return undefined;
  const size = (v: unknown) => Buffer.byteLength(JSON.stringify(v ?? ''));
  const here = page.blocks.filter((b) => state.a[b.id] !== undefined);
  const longest = (here.length ? here.map((b) => b.id) : Object.keys(state.a)).reduce(
    (a, b) => (size(state.a[b]) > size(state.a[a]) ? b : a),
    here[0]?.id ?? Object.keys(state.a)[0] ?? '',
  );
  const kb = (n: number) => Math.ceil(n / 1024).toLocaleString('en-US');
  return {
    path: `/answers/${pointerSegment(longest)}`,
    message: `Your answers are too long to carry to the next page (${kb(bytes)} KB; this form takes ${kb(MAX_STATE_BYTES)} KB). Shorten this answer, or a long one on an earlier page.`,
  };
}

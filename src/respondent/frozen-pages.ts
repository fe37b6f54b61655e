/**
 * Render once per form version (issue 52): a respondent page that nobody has answered yet (the
 * first page of a form, opened without hidden values, invitation or resume) is the same HTML for
 * everyone but for its signed state (`_state`, a nonce and a time of its own). It is rendered
 * once, with a placeholder where the state goes, kept split around it, and each request joins the
 * parts with its own signed state: no React render, no walk of the form's logic per request.
 *
 * The key names everything the HTML is drawn from (see PageKey); the form's version in it is read
 * on every request (the form row, as get_form reads it), so an edit or a publish is served at
 * once, on every instance: a page of an older version is never looked up again and leaves the
 * cache as newer pages come in. Memory is bounded by entries and by characters.
 */
import { randomBytes } from 'node:crypto';
import type { PageState } from './page-state';

/** What a kept page is drawn from: a page of one form version, as one language says it, on one plan. */
export interface PageKey {
  formId: string;
  version: number;
  /**
   * Which page: 'one' (the one-page form), 'first' (a walk's first page, with no answers nor
   * hidden values) or 'end' (the page after a submission, `end` its words).
   */
  page: 'one' | 'first' | 'end';
  /** The language the page is said in (issue 51); undefined until pages have languages. */
  language?: string;
  /** The workspace's plan, for a form with file questions (their size limits); undefined otherwise. */
  plan?: string;
  /** The ending's title, message and redirect, for 'end' (an ending may recall answers). */
  end?: string;
}

/** The state's parts that are the same for every request of a page (the rest is the request's own). */
export type StateTemplate = Pick<PageState, 's' | 'r' | 'c'>;

export interface FrozenPage {
  /** The HTML before and after the state (a page without state: all in head). */
  head: string;
  tail: string;
  state?: StateTemplate;
}

/** Pages kept at most, and characters of HTML at most (about 2 bytes each in memory). */
const MAX_PAGES = 2000;
const MAX_CHARS = 32 * 1024 * 1024;

/**
 * Where the state goes in the page drawn once: random per process, in the state's own alphabet
 * (base64url, so the renderer leaves it as it is), so no form's words can contain it by chance.
 */
export const STATE_SLOT = `fw-state-${randomBytes(12).toString('hex')}`;

/** Provided once per instance (RespondentModule). */
export class FrozenPages {
  private readonly pages = new Map<string, FrozenPage>();
  private chars = 0;

  constructor(
    private readonly maxPages = MAX_PAGES,
    private readonly maxChars = MAX_CHARS,
  ) {}

  /** The key as one string; a field added to PageKey (issue 51's language) is part of it by name. */
  static keyOf(key: PageKey): string {
    return JSON.stringify([key.formId, key.version, key.page, key.language ?? null, key.plan ?? null, key.end ?? null]);
  }

  /**
   * The page under `key`, drawn by `draw` (with STATE_SLOT as its state) when it is not kept.
   * Undefined when the drawn page does not hold the slot exactly once (then the caller draws the
   * page as before).
   */
  async page(
    key: PageKey,
    draw: (slot: string) => Promise<{ html: string; state: StateTemplate }>,
  ): Promise<FrozenPage | undefined> {
    const k = FrozenPages.keyOf(key);
    const kept = this.recent(k);
    if (kept) return kept;
    const drawn = await draw(STATE_SLOT);
    const parts = drawn.html.split(STATE_SLOT);
    if (parts.length !== 2) return undefined;
    const page: FrozenPage = { head: parts[0], tail: parts[1], state: drawn.state };
    this.keep(k, page);
    return page;
  }

  /** A page without state (the end of a submission), under `key`: drawn by `draw` when it is not kept. */
  whole(key: PageKey, draw: () => string): string {
    const k = FrozenPages.keyOf(key);
    const kept = this.recent(k);
    if (kept) return kept.head;
    const head = draw();
    this.keep(k, { head, tail: '' });
    return head;
  }

  /** The page with a request's signed state in it. */
  static fill(page: FrozenPage, signed: string): string {
    return page.head + signed + page.tail;
  }

  get size(): number {
    return this.pages.size;
  }

  /** The page kept under `k`, made the most recent. */
  private recent(k: string): FrozenPage | undefined {
    const kept = this.pages.get(k);
    if (kept) {
      this.pages.delete(k);
      this.pages.set(k, kept);
    }
    return kept;
  }

  private keep(k: string, page: FrozenPage): void {
    const size = page.head.length + page.tail.length;
    if (size > this.maxChars) return;
    const before = this.pages.get(k); // drawn twice at once: the last one is kept
    if (before) this.chars -= before.head.length + before.tail.length;
    this.pages.delete(k);
    this.pages.set(k, page);
    this.chars += size;
    while (this.pages.size > this.maxPages || this.chars > this.maxChars) {
      const [oldest, p] = this.pages.entries().next().value!;
      this.pages.delete(oldest);
      this.chars -= p.head.length + p.tail.length;
    }
  }
}

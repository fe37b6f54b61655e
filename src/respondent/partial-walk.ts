import type { Block } from '../forms/blocks';
import type { FormRecord } from '../forms/forms.service';
import { cookieHeader, readCookie } from '../settings/sessions.service';
import type { PageState } from './page-state';
import type { RawAnswers } from './respondent.page';
import { Page, Route, route } from './respondent.steps';

/**
 * The page side of partial responses (issue 36): with the form's `partialResponses` on, each step
 * of the walk is also saved server-side (PartialResponsesService), and the resume secret it hands
 * back is kept in a cookie scoped to the form's page and in the signed page state (so the walk
 * keeps one partial even where cookies are refused). These are the plain functions of it.
 */

/** Whether the form's owner turned partial responses on. */
export function savesPartials(form: FormRecord): boolean {
  return form.partialResponses === true;
}

export const RESUME_COOKIE = 'fw_resume';

/** A resume secret as it may appear in a cookie or a link (anything else is not looked up). */
const SECRET = /^[0-9A-Za-z_-]{22,128}$/;

/** The secret a GET names: the link's ?resume= first, else this form's cookie. */
export function resumeSecretOf(query: unknown, cookie: string | undefined): { secret?: string; fromLink: boolean } {
  const raw = query && typeof query === 'object' ? (query as Record<string, unknown>).resume : undefined;
  const link = Array.isArray(raw) ? raw[0] : raw;
  if (typeof link === 'string') return { secret: SECRET.test(link) ? link : undefined, fromLink: true };
  return { secret: heldSecretOf(cookie), fromLink: false };
}

/** The secret this browser's cookie holds for the form (undefined: none, or not a secret's shape). */
export function heldSecretOf(cookie: string | undefined): string | undefined {
  const kept = readCookie(cookie, RESUME_COOKIE);
  return kept && SECRET.test(kept) ? kept : undefined;
}

/**
 * The cookie that keeps the secret (empty and expired to forget it): HttpOnly, SameSite=Lax, only
 * sent to the form's own page, Secure when the page was asked for over https; it lasts as long as
 * a partial not updated is kept (PARTIAL_RESPONSE_RETENTION_DAYS).
 */
export function resumeCookie(publicId: string, secret: string | undefined, secure: boolean, days = 0): string {
  return cookieHeader(RESUME_COOKIE, secret ?? '', {
    secure,
    path: `/f/${publicId}`,
    maxAgeSeconds: secret ? Math.round(days * 24 * 3600) : 0,
  });
}

/** The answers a partial holds: the valid answers on the pages visited (none of a page not reached). */
export function partialAnswers(state: PageState, r: Route): Record<string, unknown> {
  const visited = new Set(state.s);
  const answers: Record<string, unknown> = {};
  for (const p of r.pages)
    if (visited.has(p.key)) for (const b of p.blocks) if (Object.hasOwn(r.stored, b.id)) answers[b.id] = r.stored[b.id];
  return answers;
}

/** One stored value as a form post carries it: a choice by its id (stored by its label), a file by its upload id. */
function rawOne(b: Block, v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'object') {
    const id = (v as { uploadId?: unknown; id?: unknown }).uploadId ?? (v as { id?: unknown }).id;
    return typeof id === 'string' ? id : undefined;
  }
  const text = String(v);
  return b.choices?.find((c) => c.label === text || c.id === text)?.id ?? text;
}

/** A matrix answer (by ids or labels) as "<row id>:<column id>" per column picked, as foldMatrixFields makes them. */
function matrixRaw(b: Block, v: unknown): string[] | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const find = (list: Block['rows'], x: string) => list?.find((c) => c.id === x || c.label === x)?.id;
  const list = Object.entries(v as Record<string, unknown>).flatMap(([row, cols]) => {
    const r = find(b.rows, row);
    return r
      ? (Array.isArray(cols) ? cols : [cols]).flatMap((c) => {
          const id = find(b.columns, String(c));
          return id ? [`${r}:${id}`] : [];
        })
      : [];
  });
  return list.length ? list : undefined;
}

/** A stored answer as a form post would carry it (the inverse of answersFromFormPost). */
function rawOf(b: Block, v: unknown): string | string[] | undefined {
  if (b.type === 'matrix') return matrixRaw(b, v);
  if (!Array.isArray(v)) return rawOne(b, v);
  const list = v.map((x) => rawOne(b, x)).filter((x): x is string => x !== undefined);
  return list.length ? list : undefined;
}

/**
 * Where a saved partial resumes, against the form as it is now: answers to blocks the form no
 * longer has are dropped, hidden values kept only for declared names, and the path re-checked:
 * the pages on the path the answers take now, up to the page the person stopped on (or the
 * furthest page reached that is still on it).
 */
export function resumedWalk(
  form: FormRecord,
  snapshot: {
    answers: Record<string, unknown>;
    hidden: Record<string, string>;
    pagesReached: string[];
    lastPage: string;
  },
): { a: RawAnswers; h: Record<string, string>; s: string[]; page: Page; r: Route } {
  const a: RawAnswers = {};
  for (const b of form.blocks) {
    if (b.type === 'page_break' || !Object.hasOwn(snapshot.answers, b.id)) continue;
    const value = rawOf(b, snapshot.answers[b.id]);
    if (value !== undefined) a[b.id] = value;
  }
  const declared = new Set(form.hiddenFields ?? []);
  const h = Object.fromEntries(Object.entries(snapshot.hidden ?? {}).filter(([k]) => declared.has(k)));
  const r = route(form, a, h);
  const keys = r.onPath.map((p) => p.key);
  let at = keys.indexOf(snapshot.lastPage);
  if (at < 0) at = Math.max(0, ...snapshot.pagesReached.map((k) => keys.indexOf(k)));
  const s = keys.slice(0, at + 1);
  return { a, h, s: s.length ? s : [r.pages[0].key], page: r.onPath[at] ?? r.pages[0], r };
}

import { applyDecorators, Controller, Inject, Injectable } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../auth/public.decorator';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { Role } from '../common/access/roles';
import { formPost } from '../common/http/body';
import { APP_CONFIG, AppConfig } from '../config/config';
import { NoticeKey, noticeOf, withNotice } from './notices';
import { cookieHeader, readCookie, Session, SESSION_COOKIE, SessionsService } from './sessions.service';
import { Access, PageError, SettingsService } from './settings.service';
import { Chrome, messagePage, OnceShown, OnceShownText, render } from './ui';

/** Settings forms are a few short fields (the scopes are repeated checkboxes). */
export const FORM = formPost(20 * 1024, 30);

/**
 * The CSP of the settings pages: inline styles, the one script file of this origin (the copy
 * button), forms posting here only, no framing anywhere.
 */
const SETTINGS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
const HEADERS = {
  'Content-Security-Policy': SETTINGS_CSP,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

export type Body = Record<string, string | string[] | undefined>;
export const text = (v: unknown): string =>
  (typeof v === 'string' ? v : Array.isArray(v) && typeof v[0] === 'string' ? v[0] : '').trim();
export const list = (v: unknown): string[] =>
  (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x): x is string => typeof x === 'string');
// Control characters (U+0000-U+001F, U+007F) are refused in names and other one-line text.
export const badText = (s: string, max: number) =>
  s.length > max || [...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

/** Where a sign-in may send the person back to: a settings page or an OAuth sign-in of this service. */
export function safeNext(next: unknown): string {
  const n = text(next);
  return /^\/(settings|oauth\/interaction)(\/[A-Za-z0-9_\-./]*)?(\?[A-Za-z0-9_\-.=&%]*)?$/.test(n) && !n.includes('..')
    ? n
    : '/settings';
}

/** The pages a person whose password works once may reach: choosing a new one (the account page). */
export const CHOOSE_PASSWORD_PAGE = '/settings/account';
const WHILE_MUST_CHANGE = new Set([CHOOSE_PASSWORD_PAGE, `${CHOOSE_PASSWORD_PAGE}/password`]);

/** The page of a paged list (?page=, from 1). */
export const pageNumber = (query: Record<string, unknown>) =>
  Math.min(Math.max(1, Math.floor(Number(text(query.page))) || 1), 10_000);

/**
 * A controller of settings pages under /settings/`path`: public to the API's bearer-token guard
 * (these pages authenticate with the session cookie, and every POST carries a CSRF token), and
 * left out of the API's OpenAPI document.
 */
export const SettingsPages = (path: string) =>
  applyDecorators(Public(), ApiExcludeController(), Controller(path ? `settings/${path}` : 'settings'));

/** What a signed-in page works with. */
export interface Ctx {
  chrome: Chrome;
  session: Session;
  /** The workspace of the path and the person's role in it (on the workspace's pages). */
  access: Access;
  body: Body;
  /** The workspace's settings path, /settings/w/<slug>. */
  base: string;
}

/**
 * The plumbing every settings controller shares: the signed-in page (session, CSRF, workspace
 * access, refusals as pages), the answers (a page, or 303 to a page with its notice), cookies.
 */
@Injectable()
export class SettingsHttp {
  constructor(
    private readonly sessions: SessionsService,
    private readonly settings: SettingsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  session(req: Request): Promise<Session | undefined> {
    return this.sessions.find(readCookie(req.headers.cookie, SESSION_COOKIE));
  }

  /**
   * Runs a signed-in page: a signed-out visitor is sent to sign in (and back here after); a POST
   * without the session's CSRF token changes nothing (403); the workspace of the path (:slug), when
   * there is one, must be one of the person's with at least `minimum` (else 404 or 403). A person
   * who signed in with a password that works once (the demo owner's printed one) is sent to choose
   * a new one, whatever the page or post (which then changes nothing).
   */
  async run(req: Request, res: Response, minimum: Role, fn: (ctx: Ctx) => Promise<unknown> | unknown): Promise<void> {
    const session = await this.session(req);
    if (!session) {
      const next = req.method === 'GET' ? req.url : '/settings';
      return this.seeOther(res, `/settings/sign-in?next=${encodeURIComponent(safeNext(next))}`);
    }
    if (session.mustChangePassword && !WHILE_MUST_CHANGE.has(req.url.split('?')[0]))
      return this.seeOther(res, CHOOSE_PASSWORD_PAGE);
    const slug = (req.params as { slug?: string }).slug;
    let chrome: Chrome = { email: session.email, csrf: session.csrf };
    const body = (req.body ?? {}) as Body;
    try {
      if (req.method === 'POST' && !this.sessions.csrfValid(session, body.csrf)) {
        const refused = 'This form expired or was tampered with (its security token is missing or wrong).';
        return this.send(res, 403, messagePage('Request refused', `${refused} Reload the page and try again.`, chrome));
      }
      const access = slug ? await this.settings.access(session, slug, minimum) : (undefined as unknown as Access);
      chrome = {
        ...chrome,
        access: slug ? access : undefined,
        current: slug ? req.url.split('/')[4]?.split('?')[0] : undefined,
        notice: req.method === 'GET' ? noticeOf((req.query as Record<string, unknown>).done) : undefined,
      };
      await fn({ chrome, session, access, body, base: `/settings/w/${slug}` });
    } catch (err) {
      if (!(err instanceof PageError)) throw err;
      res.headers(err.headers);
      this.send(res, err.status, messagePage(err.title, err.message, chrome));
    }
  }

  /**
   * A page that shows a flash once (a secret right after it was made): taking it ends it, so a
   * reload shows the page's "no longer shown" text instead.
   */
  showFlash(req: Request, res: Response, kind: string, text: OnceShownText) {
    return this.run(req, res, 'admin', async ({ chrome, session, base }) => {
      const flash = await this.sessions.takeFlash(session, kind);
      this.send(res, 200, render(<OnceShown chrome={chrome} base={base} flash={flash} text={text} />));
    });
  }

  /** 303 See Other to a page of this service (with the notice of the change made): the answer to every form post. */
  seeOther(res: Response, path: string, notice?: NoticeKey): void {
    res.status(303).headers(HEADERS).redirect(withNotice(path, notice), 303);
  }

  send(res: Response, status: number, html: string): void {
    res.status(status).headers(HEADERS).type('text/html; charset=utf-8').send(html);
  }

  cookie(name: string, value: string, maxAgeSeconds: number, path = '/'): string {
    return cookieHeader(name, value, { secure: this.config.publicUrl.startsWith('https://'), maxAgeSeconds, path });
  }

  linkUrl(token: string): string {
    return `${this.config.publicUrl}/settings/set-password/${token}`;
  }
}

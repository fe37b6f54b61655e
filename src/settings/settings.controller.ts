import { Controller, Get, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { randomBytes } from 'node:crypto';
import { Public } from '../auth/public.decorator';
import { isRole, isScope, PLANS, Plan, Role } from '../common/access/roles';
import { ApiError } from '../common/errors/api-error';
import { formPost } from '../common/http/body';
import { APP_CONFIG, AppConfig } from '../config/config';
import { MIN_PASSWORD_LENGTH } from '../oauth/passwords';
import { OAuthService } from '../oauth/oauth.service';
import {
  accountPage,
  appsPage,
  auditPage,
  Chrome,
  confirmPage,
  FieldErrors,
  homePage,
  linkPage,
  membersPage,
  messagePage,
  planPage,
  setPasswordPage,
  signInPage,
  tokenCreatedPage,
  tokensPage,
} from './settings.pages';
import { Access, notFound, PageError, SettingsService } from './settings.service';
import {
  cookieHeader,
  readCookie,
  Session,
  SESSION_ABSOLUTE_HOURS,
  SESSION_COOKIE,
  SessionsService,
} from './sessions.service';
import { COPY_SCRIPT } from './settings.script';
import { WebhooksPageService } from './webhooks-page.service';
import {
  DELIVERIES_PER_PAGE,
  DELIVERY_STATUSES,
  webhookConfirmPage,
  webhookPage,
  webhookSecretPage,
  webhooksPage,
} from './webhooks.pages';

/** Settings forms are a few short fields (the scopes are repeated checkboxes). */
const FORM = formPost(20 * 1024, 30);
const SIGN_IN_COOKIE = 'fw_signin';

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

type Body = Record<string, string | string[] | undefined>;
const text = (v: unknown): string =>
  (typeof v === 'string' ? v : Array.isArray(v) && typeof v[0] === 'string' ? v[0] : '').trim();
const list = (v: unknown): string[] =>
  (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x): x is string => typeof x === 'string');
// Control characters (U+0000-U+001F, U+007F) are refused in names and other one-line text.
const badText = (s: string, max: number) =>
  s.length > max || [...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

/** Where a sign-in may send the person back to: a settings page or an OAuth sign-in of this service. */
function safeNext(next: unknown): string {
  const n = text(next);
  return /^\/(settings|oauth\/interaction)(\/[A-Za-z0-9_\-./]*)?(\?[A-Za-z0-9_\-.=&%]*)?$/.test(n) && !n.includes('..')
    ? n
    : '/settings';
}

/** The page of a paged list (?page=, from 1). */
const pageNumber = (query: Record<string, unknown>) =>
  Math.min(Math.max(1, Math.floor(Number(text(query.page))) || 1), 10_000);

/**
 * Workspace settings in the browser (docs/settings.md). Public to the API's bearer-token guard:
 * these pages authenticate with the session cookie, and every POST carries the session's CSRF token.
 */
@Public()
@ApiExcludeController()
@Controller('settings')
export class SettingsController {
  constructor(
    private readonly sessions: SessionsService,
    private readonly settings: SettingsService,
    private readonly oauth: OAuthService,
    private readonly webhooks: WebhooksPageService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get('assets/settings.js')
  script(@Res() res: Response) {
    res
      .status(200)
      .headers({
        'Content-Type': 'text/javascript; charset=utf-8',
        'Cache-Control': 'public, max-age=3600',
        'X-Content-Type-Options': 'nosniff',
      })
      .send(COPY_SCRIPT);
  }

  // --- sign-in, sign-out, set-password -----------------------------------------------------------

  @Get('sign-in')
  async signInForm(
    @Query('next') next: string,
    @Query('done') done: string,
    @Req() req: Request,
    @Res() res: Response,
  ) {
    const csrf = await this.signInCsrf(req, res);
    this.send(
      res,
      200,
      signInPage(csrf, safeNext(next), { notice: done ? 'Your password is set. Sign in with it.' : undefined }),
    );
  }

  @Post('sign-in')
  @RouteConfig(FORM)
  async signIn(@Req() req: Request, @Res() res: Response) {
    const body = (req.body ?? {}) as Body;
    const next = safeNext(body.next);
    const email = text(body.email);
    const password = typeof body.password === 'string' ? body.password : '';
    const cookie = readCookie(req.headers.cookie, SIGN_IN_COOKIE);
    if (!cookie || typeof body.csrf !== 'string' || !(await this.oauth.csrfValid(`settings:${cookie}`, body.csrf))) {
      return this.send(
        res,
        403,
        messagePage(
          'Request refused',
          'This form expired or was tampered with (its security token is missing or wrong). Reload the page and try again.',
        ),
      );
    }
    const errors: FieldErrors = {};
    if (!email || badText(email, 320)) errors.email = 'Enter your email.';
    if (!password || password.length > 1024) errors.password = 'Enter your password.';
    if (!Object.keys(errors).length) {
      const result = await this.oauth.signIn(email, password);
      if (result.ok) {
        const value = await this.sessions.start(result.userId, readCookie(req.headers.cookie, SESSION_COOKIE));
        res.header('Set-Cookie', [
          this.cookie(SESSION_COOKIE, value, SESSION_ABSOLUTE_HOURS * 3600),
          this.cookie(SIGN_IN_COOKIE, '', 0),
        ]);
        return this.seeOther(res, next);
      }
      if (result.reason === 'locked')
        errors.email = `Too many attempts for this email: try again in ${result.minutes} minute(s). If you forgot your password, ask the admin of the workspace that invited you for a new link, or your operator.`;
      else errors.password = 'Email or password is wrong.';
    }
    const status = errors.email?.startsWith('Too many')
      ? 429
      : Object.keys(errors).length && email && password
        ? 401
        : 400;
    this.send(res, status, signInPage(await this.signInCsrf(req, res), next, { email, errors }));
  }

  /** Ends every session of the person, here and on every instance, and their OAuth sign-in too. */
  @Post('sign-out')
  @RouteConfig(FORM)
  async signOut(@Req() req: Request, @Res() res: Response) {
    const session = await this.session(req);
    if (session && this.sessions.csrfValid(session, (req.body as Body)?.csrf))
      await this.sessions.endAll(session.userId);
    else if (session)
      return this.send(
        res,
        403,
        messagePage('Request refused', 'This form expired or was tampered with. Reload the page and try again.'),
      );
    res.header('Set-Cookie', this.cookie(SESSION_COOKIE, '', 0));
    this.seeOther(res, '/settings/sign-in');
  }

  @Get('set-password/:token')
  async setPasswordForm(@Param('token') token: string, @Res() res: Response) {
    const person = await this.sessions.linkUser(token);
    if (!person)
      return this.send(
        res,
        404,
        messagePage(
          'This link does not work',
          'It was used already, has expired (links work for 24 hours), or was replaced by a newer one. Ask the admin of the workspace that invited you for a new link, or your operator.',
        ),
      );
    this.send(res, 200, setPasswordPage(token, person.email));
  }

  /** The link is its own proof (a secret only its holder knows), so the form needs no other token. */
  @Post('set-password/:token')
  @RouteConfig(FORM)
  async setPassword(@Param('token') token: string, @Req() req: Request, @Res() res: Response) {
    const person = await this.sessions.linkUser(token);
    if (!person)
      return this.send(
        res,
        404,
        messagePage(
          'This link does not work',
          'It was used already, has expired, or was replaced by a newer one. Ask the admin of the workspace that invited you for a new link, or your operator.',
        ),
      );
    const password = typeof (req.body as Body)?.password === 'string' ? ((req.body as Body).password as string) : '';
    if (password.length < MIN_PASSWORD_LENGTH || password.length > 1024) {
      return this.send(
        res,
        400,
        setPasswordPage(token, person.email, {
          password: `Use at least ${MIN_PASSWORD_LENGTH} characters (and at most 1024).`,
        }),
      );
    }
    const used = await this.sessions.useLink(token);
    if (used?.userId !== person.userId)
      return this.send(res, 404, messagePage('This link does not work', 'It was used already.'));
    // Bound to the workspace whose admin was shown the link (null: the operator's CLI printed it).
    await this.oauth.setPassword(person.email, password, used.workspaceId);
    await this.sessions.endAll(person.userId); // whoever held the old password is signed out
    this.seeOther(res, '/settings/sign-in?done=1');
  }

  // --- home and account --------------------------------------------------------------------------

  @Get()
  async home(@Req() req: Request, @Res() res: Response) {
    await this.page(req, res, undefined, undefined, async (chrome) => {
      const workspaces = await this.settings.workspacesOf(chrome.email ? (await this.session(req))!.userId : '');
      this.send(res, 200, homePage({ ...chrome, current: 'home' }, workspaces));
    });
  }

  @Get('account')
  async account(@Req() req: Request, @Res() res: Response) {
    await this.page(req, res, undefined, undefined, async (chrome) =>
      this.send(res, 200, accountPage(chrome, { errors: {} })),
    );
  }

  @Post('account/password')
  @RouteConfig(FORM)
  async changePassword(@Req() req: Request, @Res() res: Response) {
    await this.page(req, res, undefined, undefined, async (chrome, session) => {
      const body = req.body as Body;
      const current = typeof body.current === 'string' ? body.current : '';
      const next = typeof body.password === 'string' ? body.password : '';
      const errors: FieldErrors = {};
      if (next.length < MIN_PASSWORD_LENGTH || next.length > 1024)
        errors.password = `Use at least ${MIN_PASSWORD_LENGTH} characters (and at most 1024).`;
      if (!current || current.length > 1024) errors.current = 'Enter your current password.';
      else {
        // Through the sign-in, so guesses here count towards the same lock.
        const check = await this.oauth.signIn(session.email, current);
        if (!check.ok)
          errors.current =
            check.reason === 'locked'
              ? `Too many attempts: try again in ${check.minutes} minute(s).`
              : 'This is not your current password.';
      }
      if (Object.keys(errors).length) return this.send(res, 400, accountPage(chrome, { errors }));
      await this.oauth.setPassword(session.email, next);
      // Other browsers signed in with the old password are signed out; this one gets a new session.
      await this.sessions.endAll(session.userId);
      const value = await this.sessions.start(session.userId);
      res.header('Set-Cookie', this.cookie(SESSION_COOKIE, value, SESSION_ABSOLUTE_HOURS * 3600));
      const fresh = (await this.sessions.find(value))!;
      this.send(
        res,
        200,
        accountPage(
          { ...chrome, csrf: fresh.csrf },
          { errors: {}, notice: 'Your password is changed. Other browsers were signed out.' },
        ),
      );
    });
  }

  // --- a workspace -------------------------------------------------------------------------------

  @Get('w/:slug')
  async workspace(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'viewer', async (chrome) => {
      const admin = chrome.access!.role === 'admin' || chrome.access!.role === 'owner';
      this.seeOther(res, `/settings/w/${slug}/${admin ? 'tokens' : 'apps'}`);
    });
  }

  @Get('w/:slug/tokens')
  async tokens(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (chrome, _s, a) => this.renderTokens(res, 200, chrome, a, {}, {}));
  }

  @Post('w/:slug/tokens')
  @RouteConfig(FORM)
  async createToken(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (chrome, session, a) => {
      const body = req.body as Body;
      const values = {
        name: text(body.name),
        role: text(body.role),
        scopes: list(body.scopes),
        expiry: text(body.expiry),
      };
      const errors: FieldErrors = {};
      if (!values.name || badText(values.name, 100)) errors.name = 'Give the token a name (up to 100 characters).';
      if (!isRole(values.role)) errors.role = 'Choose a role.';
      else if (!this.settings.grantable(a).includes(values.role)) {
        return this.renderTokens(
          res,
          403,
          chrome,
          a,
          { role: `A token cannot have a stronger role than yours (${a.role}).` },
          values,
        );
      }
      if (!values.scopes.length || !values.scopes.every(isScope)) errors.scopes = 'Choose at least one scope.';
      const days = values.expiry === 'never' ? undefined : Number(values.expiry);
      if (days !== undefined && ![30, 90, 365].includes(days)) errors.expiry = 'Choose when the token expires.';
      if (Object.keys(errors).length) return this.renderTokens(res, 400, chrome, a, errors, values);
      // A form sent twice (a reload of the POST, a double click) finds its nonce used: nothing is created.
      if (!(await this.sessions.useNonce(body.nonce))) return this.seeOther(res, `/settings/w/${slug}/tokens`);
      const { token } = await this.settings.createToken(a, {
        name: values.name,
        role: values.role as Role,
        scopes: values.scopes,
        expiresAt: days ? new Date(Date.now() + days * 86_400_000) : undefined,
      });
      await this.sessions.flash(session, 'token', { name: values.name, token });
      this.seeOther(res, `/settings/w/${slug}/tokens/created`);
    });
  }

  @Get('w/:slug/tokens/created')
  async tokenCreated(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (chrome, session) => {
      this.send(res, 200, tokenCreatedPage(chrome, await this.sessions.takeFlash(session, 'token')));
    });
  }

  @Get('w/:slug/tokens/:id/revoke')
  async revokeForm(@Param('slug') slug: string, @Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (chrome, _s, a) => {
      const token = await this.settings.findToken(a, id);
      const base = `/settings/w/${slug}/tokens`;
      this.send(
        res,
        200,
        confirmPage(
          { ...chrome, current: 'tokens' },
          `Revoke ${token.name}?`,
          `Scripts using the token ${token.token_prefix}… stop working within 5 seconds. This cannot be undone.`,
          `${base}/${token.id}/revoke`,
          'Revoke',
          base,
        ),
      );
    });
  }

  @Post('w/:slug/tokens/:id/revoke')
  @RouteConfig(FORM)
  async revoke(@Param('slug') slug: string, @Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (_c, _s, a) => {
      await this.settings.revokeToken(a, id);
      this.seeOther(res, `/settings/w/${slug}/tokens`);
    });
  }

  @Get('w/:slug/members')
  async members(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (chrome, _s, a) => this.renderMembers(res, 200, chrome, a, {}, {}));
  }

  @Post('w/:slug/members')
  @RouteConfig(FORM)
  async addMember(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (chrome, session, a) => {
      const body = req.body as Body;
      const values = { email: text(body.email), role: text(body.role) };
      const errors: FieldErrors = {};
      if (!/^[^\s@]+@[^\s@]+$/.test(values.email) || badText(values.email, 320))
        errors.email = 'Enter an email address, e.g. ada@example.com.';
      if (!isRole(values.role)) errors.role = 'Choose a role.';
      if (Object.keys(errors).length) return this.renderMembers(res, 400, chrome, a, errors, values);
      const added = await this.settings.addMember(a, values.email, values.role as Role);
      if (added.outcome === 'already_member')
        return this.renderMembers(
          res,
          400,
          chrome,
          a,
          { email: 'This person is already a member: change their role in the list.' },
          values,
        );
      if (added.outcome === 'refused') return this.renderMembers(res, 403, chrome, a, { email: added.reason }, values);
      if (!added.link)
        return this.renderMembers(
          res,
          200,
          chrome,
          a,
          {},
          {},
          added.noLink === 'has_password'
            ? `${added.email} was added. They already have a password and can sign in.`
            : `${added.email} was added. They have no password yet and also belong to another workspace, so no set-password link is shown here (whoever sets it could act as them there): an operator sets their first password with \`user set-password\` (the command line).`,
        );
      await this.sessions.flash(session, 'link', { email: added.email, url: this.linkUrl(added.link) });
      this.seeOther(res, `/settings/w/${slug}/members/link`);
    });
  }

  @Get('w/:slug/members/link')
  async showLink(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (chrome, session) =>
      this.send(res, 200, linkPage(chrome, await this.sessions.takeFlash(session, 'link'))),
    );
  }

  @Post('w/:slug/members/:userId/role')
  @RouteConfig(FORM)
  async changeRole(
    @Param('slug') slug: string,
    @Param('userId') userId: string,
    @Req() req: Request,
    @Res() res: Response,
  ) {
    await this.page(req, res, slug, 'admin', async (_c, _s, a) => {
      const role = text((req.body as Body).role);
      if (!isRole(role)) throw notFound();
      await this.settings.changeRole(a, userId, role);
      this.seeOther(res, `/settings/w/${slug}/members`);
    });
  }

  @Get('w/:slug/members/:userId/remove')
  async removeForm(
    @Param('slug') slug: string,
    @Param('userId') userId: string,
    @Req() req: Request,
    @Res() res: Response,
  ) {
    await this.page(req, res, slug, 'admin', async (chrome, _s, a) => {
      const m = await this.settings.findMember(a, userId);
      const base = `/settings/w/${slug}/members`;
      this.send(
        res,
        200,
        confirmPage(
          { ...chrome, current: 'members' },
          `Remove ${m.email}?`,
          `${m.email} loses access to ${a.workspace.name}, and the tokens they created stop working within 5 seconds.`,
          `${base}/${m.userId}/remove`,
          'Remove',
          base,
        ),
      );
    });
  }

  @Post('w/:slug/members/:userId/remove')
  @RouteConfig(FORM)
  async removeMember(
    @Param('slug') slug: string,
    @Param('userId') userId: string,
    @Req() req: Request,
    @Res() res: Response,
  ) {
    await this.page(req, res, slug, 'admin', async (_c, _s, a) => {
      await this.settings.removeMember(a, userId);
      this.seeOther(res, `/settings/w/${slug}/members`);
    });
  }

  @Post('w/:slug/members/:userId/link')
  @RouteConfig(FORM)
  async newLink(
    @Param('slug') slug: string,
    @Param('userId') userId: string,
    @Req() req: Request,
    @Res() res: Response,
  ) {
    await this.page(req, res, slug, 'admin', async (_c, session, a) => {
      const { email, link } = await this.settings.newLink(a, userId);
      await this.sessions.flash(session, 'link', { email, url: this.linkUrl(link) });
      this.seeOther(res, `/settings/w/${slug}/members/link`);
    });
  }

  @Get('w/:slug/apps')
  async apps(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'viewer', async (chrome, _s, a) =>
      this.send(res, 200, appsPage({ ...chrome, current: 'apps' }, await this.settings.listApps(a))),
    );
  }

  @Post('w/:slug/apps/:grantId/disconnect')
  @RouteConfig(FORM)
  async disconnect(
    @Param('slug') slug: string,
    @Param('grantId') grantId: string,
    @Req() req: Request,
    @Res() res: Response,
  ) {
    await this.page(req, res, slug, 'viewer', async (_c, _s, a) => {
      await this.settings.disconnect(a, grantId);
      this.seeOther(res, `/settings/w/${slug}/apps`);
    });
  }

  // --- webhooks (admins; the webhook tools' rules, see WebhooksPageService) -----------------------

  @Get('w/:slug/webhooks')
  async webhookList(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (chrome, _s, a) => this.renderWebhooks(res, 200, chrome, a, {}, {}));
  }

  @Post('w/:slug/webhooks')
  @RouteConfig(FORM)
  async createWebhook(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (chrome, session, a) => {
      const body = req.body as Body;
      const values = { url: text(body.url), events: list(body.events), description: text(body.description) };
      // A form sent twice (a reload of the POST, a double click) finds its nonce used: nothing is created.
      if (!(await this.sessions.useNonce(body.nonce))) return this.seeOther(res, `/settings/w/${slug}/webhooks`);
      const { errors, created } = await this.webhooks.create(a, values);
      if (!created) return this.renderWebhooks(res, 400, chrome, a, errors, values);
      await this.sessions.flash(session, 'webhook', { url: created.url, secret: created.secret });
      this.seeOther(res, `/settings/w/${slug}/webhooks/secret`);
    });
  }

  @Get('w/:slug/webhooks/secret')
  async webhookSecret(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (chrome, session) =>
      this.send(res, 200, webhookSecretPage(chrome, await this.sessions.takeFlash(session, 'webhook'))),
    );
  }

  /** An endpoint and its delivery log (?status=, ?page=). */
  @Get('w/:slug/webhooks/:id')
  async webhook(
    @Param() { slug, id }: { slug: string; id: string },
    @Req() req: Request,
    @Res() res: Response,
    @Query() query: Record<string, unknown>,
  ) {
    await this.page(req, res, slug, 'admin', async (chrome, _s, a) => {
      const endpoint = await this.webhooks.endpoint(a, id);
      const page = pageNumber(query);
      const status = (DELIVERY_STATUSES as readonly string[]).includes(text(query.status))
        ? text(query.status)
        : undefined;
      const log = await this.webhooks.deliveries(a, id, {
        status,
        limit: DELIVERIES_PER_PAGE,
        offset: (page - 1) * DELIVERIES_PER_PAGE,
      });
      this.send(res, 200, webhookPage(chrome, endpoint, log, { status, page }));
    });
  }

  @Post('w/:slug/webhooks/:id/enabled')
  @RouteConfig(FORM)
  async enableWebhook(@Param('slug') slug: string, @Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (_c, _s, a) => {
      const enabled = text((req.body as Body).enabled);
      if (enabled !== 'true' && enabled !== 'false') throw notFound();
      await this.webhooks.setEnabled(a, id, enabled === 'true');
      this.seeOther(res, `/settings/w/${slug}/webhooks`);
    });
  }

  @Post('w/:slug/webhooks/:id/delete')
  @RouteConfig(FORM)
  async deleteWebhook(@Param('slug') slug: string, @Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (_c, _s, a) => {
      await this.webhooks.remove(a, id);
      this.seeOther(res, `/settings/w/${slug}/webhooks`);
    });
  }

  /** The confirmation before deleting an endpoint or rotating its secret (`action`: delete, rotate). */
  @Get('w/:slug/webhooks/:id/:action')
  async confirmWebhook(
    @Param() params: { slug: string; id: string; action: string },
    @Req() req: Request,
    @Res() res: Response,
  ) {
    await this.page(req, res, params.slug, 'admin', async (chrome, _s, a) => {
      if (params.action !== 'delete' && params.action !== 'rotate') throw notFound();
      const confirm = webhookConfirmPage(chrome, params.action, await this.webhooks.endpoint(a, params.id), {
        // A second post of the rotation (a double click) would end the old secret's overlap at once.
        nonce: this.sessions.nonce(),
      });
      this.send(res, 200, confirm);
    });
  }

  @Post('w/:slug/webhooks/:id/rotate')
  @RouteConfig(FORM)
  async rotateWebhook(@Param('slug') slug: string, @Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (_c, session, a) => {
      if (!(await this.sessions.useNonce((req.body as Body).nonce)))
        return this.seeOther(res, `/settings/w/${slug}/webhooks/${encodeURIComponent(id)}`);
      const rotated = await this.webhooks.rotate(a, id);
      await this.sessions.flash(session, 'webhook', {
        url: rotated.url,
        secret: rotated.secret,
        previousSecretExpiresAt: rotated.previousSecretExpiresAt,
      });
      this.seeOther(res, `/settings/w/${slug}/webhooks/secret`);
    });
  }

  @Post('w/:slug/webhooks/:id/test')
  @RouteConfig(FORM)
  async testWebhook(@Param('slug') slug: string, @Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'admin', async (_c, _s, a) => {
      await this.webhooks.sendTest(a, id, text((req.body as Body).event));
      this.seeOther(res, `/settings/w/${slug}/webhooks/${encodeURIComponent(id)}`);
    });
  }

  /** Redelivers, then shows the log of the delivery's endpoint. */
  @Post('w/:slug/webhooks/deliveries/:deliveryId/redeliver')
  @RouteConfig(FORM)
  async redeliverWebhook(
    @Param('slug') slug: string,
    @Param('deliveryId') deliveryId: string,
    @Req() req: Request,
    @Res() res: Response,
  ) {
    await this.page(req, res, slug, 'admin', async (_c, _s, a) => {
      const delivery = await this.webhooks.redeliver(a, deliveryId);
      this.seeOther(res, `/settings/w/${slug}/webhooks/${delivery.webhookId}`);
    });
  }

  @Get('w/:slug/audit')
  async audit(
    @Param('slug') slug: string,
    @Query() query: Record<string, unknown>,
    @Req() req: Request,
    @Res() res: Response,
  ) {
    await this.page(req, res, slug, 'admin', async (chrome, _s, a) => {
      const page = pageNumber(query);
      const filter = {
        actor: text(query.actor).slice(0, 200) || undefined,
        action: text(query.action).slice(0, 100) || undefined,
        page,
      };
      this.send(res, 200, auditPage({ ...chrome, current: 'audit' }, await this.settings.auditLog(a, filter), filter));
    });
  }

  @Get('w/:slug/plan')
  async plan(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'owner', async (chrome) =>
      this.send(res, 200, planPage({ ...chrome, current: 'plan' }, { errors: {} })),
    );
  }

  @Post('w/:slug/plan')
  @RouteConfig(FORM)
  async setPlan(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'owner', async (_c, _s, a) => {
      const plan = text((req.body as Body).plan);
      if (!(PLANS as readonly string[]).includes(plan)) throw notFound();
      await this.settings.setPlan(a, plan as Plan);
      this.seeOther(res, `/settings/w/${slug}/plan`);
    });
  }

  @Post('w/:slug/embed-origins')
  @RouteConfig(FORM)
  async setOrigins(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response) {
    await this.page(req, res, slug, 'owner', async (chrome, _s, a) => {
      const raw = text((req.body as Body).origins).slice(0, 5000);
      try {
        await this.settings.setEmbedOrigins(a, raw.split(/\s+/).filter(Boolean));
      } catch (err) {
        if (err instanceof ApiError)
          return this.send(
            res,
            400,
            planPage({ ...chrome, current: 'plan' }, { errors: { origins: err.message }, origins: raw }),
          );
        throw err;
      }
      this.seeOther(res, `/settings/w/${slug}/plan`);
    });
  }

  // --- plumbing ----------------------------------------------------------------------------------

  private async session(req: Request): Promise<Session | undefined> {
    return this.sessions.find(readCookie(req.headers.cookie, SESSION_COOKIE));
  }

  /**
   * Runs a signed-in page: a signed-out visitor is sent to sign in (and back here after); a POST
   * without the session's CSRF token changes nothing (403); the workspace, when there is one,
   * must be one of the person's with at least `minimum` (else 404 or 403).
   */
  private async page(
    req: Request,
    res: Response,
    slug: string | undefined,
    minimum: Role | undefined,
    fn: (chrome: Chrome, session: Session, access: Access) => Promise<unknown>,
  ): Promise<void> {
    const session = await this.session(req);
    if (!session) {
      const next = req.method === 'GET' ? req.url : '/settings';
      return this.seeOther(res, `/settings/sign-in?next=${encodeURIComponent(safeNext(next))}`);
    }
    let chrome: Chrome = { email: session.email, csrf: session.csrf };
    try {
      if (req.method === 'POST' && !this.sessions.csrfValid(session, (req.body as Body | undefined)?.csrf)) {
        return this.send(
          res,
          403,
          messagePage(
            'Request refused',
            'This form expired or was tampered with (its security token is missing or wrong). Reload the page and try again.',
            chrome,
          ),
        );
      }
      const access = slug ? await this.settings.access(session, slug, minimum) : (undefined as unknown as Access);
      chrome = { ...chrome, access: slug ? access : undefined, current: req.url.split('/')[4]?.split('?')[0] };
      await fn(chrome, session, access);
    } catch (err) {
      if (!(err instanceof PageError)) throw err;
      this.send(res, err.status, messagePage(err.title, err.message, chrome));
    }
  }

  private renderTokens(
    res: Response,
    status: number,
    chrome: Chrome,
    a: Access,
    errors: FieldErrors,
    values: Parameters<typeof tokensPage>[2]['values'],
  ) {
    return this.settings.listTokens(a).then((tokens) =>
      this.send(
        res,
        status,
        tokensPage({ ...chrome, current: 'tokens' }, tokens, {
          nonce: this.sessions.nonce(),
          roles: this.settings.grantable(a),
          errors,
          values,
        }),
      ),
    );
  }

  private renderMembers(
    res: Response,
    status: number,
    chrome: Chrome,
    a: Access,
    errors: FieldErrors,
    values: { email?: string; role?: string },
    notice?: string,
  ) {
    return this.settings.listMembers(a).then((members) =>
      this.send(
        res,
        status,
        membersPage({ ...chrome, current: 'members' }, members, {
          roles: this.settings.grantable(a),
          errors,
          values,
          notice,
        }),
      ),
    );
  }

  private renderWebhooks(
    res: Response,
    status: number,
    chrome: Chrome,
    a: Access,
    errors: FieldErrors,
    values: Parameters<typeof webhooksPage>[2]['values'],
  ) {
    return this.webhooks
      .list(a)
      .then((list) =>
        this.send(
          res,
          status,
          webhooksPage({ ...chrome, current: 'webhooks' }, list, { nonce: this.sessions.nonce(), errors, values }),
        ),
      );
  }

  private linkUrl(token: string): string {
    return `${this.config.publicUrl}/settings/set-password/${token}`;
  }

  /** The sign-in form's CSRF token: an HMAC of a random cookie of this browser (there is no session yet). */
  private async signInCsrf(req: Request, res: Response): Promise<string> {
    let value = readCookie(req.headers.cookie, SIGN_IN_COOKIE);
    if (!value || !/^[A-Za-z0-9_-]{43}$/.test(value)) {
      value = randomBytes(32).toString('base64url');
      res.header('Set-Cookie', this.cookie(SIGN_IN_COOKIE, value, 3600, '/settings'));
    }
    return this.oauth.csrfFor(`settings:${value}`);
  }

  private cookie(name: string, value: string, maxAgeSeconds: number, path = '/'): string {
    return cookieHeader(name, value, { secure: this.config.publicUrl.startsWith('https://'), maxAgeSeconds, path });
  }

  /** 303 See Other to a page of this service, with the settings pages' headers: the answer to every form post. */
  private seeOther(res: Response, path: string): void {
    res.status(303).headers(HEADERS).redirect(path, 303);
  }

  private send(res: Response, status: number, html: string) {
    res.status(status).headers(HEADERS).type('text/html; charset=utf-8').send(html);
  }
}

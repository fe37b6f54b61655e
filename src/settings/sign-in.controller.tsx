import { Get, Param, Post, Query, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { randomBytes } from 'node:crypto';
import { MIN_PASSWORD_LENGTH } from '../oauth/passwords';
import { OAuthService } from '../oauth/oauth.service';
import { readCookie, SESSION_ABSOLUTE_HOURS, SESSION_COOKIE, SessionsService } from './sessions.service';
import { sendScript } from '../common/html';
import { COPY_SCRIPT } from './settings.script';
import { badText, Body, FORM, safeNext, SettingsHttp, SettingsPages, text } from './settings-http';
import { Bare, CsrfField, Field, FieldErrors, messagePage, Notice, render, Summary } from './ui';

const SIGN_IN_COOKIE = 'fw_signin';
const REFUSED =
  'This form expired or was tampered with (its security token is missing or wrong). Reload the page and try again.';
const DEAD_LINK =
  'It was used already, has expired (links work for 24 hours), or was replaced by a newer one. Ask the admin of the workspace that invited you for a new link, or your operator.';

function SignInPage(props: { csrf: string; next: string; email?: string; errors?: FieldErrors; notice?: string }) {
  const errors = props.errors ?? {};
  return (
    <Bare title="Sign in to Formwork">
      <h1>Sign in to Formwork</h1>
      <Notice text={props.notice} />
      <Summary errors={errors} />
      <form method="post" action="/settings/sign-in">
        <CsrfField csrf={props.csrf} />
        <input type="hidden" name="next" value={props.next} />
        <Field
          id="email"
          label="Email"
          errors={errors}
          control={(a) => (
            <input type="email" {...a} defaultValue={props.email ?? ''} autoComplete="username" required />
          )}
        />
        <Field
          id="password"
          label="Password"
          errors={errors}
          control={(a) => <input type="password" {...a} autoComplete="current-password" required />}
        />
        <button type="submit">Sign in</button>
      </form>
    </Bare>
  );
}

function SetPasswordPage(props: { token: string; email: string; errors?: FieldErrors }) {
  const errors = props.errors ?? {};
  return (
    <Bare title="Set your password">
      <h1>Set your password</h1>
      <p>
        For <strong>{props.email}</strong>. This link works once.
      </p>
      <Summary errors={errors} />
      <form method="post" action={`/settings/set-password/${props.token}`}>
        <Field
          id="password"
          label="Password"
          errors={errors}
          hint="At least 10 characters."
          control={(a) => <input type="password" {...a} autoComplete="new-password" required />}
        />
        <button type="submit">Set password</button>
      </form>
    </Bare>
  );
}

/**
 * Signing in and out, setting a first password from a link, and the pages' one script file.
 * Workspace settings in the browser: docs/settings.md. Public to the API's bearer-token guard:
 * these pages authenticate with the session cookie, and every POST carries a CSRF token.
 */
@SettingsPages('')
export class SignInController {
  constructor(
    private readonly http: SettingsHttp,
    private readonly sessions: SessionsService,
    private readonly oauth: OAuthService,
  ) {}

  @Get('assets/settings.js')
  script(@Res() res: Response) {
    sendScript(res, COPY_SCRIPT);
  }

  @Get('sign-in')
  async signInForm(
    @Query('next') next: string,
    @Query('done') done: string,
    @Req() req: Request,
    @Res() res: Response,
  ) {
    const csrf = await this.signInCsrf(req, res);
    const notice = done ? 'Your password is set. Sign in with it.' : undefined;
    this.http.send(res, 200, render(<SignInPage csrf={csrf} next={safeNext(next)} notice={notice} />));
  }

  @Post('sign-in')
  @RouteConfig(FORM)
  async signIn(@Req() req: Request, @Res() res: Response) {
    const body = (req.body ?? {}) as Body;
    const next = safeNext(body.next);
    const email = text(body.email);
    const password = typeof body.password === 'string' ? body.password : '';
    const cookie = readCookie(req.headers.cookie, SIGN_IN_COOKIE);
    if (!cookie || typeof body.csrf !== 'string' || !(await this.oauth.csrfValid(`settings:${cookie}`, body.csrf)))
      return this.http.send(res, 403, messagePage('Request refused', REFUSED));
    const errors: FieldErrors = {};
    if (!email || badText(email, 320)) errors.email = 'Enter your email.';
    if (!password || password.length > 1024) errors.password = 'Enter your password.';
    if (!Object.keys(errors).length) {
      const result = await this.oauth.signIn(email, password);
      if (result.ok) {
        const value = await this.sessions.start(result.userId, readCookie(req.headers.cookie, SESSION_COOKIE));
        res.header('Set-Cookie', [
          this.http.cookie(SESSION_COOKIE, value, SESSION_ABSOLUTE_HOURS * 3600),
          this.http.cookie(SIGN_IN_COOKIE, '', 0),
        ]);
        return this.http.seeOther(res, next);
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
    const csrf = await this.signInCsrf(req, res);
    this.http.send(res, status, render(<SignInPage csrf={csrf} next={next} email={email} errors={errors} />));
  }

  /** Ends every session of the person, here and on every instance, and their OAuth sign-in too. */
  @Post('sign-out')
  @RouteConfig(FORM)
  async signOut(@Req() req: Request, @Res() res: Response) {
    const session = await this.http.session(req);
    if (session && this.sessions.csrfValid(session, (req.body as Body)?.csrf))
      await this.sessions.endAll(session.userId);
    else if (session)
      return this.http.send(
        res,
        403,
        messagePage('Request refused', 'This form expired or was tampered with. Reload the page and try again.'),
      );
    res.header('Set-Cookie', this.http.cookie(SESSION_COOKIE, '', 0));
    this.http.seeOther(res, '/settings/sign-in');
  }

  @Get('set-password/:token')
  async setPasswordForm(@Param('token') token: string, @Res() res: Response) {
    const person = await this.sessions.linkUser(token);
    if (!person) return this.http.send(res, 404, messagePage('This link does not work', DEAD_LINK));
    this.http.send(res, 200, render(<SetPasswordPage token={token} email={person.email} />));
  }

  /** The link is its own proof (a secret only its holder knows), so the form needs no other token. */
  @Post('set-password/:token')
  @RouteConfig(FORM)
  async setPassword(@Param('token') token: string, @Req() req: Request, @Res() res: Response) {
    const person = await this.sessions.linkUser(token);
    if (!person) return this.http.send(res, 404, messagePage('This link does not work', DEAD_LINK));
    const password = typeof (req.body as Body)?.password === 'string' ? ((req.body as Body).password as string) : '';
    if (password.length < MIN_PASSWORD_LENGTH || password.length > 1024) {
      const errors = { password: `Use at least ${MIN_PASSWORD_LENGTH} characters (and at most 1024).` };
      return this.http.send(res, 400, render(<SetPasswordPage token={token} email={person.email} errors={errors} />));
    }
    const used = await this.sessions.useLink(token);
    if (used?.userId !== person.userId)
      return this.http.send(res, 404, messagePage('This link does not work', 'It was used already.'));
    // Bound to the workspace whose admin was shown the link (null: the operator's CLI printed it).
    await this.oauth.setPassword(person.email, password, used.workspaceId);
    await this.sessions.endAll(person.userId); // whoever held the old password is signed out
    this.http.seeOther(res, '/settings/sign-in?done=1');
  }

  /** The sign-in form's CSRF token: an HMAC of a random cookie of this browser (there is no session yet). */
  private async signInCsrf(req: Request, res: Response): Promise<string> {
    let value = readCookie(req.headers.cookie, SIGN_IN_COOKIE);
    if (!value || !/^[A-Za-z0-9_-]{43}$/.test(value)) {
      value = randomBytes(32).toString('base64url');
      res.header('Set-Cookie', this.http.cookie(SIGN_IN_COOKIE, value, 3600, '/settings'));
    }
    return this.oauth.csrfFor(`settings:${value}`);
  }
}

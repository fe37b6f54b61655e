import { Get, Post, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { MIN_PASSWORD_LENGTH } from '../oauth/passwords';
import { OAuthService } from '../oauth/oauth.service';
import { SESSION_ABSOLUTE_HOURS, SESSION_COOKIE, SessionsService } from './sessions.service';
import { FORM, SettingsHttp, SettingsPages } from './settings-http';
import { SettingsService } from './settings.service';
import { Chrome, Field, FieldErrors, Layout, Notice, PostForm, render, Summary } from './ui';

type Workspace = Awaited<ReturnType<SettingsService['workspacesOf']>>[number];

function HomePage({ chrome, workspaces }: { chrome: Chrome; workspaces: Workspace[] }) {
  return (
    <Layout title="Workspaces" chrome={{ ...chrome, current: 'home' }}>
      <h1>Your workspaces</h1>
      {workspaces.length ? (
        <ul>
          {workspaces.map((w) => (
            <li key={w.slug}>
              <a href={`/settings/w/${w.slug}`}>{w.name}</a>{' '}
              <span className="desc">
                ({w.slug}, you are {w.role})
              </span>
            </li>
          ))}
        </ul>
      ) : (
        <p>You are not a member of any workspace yet. Ask a workspace admin to add you.</p>
      )}
    </Layout>
  );
}

const password = (autoComplete: string) => (x: object) => (
  <input type="password" {...x} autoComplete={autoComplete} required />
);

/**
 * The account page; `mustChange`: the person signed in with a password that works once (the
 * demo owner's printed one), and this page, asking for a new one, is the only one they may see.
 */
function AccountPage(props: { chrome: Chrome; errors: FieldErrors; notice?: string; mustChange?: boolean }) {
  const { chrome, errors, notice, mustChange } = props;
  return (
    <Layout title={mustChange ? 'Choose a new password' : 'Account'} chrome={{ ...chrome, current: 'account' }}>
      <h1>{mustChange ? 'Choose a new password' : 'Account'}</h1>
      <p>
        Signed in as <strong>{chrome.email}</strong>.
      </p>
      {mustChange ? (
        <p className="notice" role="note">
          The password printed at the first start works once: choose your own before anything else. The printed one
          stops working then.
        </p>
      ) : null}
      <Notice text={notice} />
      <Summary errors={errors} />
      {mustChange ? null : <h2>Change password</h2>}
      <PostForm action="/settings/account/password" csrf={chrome.csrf}>
        <Field
          id="current"
          label="Current password"
          errors={errors}
          hint={mustChange ? 'The one you signed in with.' : undefined}
          control={password('current-password')}
        />
        <Field
          id="password"
          label="New password"
          errors={errors}
          hint="At least 10 characters."
          control={password('new-password')}
        />
        <button type="submit">Change password</button>
      </PostForm>
    </Layout>
  );
}

/** The person's own pages: their workspaces and their account (password). */
@SettingsPages('')
export class AccountController {
  constructor(
    private readonly http: SettingsHttp,
    private readonly sessions: SessionsService,
    private readonly settings: SettingsService,
    private readonly oauth: OAuthService,
  ) {}

  @Get()
  home(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', async ({ chrome, session }) => {
      const workspaces = await this.settings.workspacesOf(session.userId);
      this.http.send(res, 200, render(<HomePage chrome={chrome} workspaces={workspaces} />));
    });
  }

  /** A workspace opens on its first section the role may see. */
  @Get('w/:slug')
  workspace(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', ({ access, base }) =>
      this.http.seeOther(res, `${base}/${access.role === 'admin' || access.role === 'owner' ? 'tokens' : 'apps'}`),
    );
  }

  @Get('account')
  account(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', ({ chrome, session }) =>
      this.http.send(
        res,
        200,
        render(<AccountPage chrome={chrome} errors={{}} mustChange={session.mustChangePassword} />),
      ),
    );
  }

  @Post('account/password')
  @RouteConfig(FORM)
  changePassword(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', async ({ chrome, session, body }) => {
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
      if (!errors.password && next === current) errors.password = 'Choose a password other than the current one.';
      if (Object.keys(errors).length)
        return this.http.send(
          res,
          400,
          render(<AccountPage chrome={chrome} errors={errors} mustChange={session.mustChangePassword} />),
        );
      await this.oauth.setPassword(session.email, next);
      // Other browsers signed in with the old password are signed out; this one gets a new session.
      await this.sessions.endAll(session.userId);
      const value = await this.sessions.start(session.userId);
      res.header('Set-Cookie', this.http.cookie(SESSION_COOKIE, value, SESSION_ABSOLUTE_HOURS * 3600));
      // The once-only password replaced: on to the workspaces, which were held back until now.
      if (session.mustChangePassword) return this.http.seeOther(res, '/settings', 'password-chosen');
      const fresh = (await this.sessions.find(value))!;
      const notice = 'Your password is changed. Other browsers were signed out.';
      this.http.send(
        res,
        200,
        render(<AccountPage chrome={{ ...chrome, csrf: fresh.csrf }} errors={{}} notice={notice} />),
      );
    });
  }
}

/** The authorization server's interaction pages: sign in, choose a workspace, allow or deny the scopes. */
import { Controller, Get, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { formPost } from '../common/http/body';
import { APP_CONFIG, AppConfig } from '../config/config';
import {
  cookieHeader,
  readCookie,
  SESSION_ABSOLUTE_HOURS,
  SESSION_COOKIE,
  SessionsService,
} from '../settings/sessions.service';
import { Public } from '../auth/public.decorator';
import { isScope } from '../common/access/roles';
import { clientLabel, isClientDocumentId } from './client-metadata-document';
import { consentPage, errorPage, PAGE_HEADERS, pageHeadersFor, signInPage } from './interaction.pages';
import { OAuthProviderRef, Provider } from './oauth-provider';
import { OAuthService } from './oauth.service';

/** The sign-in and consent forms: a few short fields. */
const SIGN_IN_FORM = formPost(20 * 1024, 20);

type Details = Awaited<ReturnType<Provider['interactionDetails']>>;

/**
 * The pages of an authorization: sign in, then choose a workspace and allow (or deny) the scopes.
 * Every POST carries the interaction's CSRF token; the interaction itself is bound to a cookie
 * the authorization server set, so another site can neither read nor replay it.
 */
@Public()
@ApiExcludeController()
@Controller('oauth/interaction/:uid')
export class InteractionController {
  constructor(
    private readonly ref: OAuthProviderRef,
    private readonly oauth: OAuthService,
    private readonly sessions: SessionsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get()
  async show(@Param('uid') uid: string, @Req() req: Request, @Res() res: Response) {
    const details = await this.details(uid, req, res);
    if (!details) return;
    // One sign-in serves both: a person signed in to the settings skips this sign-in.
    if (details.prompt.name === 'login') {
      const session = await this.sessions.find(readCookie(req.headers.cookie, SESSION_COOKIE));
      if (session && !session.mustChangePassword)
        return this.provider.interactionFinished(
          req.raw,
          res.raw,
          { login: { accountId: session.userId } },
          { mergeWithLastSubmission: false },
        );
    }
    return this.render(res, 200, details);
  }

  @Post('login')
  @RouteConfig(SIGN_IN_FORM)
  async login(@Param('uid') uid: string, @Req() req: Request, @Res() res: Response) {
    const details = await this.details(uid, req, res, 'login');
    if (!details) return;
    const { email, password } = (req.body ?? {}) as { email?: string; password?: string };
    if (
      typeof email !== 'string' ||
      typeof password !== 'string' ||
      !email ||
      !password ||
      email.length > 320 ||
      password.length > 1024 ||
      (email + password).includes('\u0000')
    ) {
      return this.render(res, 400, details, { email, error: 'Enter your email and password.' });
    }
    const result = await this.oauth.signIn(email, password);
    if (!result.ok) {
      return result.reason === 'locked'
        ? this.render(res, 429, details, {
            email,
            error: `Too many attempts for this email: try again in ${result.minutes} minute(s).`,
          })
        : this.render(res, 401, details, { email, error: 'Email or password is wrong.' });
    }
    // A password that works once (the demo owner's printed one) connects no app: it only leads to
    // choosing a new one, on the settings pages.
    if (result.mustChange)
      return this.render(res, 403, details, {
        email,
        error:
          'This password works once, to choose your own: sign in at /settings first, then connect the app with it.',
      });
    // ... and signs in to the settings too (a new session id: rotated at every sign-in).
    const cookie = await this.sessions.start(result.userId, readCookie(req.headers.cookie, SESSION_COOKIE));
    res.raw.setHeader(
      'Set-Cookie',
      cookieHeader(SESSION_COOKIE, cookie, {
        secure: this.config.publicUrl.startsWith('https://'),
        maxAgeSeconds: SESSION_ABSOLUTE_HOURS * 3600,
      }),
    );
    await this.provider.interactionFinished(
      req.raw,
      res.raw,
      { login: { accountId: result.userId } },
      { mergeWithLastSubmission: false },
    );
  }

  @Post('confirm')
  @RouteConfig(SIGN_IN_FORM)
  async confirm(@Param('uid') uid: string, @Req() req: Request, @Res() res: Response) {
    const details = await this.details(uid, req, res, 'consent');
    if (!details) return;
    const accountId = details.session!.accountId;
    const workspaces = await this.oauth.workspacesOf(accountId);
    const chosen = workspaces.find((w) => w.slug === (req.body as { workspace?: string })?.workspace);
    if (!chosen) return this.render(res, 400, details, { error: 'Choose one of your workspaces.' });

    const provider = this.provider;
    const clientId = String(details.params.client_id);
    // Extend the session's grant only when it is for the same workspace and still live; a grant
    // never moves to another workspace (its tokens would follow it).
    const reusable =
      details.grantId && (await this.oauth.grantUsableFor(details.grantId, chosen.id))
        ? await provider.Grant.find(details.grantId)
        : undefined;
    const grant = reusable ?? new provider.Grant({ accountId, clientId });
    const prompt = details.prompt.details as {
      missingOIDCScope?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    const requested = (details.params.scope ? String(details.params.scope).split(' ') : []).filter(isScope);
    // Formwork's scopes are advertised as provider scopes too, so a grant holds them twice: as OIDC
    // scopes and as scopes of the resource. A new grant gets all that was asked for, an extended
    // one what it lacked.
    const oidcScopes = reusable
      ? (prompt.missingOIDCScope ?? [])
      : String(details.params.scope ?? '')
          .split(' ')
          .filter(Boolean);
    if (oidcScopes.length) grant.addOIDCScope(oidcScopes.join(' '));
    const resources = Object.keys(prompt.missingResourceScopes ?? {});
    for (const resource of resources.length ? resources : [String(details.params.resource ?? '')].filter(Boolean)) {
      // A new grant gets everything asked for, not only what a previous grant lacked.
      grant.addResourceScope(
        resource,
        [...new Set([...(prompt.missingResourceScopes?.[resource] ?? []), ...(reusable ? [] : requested)])].join(' '),
      );
    }
    const scopes = new Set<string>();
    for (const list of Object.values((grant as unknown as { resources?: Record<string, string> }).resources ?? {}))
      list
        .split(' ')
        .filter(isScope)
        .forEach((s) => scopes.add(s));
    const grantId = await grant.save();
    const client = await findClient(provider, clientId);
    await this.oauth.recordGrant({
      grantId,
      workspaceId: chosen.id,
      userId: accountId,
      clientId,
      // A client metadata document's client is named with the host of its document, as on the consent page.
      clientName: isClientDocumentId(clientId)
        ? clientLabel(clientId, client?.clientName)
        : (client?.clientName ?? null),
      scopes: [...scopes],
    });
    await provider.interactionFinished(req.raw, res.raw, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  @Post('abort')
  @RouteConfig(SIGN_IN_FORM)
  async abort(@Param('uid') uid: string, @Req() req: Request, @Res() res: Response) {
    const details = await this.details(uid, req, res);
    if (!details) return;
    await this.provider.interactionFinished(
      req.raw,
      res.raw,
      { error: 'access_denied', error_description: 'The person did not allow access.' },
      { mergeWithLastSubmission: false },
    );
  }

  private get provider(): Provider {
    if (!this.ref.provider) throw new Error('the OAuth authorization server is not mounted');
    return this.ref.provider;
  }

  /**
   * The interaction behind the cookie, checked against the URL, the expected step and (for a
   * POST) the CSRF token; on a failure the error page is sent and undefined returned.
   */
  private async details(
    uid: string,
    req: Request,
    res: Response,
    step?: 'login' | 'consent',
  ): Promise<Details | undefined> {
    if (!this.ref.provider) {
      send(res, 503, errorPage('Sign-in unavailable', 'The authorization server is not running on this instance.'));
      return undefined;
    }
    let details: Details;
    try {
      details = await this.provider.interactionDetails(req.raw, res.raw);
    } catch {
      send(
        res,
        400,
        errorPage(
          'This sign-in has expired',
          'Its session is missing or has expired. Go back to the app and connect again.',
        ),
      );
      return undefined;
    }
    if (details.uid !== uid) {
      send(
        res,
        400,
        errorPage(
          'This sign-in has expired',
          'This page belongs to another sign-in. Go back to the app and connect again.',
        ),
      );
      return undefined;
    }
    if (req.method === 'POST' && !(await this.oauth.csrfValid(uid, (req.body as { csrf?: unknown })?.csrf))) {
      send(
        res,
        403,
        errorPage(
          'Request refused',
          'This form expired or was tampered with (its security token is missing or wrong). Reload the page and try again.',
        ),
      );
      return undefined;
    }
    if (step && details.prompt.name !== step) {
      await this.render(res, 409, details, { error: 'This step is already done; continue below.' });
      return undefined;
    }
    return details;
  }

  private async render(res: Response, status: number, details: Details, opts: { email?: string; error?: string } = {}) {
    const csrf = await this.oauth.csrfFor(details.uid);
    const clientId = String(details.params.client_id);
    const client = await findClient(this.provider, clientId);
    // "Example Agent (from agent.example)" for a client metadata document: where the name comes from.
    const clientName = clientLabel(clientId, client?.clientName);
    // oidc-provider has checked the redirect URI against the client's (and filled it in when the client has only one).
    const redirectUri = String(details.params.redirect_uri ?? client?.redirectUris?.[0] ?? '');
    const headers = pageHeadersFor(redirectUri);
    if (details.prompt.name === 'login')
      return send(res, status, signInPage(details.uid, csrf, clientName, opts), headers);
    // Everything the app asks for: the person may pick a workspace where none of it is granted yet.
    const scopes = String(details.params.scope ?? '')
      .split(' ')
      .filter(isScope);
    const workspaces = await this.oauth.workspacesOf(details.session!.accountId);
    if (workspaces.length === 0) {
      return send(
        res,
        403,
        errorPage(
          'No workspace',
          'Your account is not a member of any workspace, so there is nothing to connect. Ask a workspace admin to add you.',
        ),
      );
    }
    send(res, status, consentPage(details.uid, csrf, clientName, scopes, workspaces, redirectUri, opts.error), headers);
  }
}

/**
 * The client, or undefined when it cannot be loaded now (a client metadata document that the
 * client's server no longer serves): the pages then name it by its id.
 */
async function findClient(provider: Provider, clientId: string) {
  try {
    return await provider.Client.find(clientId);
  } catch {
    return undefined;
  }
}

function send(res: Response, status: number, html: string, headers: Record<string, string> = PAGE_HEADERS) {
  res.status(status).headers(headers).type('text/html; charset=utf-8').send(html);
}

/** The built-in OAuth 2.1 authorization server, built on oidc-provider and mounted on the app. */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Configuration, default as ProviderType } from 'oidc-provider';
import type { DataSource } from 'typeorm';
import { SCOPES } from '../common/access/roles';
import { nestingDepthDetails } from '../common/validation/schema-validator';
import type { AppConfig } from '../config/config';
import { ClientDocumentError, fetchClientDocument, rememberingRefusals } from './client-metadata-document';
import { errorPage, PAGE_CSP, PAGE_HEADERS } from './interaction.pages';
import {
  DEFAULT_RESOURCE,
  docsClient,
  MAX_CLIENT_NAME_LENGTH,
  MAX_REGISTRATION_BYTES,
  OAUTH_ROUTES,
  resourceIdentifiers,
} from './oauth-config';
import { type ClientDocuments, pgAdapter } from './pg-adapter';
import { loopbackRedirectMatches } from './redirect-uris';
import { sharedSecret } from './shared-secret';

export type Provider = ProviderType;

/**
 * Holds the authorization server once it is built (the app runs without it where it is not
 * mounted). Services built before it (Nest's providers) hear of it through onMount.
 */
export class OAuthProviderRef {
  private current?: Provider;
  private readonly mounted: Array<(provider: Provider) => void> = [];

  get provider(): Provider | undefined {
    return this.current;
  }

  set provider(provider: Provider | undefined) {
    this.current = provider;
    if (provider) for (const listener of this.mounted) listener(provider);
  }

  /** Calls `listener` with the server when it is mounted (at once if it already is). */
  onMount(listener: (provider: Provider) => void): void {
    this.mounted.push(listener);
    if (this.current) listener(this.current);
  }
}

/**
 * The built-in OAuth 2.1 authorization server, on oidc-provider (certified; ESM-only, so loaded
 * with import() at start and never by the jest suite). Authorization code with PKCE S256 for every
 * client, exact redirect URIs, open dynamic client registration (public clients only: no client
 * ever gets a secret), resource indicators limited to this service, refresh token rotation with
 * reuse detection (oidc-provider revokes the whole grant when a spent refresh token comes back),
 * RFC 7009 revocation, client ids that are URLs of client metadata documents (CIMD: oidc-provider
 * 9 has them, but needs a newer Node than the quick start's 20, so they are added here: see
 * client-metadata-document.ts), loopback redirect URIs on any port. Nothing else is switched on (no PAR, no end-session endpoint), so the
 * metadata lists only what works. State lives in PostgreSQL through the adapter.
 */
export async function createOAuthProvider(config: AppConfig, db: DataSource): Promise<Provider> {
  const { default: Provider, errors } = await import('oidc-provider');
  const jwks = await sharedSecret(db, 'jwks', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    return {
      keys: [
        { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' },
      ],
    };
  });
  const cookieKeys = await sharedSecret(db, 'cookie-keys', () => [randomBytes(32).toString('base64url')]);
  const resources = new Set(resourceIdentifiers(config));
  const secure = config.publicUrl.startsWith('https://');
  // A document that cannot be used is the client's error (invalid_client, saying why), never a 500.
  const fetchDocument = rememberingRefusals((id: string) =>
    fetchClientDocument(id, { allowPrivate: config.oauth.cimdAllowPrivateUrls }),
  );
  const documents: ClientDocuments = (id) =>
    fetchDocument(id).catch((err: unknown) => {
      throw err instanceof ClientDocumentError ? new errors.InvalidClient(err.message) : err;
    });

  const configuration: Configuration = {
    adapter: pgAdapter(db, documents) as unknown as Configuration['adapter'],
    // Dynamically registered clients (public, expiring after 30 days unused), and the one built-in
    // client of /docs: a static client of the configuration, so it exists on every instance from
    // the start, never expires, and is not stored.
    clients: [docsClient(config)],
    clientAuthMethods: ['none'],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    responseTypes: ['code'],
    pkce: { methods: ['S256'], required: () => true },
    scopes: ['openid', 'offline_access', ...SCOPES],
    claims: { openid: ['sub'] },
    routes: { ...OAUTH_ROUTES },
    interactions: { url: (_ctx, interaction) => `/oauth/interaction/${interaction.uid}` },
    cookies: {
      keys: cookieKeys,
      long: { signed: true, httpOnly: true, sameSite: 'lax', secure },
      short: { signed: true, httpOnly: true, sameSite: 'lax', secure },
    },
    jwks: jwks as Configuration['jwks'],
    // Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document §4): a client_id may be an https URL.
    discovery: { client_id_metadata_document_supported: true },
    features: {
      devInteractions: { enabled: false },
      registration: {
        enabled: true,
        // Read (GET /oauth/register/{id}) needs the registration access token; nothing uses it, and it
        // would be one more row per registration. (The option is read here; @types/oidc-provider misplaces it.)
        ...({ issueRegistrationAccessToken: false } as object),
        // Called once per registration, after the body is parsed and before it is validated: the place to bound and normalize it.
        idFactory: (ctx) => {
          publicRegistration(ctx.oidc.body as Record<string, unknown>, errors);
          return randomBytes(16).toString('base64url');
        },
        // Reached only when the metadata still needs a secret (an HMAC or symmetric algorithm): refused, no secret is ever issued.
        secretFactory: () => {
          throw new errors.InvalidClientMetadata(
            'only public clients can register here: leave out HMAC (HS*) and symmetric encryption algorithms',
          );
        },
      },
      revocation: { enabled: true },
      userinfo: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => DEFAULT_RESOURCE(config),
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (!resources.has(indicator))
            throw new errors.InvalidTarget(`this server issues tokens only for ${[...resources].join(', ')}`);
          return { scope: SCOPES.join(' '), audience: indicator, accessTokenTTL: 3600, accessTokenFormat: 'opaque' };
        },
      },
    },
    // Refresh tokens for every client allowed the grant, without requiring offline_access.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // Every refresh rotates the refresh token; a spent one coming back revokes the grant.
    rotateRefreshToken: true,
    ttl: {
      AccessToken: 3600,
      AuthorizationCode: 60,
      Interaction: 3600,
      Session: 14 * 24 * 3600,
      Grant: 365 * 24 * 3600,
      RefreshToken: 30 * 24 * 3600,
    },
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    renderError: async (ctx, out) => {
      ctx.set(PAGE_HEADERS);
      ctx.type = 'html';
      ctx.body = errorPage(String(out.error), String(out.error_description ?? ''));
    },
  };
  const provider = new Provider(config.publicUrl, configuration);
  provider.proxy = config.trustProxy !== false;
  allowAppSchemes(provider);
  allowLoopbackPorts(provider);

  // An error of the authorization request itself (GET or POST /oauth/authorize: no PKCE, a resource
  // or scope refused, prompt=none without a session...) comes before the person has seen any
  // Formwork page. oidc-provider would redirect it to the client's redirect URI, and anyone may
  // register a client: that makes /oauth/authorize an open redirector (OAuth 2.1 §7.12.2). Such
  // errors are shown on our error page instead. Errors after our sign-in or consent page (the
  // resume route, /oauth/authorize/{uid}: "Deny" is access_denied there) still go back to the client.
  provider.on('authorization.error', (ctx: { state: Record<string, unknown> }, err: unknown) => {
    ctx.state.authorizationError = err;
  });
  provider.use(async (ctx, next) => {
    // Every answer: a strict CSP (oidc-provider appends its script hashes to script-src) and nosniff.
    ctx.set({ 'Content-Security-Policy': PAGE_CSP, 'X-Content-Type-Options': 'nosniff' });
    // A registration too large is refused before its body is read (a chunked one is measured once parsed).
    const length = Number(ctx.get('content-length'));
    if (ctx.method === 'POST' && ctx.path === OAUTH_ROUTES.registration && length > MAX_REGISTRATION_BYTES) {
      ctx.set('Cache-Control', 'no-store');
      ctx.status = 400;
      ctx.body = { error: 'invalid_client_metadata', error_description: tooLarge(length) };
      return;
    }
    await next();
    if ((ctx as { oidc?: { route?: string } }).oidc?.route === 'discovery')
      endpointsFromPublicUrl(ctx, config.publicUrl);
    // (The event fires only for errors meant for the client; server errors are rendered already.)
    const err = ctx.state.authorizationError as
      { statusCode?: number; message: string; error_description?: string } | undefined;
    if (err && (ctx as { oidc?: { route?: string } }).oidc?.route === 'authorization') {
      const description = (err.error_description ?? err.message).replace(/\.?$/, '.');
      ctx.remove('Location');
      ctx.set(PAGE_HEADERS);
      ctx.type = 'html';
      ctx.body = errorPage(
        `The app's request was refused (${err.message})`,
        `${description} Formwork did not send you back to the app.`,
      );
      // prompt=none errors carry 303 (they are meant as redirects): a page is a 400.
      ctx.status = err.statusCode && err.statusCode >= 400 ? err.statusCode : 400;
    }
    // 'none' is ignored next to a hash, but browsers warn about it.
    const csp = ctx.response.get('Content-Security-Policy');
    if (csp.includes("'sha256-")) ctx.set('Content-Security-Policy', csp.replace("script-src 'none' ", 'script-src '));
  });
  return provider;
}

/** How deep registration metadata may nest objects and arrays (a jwks needs 4 levels). */
const MAX_REGISTRATION_DEPTH = 16;

/**
 * RFC 7591 registration, bounded and made public: the metadata nests at most MAX_REGISTRATION_DEPTH
 * levels, its JSON is at most MAX_REGISTRATION_BYTES and the client name at most MAX_CLIENT_NAME_LENGTH characters (refused
 * with invalid_client_metadata, and nothing stored), and any token_endpoint_auth_method (missing,
 * client_secret_basic, client_secret_post, private_key_jwt...) is registered as "none", which the
 * answer states (RFC 7591 §3.2.1 lets the server replace a value). Agents that ask for a secret
 * method still work: they send no secret, and PKCE protects the code.
 */
function publicRegistration(body: Record<string, unknown>, errors: typeof import('oidc-provider').errors): void {
  // Before anything walks it (JSON.stringify would overflow the stack: a 500): real metadata nests a few levels.
  const [tooDeep] = nestingDepthDetails(body, MAX_REGISTRATION_DEPTH);
  if (tooDeep) throw new errors.InvalidClientMetadata(`${tooDeep.path.slice(1) || 'the metadata'} ${tooDeep.message}`);
  const size = Buffer.byteLength(JSON.stringify(body));
  if (size > MAX_REGISTRATION_BYTES) {
    throw new errors.InvalidClientMetadata(tooLarge(size));
  }
  if (typeof body.client_name === 'string' && body.client_name.length > MAX_CLIENT_NAME_LENGTH) {
    throw new errors.InvalidClientMetadata(
      `client_name is ${body.client_name.length} characters; at most ${MAX_CLIENT_NAME_LENGTH} are accepted`,
    );
  }
  body.token_endpoint_auth_method = 'none';
  delete body.token_endpoint_auth_signing_alg; // only means something with a JWT client authentication
}

/** Schemes a redirect URI may never use: they run code or read files in the browser. */
const UNSAFE_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:']);

/**
 * oidc-provider accepts only http(s) redirect URIs for web clients (the default application_type),
 * and for native ones only private-use schemes with a dot (RFC 8252 §7.1). MCP clients register
 * without an application_type and come back on their own scheme (Cursor: cursor://...), so such a
 * URI is accepted for any client, as long as it is a scheme of its own (not javascript:, data:...)
 * without a fragment; the rest is checked as before. The sign-in pages then allow that scheme in
 * their form-action (interaction.pages.ts).
 */
function allowAppSchemes(provider: import('oidc-provider').default): void {
  const schema = (provider.Client as unknown as { Schema: { prototype: Record<string, unknown> } }).Schema.prototype;
  const check = schema.redirectUris as (this: { invalidate(m: string): void }, uris?: string[], label?: string) => void;
  schema.redirectUris = function (
    this: { invalidate(m: string): void; redirect_uris: string[] },
    uris: string[] = this.redirect_uris,
    label = 'redirect_uris',
  ) {
    const own: string[] = [];
    const rest: string[] = [];
    for (const uri of uris) (/^[a-z][a-z0-9+.-]*:/i.test(uri) && !/^https?:/i.test(uri) ? own : rest).push(uri);
    for (const uri of own) {
      let url: URL | undefined;
      try {
        url = new URL(uri);
      } catch {
        url = undefined;
      }
      if (!url || UNSAFE_SCHEMES.has(url.protocol))
        this.invalidate(`${label} must only contain web uris or an app's own scheme`);
      else if (url.hash) this.invalidate(`${label} must not contain fragments`);
    }
    check.call(this, rest, label);
  };
}

/**
 * oidc-provider names its endpoints after the address the request came to, its issuer after
 * PUBLIC_URL: metadata read at http://127.0.0.1:3000 said issuer http://localhost:3000 with
 * endpoints on 127.0.0.1. Every endpoint is named from PUBLIC_URL, as the issuer is.
 */
function endpointsFromPublicUrl(ctx: { origin: string; body: unknown }, publicUrl: string): void {
  const body = ctx.body as Record<string, unknown> | undefined;
  if (!body || typeof body !== 'object') return;
  const seen = `${ctx.origin}/`;
  for (const [key, value] of Object.entries(body)) {
    if (typeof value === 'string' && value.startsWith(seen)) body[key] = `${publicUrl}/${value.slice(seen.length)}`;
  }
}

/**
 * RFC 8252 §7.3: a native app listens on an ephemeral port of the loopback interface, so
 * http://127.0.0.1:{any port}/path and http://[::1]:{any port}/path match a registered (or
 * documented, CIMD) loopback redirect URI with the same path, whatever the client's
 * application_type (oidc-provider allows it only for application_type native, which MCP clients
 * rarely register).
 */
function allowLoopbackPorts(provider: import('oidc-provider').default): void {
  const proto = provider.Client.prototype as unknown as {
    redirectUriAllowed(this: { redirectUris: string[] }, value: string): boolean;
  };
  const exact = proto.redirectUriAllowed;
  proto.redirectUriAllowed = function (value: string) {
    return exact.call(this, value) || loopbackRedirectMatches(this.redirectUris ?? [], value);
  };
}

const tooLarge = (bytes: number) =>
  `the registration is ${bytes} bytes; at most ${MAX_REGISTRATION_BYTES} are accepted`;

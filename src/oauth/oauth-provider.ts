import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Configuration, default as ProviderType } from 'oidc-provider';
import type { DataSource } from 'typeorm';
import { SCOPES } from '../common/access/roles';
import type { AppConfig } from '../config/config';
import { DEFAULT_RESOURCE, OAUTH_ROUTES, resourceIdentifiers } from './oauth-config';
import { pgAdapter } from './pg-adapter';
import { sharedSecret } from './shared-secret';

export type Provider = ProviderType;

/** Holds the authorization server once it is built (the app runs without it where it is not mounted). */
export class OAuthProviderRef {
  provider?: Provider;
}

/**
 * The built-in OAuth 2.1 authorization server, on oidc-provider (certified; ESM-only, so loaded
 * with import() at start and never by the jest suite). Authorization code with PKCE S256 for every
 * client, exact redirect URIs, open dynamic client registration (public clients), resource
 * indicators limited to this service, refresh token rotation with reuse detection (oidc-provider
 * revokes the whole grant when a spent refresh token comes back), RFC 7009 revocation. State lives
 * in PostgreSQL through the adapter.
 */
export async function createOAuthProvider(config: AppConfig, db: DataSource): Promise<Provider> {
  const { default: Provider, errors } = await import('oidc-provider');
  const jwks = await sharedSecret(db, 'jwks', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    return { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' }] };
  });
  const cookieKeys = await sharedSecret(db, 'cookie-keys', () => [randomBytes(32).toString('base64url')]);
  const resources = new Set(resourceIdentifiers(config));
  const secure = config.publicUrl.startsWith('https://');

  const configuration: Configuration = {
    adapter: pgAdapter(db) as unknown as Configuration['adapter'],
    clients: [],
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
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      revocation: { enabled: true },
      userinfo: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => DEFAULT_RESOURCE(config),
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (!resources.has(indicator)) throw new errors.InvalidTarget(`this server issues tokens only for ${[...resources].join(', ')}`);
          return { scope: SCOPES.join(' '), audience: indicator, accessTokenTTL: 3600, accessTokenFormat: 'opaque' };
        },
      },
    },
    // Refresh tokens for every client allowed the grant, without requiring offline_access.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
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
      ctx.type = 'html';
      const { errorPage } = await import('./interaction.pages');
      ctx.body = errorPage(String(out.error), String(out.error_description ?? ''));
    },
  };
  const provider = new Provider(config.publicUrl, configuration);
  provider.proxy = config.trustProxy !== false;
  return provider;
}

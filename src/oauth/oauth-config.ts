/** The authorization server's fixed settings: resource identifiers, scopes in words, routes and lifetimes. */
import { SCOPES } from '../common/access/roles';
import type { AppConfig } from '../config/config';

/** The resource identifiers a token may be issued for (RFC 8707): the tools API, the MCP connector, or the service. */
export function resourceIdentifiers(config: AppConfig): string[] {
  return [`${config.publicUrl}/api/v1`, `${config.publicUrl}/mcp`, config.publicUrl];
}

export const DEFAULT_RESOURCE = (config: AppConfig) => `${config.publicUrl}/api/v1`;

/** Scopes in plain words, for the consent page. */
export const SCOPE_WORDS: Record<(typeof SCOPES)[number], string> = {
  'forms:read': 'See your forms',
  'forms:write': 'Create, change, publish and delete forms',
  'responses:read': 'See responses',
  'responses:write': 'Add and delete responses',
  'webhooks:read': 'See webhook endpoints and their delivery logs',
  'webhooks:write': 'Create, change and delete webhook endpoints, which send your forms and responses to other sites',
};

export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  userinfo: '/oauth/me',
  end_session: '/oauth/session/end',
  introspection: '/oauth/introspect',
  code_verification: '/oauth/device',
  device_authorization: '/oauth/device/auth',
  pushed_authorization_request: '/oauth/par',
  backchannel_authentication: '/oauth/backchannel',
  challenge: '/oauth/challenge',
} as const;

/**
 * A registered client that has not been used at the authorization server (authorize, token,
 * revoke) for this many days is deleted; every use moves the date (stored at most once a day).
 * Its refresh tokens live as long, so a client idle that long holds nothing that still works.
 */
export const CLIENT_TTL_DAYS = 30;

/** Largest registration accepted (RFC 7591 metadata as JSON), and longest client name (shown on the consent page). */
export const MAX_REGISTRATION_BYTES = 10_000;
export const MAX_CLIENT_NAME_LENGTH = 200;

/** The built-in public client of Swagger UI's "Authorize" at /docs (a static client: never expires, nothing stored). */
export const DOCS_CLIENT_ID = 'formwork-api-docs';

export function docsClient(config: AppConfig) {
  return {
    client_id: DOCS_CLIENT_ID,
    client_name: 'Formwork API docs',
    token_endpoint_auth_method: 'none' as const,
    grant_types: ['authorization_code'],
    response_types: ['code' as const],
    redirect_uris: [`${config.publicUrl}/docs/oauth2-redirect.html`],
  };
}

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

/** The global authentication guard: the bearer credential of every non-public route, checked by the credential verifiers. */
import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { APP_CONFIG, AppConfig, resourceMetadataUrl } from '../config/config';
import { ApiError } from '../common/errors/api-error';
import { CREDENTIAL_VERIFIERS, CredentialVerifier, VerifyResult } from './credential-verifier';
import { IS_CREDENTIAL_OPTIONAL, IS_PUBLIC } from './public.decorator';

const DESCRIPTIONS: Record<Exclude<VerifyResult, { ok: true }>['reason'], { description: string; hint: string }> = {
  unknown: {
    description: 'The access token is not valid',
    hint: 'Check that you copied the whole token, including its fw_ prefix, or create a new one.',
  },
  revoked: {
    description: 'The access token was revoked',
    hint: 'Create a new token (or authorize again); revoked tokens never work again.',
  },
  expired: { description: 'The access token expired', hint: 'Create a new token (or refresh the OAuth access token).' },
  no_access: {
    description: 'The access token no longer has access to its workspace',
    hint: "The person behind it (the token's creator, or who connected the app) is no longer a member of the workspace; ask an admin for access.",
  },
};

/**
 * The one global authentication guard: every route needs a bearer credential unless marked
 * @Public(). It reads only the Authorization header (RFC 6750 §2.1): tokens in the query string
 * or body are ignored, so they never end up in access logs.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(CREDENTIAL_VERIFIERS) private readonly verifiers: CredentialVerifier[],
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    const header = parseAuthorization(req.headers.authorization);
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) {
      const optional = this.reflector.get<boolean>(IS_CREDENTIAL_OPTIONAL, context.getHandler());
      if (!optional || header.kind === 'absent') return true;
    }
    // The MCP connector's challenge names its own metadata (resource PUBLIC_URL/mcp), as MCP clients expect.
    const resource = req.routeOptions.url === '/mcp' ? 'mcp' : 'api/v1';
    if (header.kind === 'absent') throw this.unauthorized(resource);
    if (header.kind === 'no_scheme' || header.kind === 'other_scheme') throw this.wrongScheme(resource, header.kind);
    const token = header.token;
    const verifier = this.verifiers.find((v) => v.accepts(token));
    const result: VerifyResult = verifier ? await verifier.verify(token) : { ok: false, reason: 'unknown' };
    if (!result.ok) throw this.unauthorized(resource, result.reason);
    req.principal = result.principal;
    return true;
  }

  /**
   * A credential sent without the Bearer scheme (a bare token) or under another scheme (Basic,
   * Token): RFC 6750 §3.1 treats an unsupported method like no credential, so the challenge carries
   * no error attribute; the body says what to change. The header's value is never echoed (it may be
   * the token itself).
   */
  private wrongScheme(resource: 'api/v1' | 'mcp', kind: 'no_scheme' | 'other_scheme'): ApiError {
    const metadata = `resource_metadata="${resourceMetadataUrl(this.config, resource)}"`;
    return new ApiError('unauthorized', {
      message:
        kind === 'no_scheme'
          ? 'The Authorization header has no scheme: the token must follow the word Bearer.'
          : 'The Authorization header uses a scheme Formwork does not support: only Bearer is accepted.',
      hint: 'Send the header as "Authorization: Bearer fw_..." (the word Bearer, a space, then the token).',
      headers: { 'WWW-Authenticate': `Bearer realm="formwork", ${metadata}` },
    });
  }

  private unauthorized(resource: 'api/v1' | 'mcp', reason?: keyof typeof DESCRIPTIONS): ApiError {
    const metadata = `resource_metadata="${resourceMetadataUrl(this.config, resource)}"`;
    if (!reason) {
      // RFC 6750 §3.1: a request with no credential gets a challenge without an error attribute.
      return new ApiError('unauthorized', {
        message: 'This request needs a credential.',
        headers: { 'WWW-Authenticate': `Bearer realm="formwork", ${metadata}` },
      });
    }
    const { description, hint } = DESCRIPTIONS[reason];
    return new ApiError('unauthorized', {
      message: `${description}.`,
      hint,
      headers: {
        'WWW-Authenticate': `Bearer realm="formwork", error="invalid_token", error_description="${description}", ${metadata}`,
      },
    });
  }
}

export type AuthorizationHeader =
  | { kind: 'absent' }
  /** "Bearer <token>"; token is '' when what follows Bearer is not one b64token (RFC 6750 §2.1). */
  | { kind: 'bearer'; token: string }
  /** One word and no scheme, e.g. "fw_..." pasted on its own. */
  | { kind: 'no_scheme' }
  /** Another scheme, e.g. "Basic ...", "Token fw_...". */
  | { kind: 'other_scheme' };

/** What an Authorization header holds, as far as the bearer guard cares. */
export function parseAuthorization(header: string | undefined): AuthorizationHeader {
  const value = header?.trim();
  if (!value) return { kind: 'absent' };
  const space = value.search(/\s/);
  if (space === -1) return /^Bearer$/i.test(value) ? { kind: 'bearer', token: '' } : { kind: 'no_scheme' };
  if (!/^Bearer$/i.test(value.slice(0, space))) return { kind: 'other_scheme' };
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(value);
  return { kind: 'bearer', token: match ? match[1] : '' };
}

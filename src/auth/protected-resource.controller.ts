/** The OAuth protected resource metadata (RFC 9728) of the tools API and the MCP connector. */
import { Controller, Get, Inject } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { APP_CONFIG, AppConfig } from '../config/config';
import { SCOPES } from '../common/access/roles';
import { OAuthProviderRef } from '../oauth/oauth-provider';
import { Public } from './public.decorator';

/** RFC 9728 protected resource metadata: where a client learns how to get a token for this API. */
@Public()
@ApiExcludeController()
@Controller('.well-known/oauth-protected-resource')
export class ProtectedResourceController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly oauth: OAuthProviderRef,
  ) {}

  @Get()
  root() {
    return this.document(this.config.publicUrl);
  }

  @Get('api/v1')
  api() {
    return this.document(`${this.config.publicUrl}/api/v1`);
  }

  /** The MCP connector's (MCP authorization: the resource is the server's URL). */
  @Get('mcp')
  mcp() {
    return this.document(`${this.config.publicUrl}/mcp`);
  }

  private document(resource: string) {
    return {
      resource,
      // The built-in authorization server, where it runs (API tokens work either way).
      ...(this.oauth.provider ? { authorization_servers: [this.config.publicUrl] } : {}),
      scopes_supported: [...SCOPES],
      bearer_methods_supported: ['header'],
      resource_name: 'Formwork tools API',
      resource_documentation: `${this.config.publicUrl}/docs`,
    };
  }
}

/**
 * The OAuth 2.1 authorization server (oidc-provider): its sign-in and consent pages, its clients and grants,
 * and the verifier that accepts its access tokens as bearer credentials.
 */
import { Global, Module } from '@nestjs/common';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { InteractionController } from './interaction.controller';
import { OAuthProviderRef } from './oauth-provider';
import { OAuthService } from './oauth.service';
import { OAuthTokenVerifier } from './oauth-token.verifier';

@Global()
@Module({
  imports: [WorkspacesModule],
  controllers: [InteractionController],
  providers: [OAuthProviderRef, OAuthService, OAuthTokenVerifier],
  exports: [OAuthProviderRef, OAuthService, OAuthTokenVerifier],
})
export class OAuthModule {}

/**
 * The OAuth 2.1 authorization server (oidc-provider): its sign-in and consent pages, its clients and grants,
 * and the verifier that accepts its access tokens as bearer credentials.
 */
import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LoginFailureEntity } from './entities/login-failure.entity';
import { OAuthGrantEntity } from './entities/oauth-grant.entity';
import { OAuthModelEntity } from './entities/oauth-model.entity';
import { OAuthSecretEntity } from './entities/oauth-secret.entity';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { InteractionController } from './interaction.controller';
import { OAuthProviderRef } from './oauth-provider';
import { OAuthRepository } from './oauth.repository';
import { OAuthService } from './oauth.service';
import { OAuthTokenVerifier } from './oauth-token.verifier';

/** The OAuth 2.1 server: oidc-provider, its sign-in and consent pages, grants, and the access-token verifier. */
@Global()
@Module({
  imports: [
    TypeOrmModule.forFeature([OAuthModelEntity, OAuthGrantEntity, OAuthSecretEntity, LoginFailureEntity]),
    WorkspacesModule,
  ],
  controllers: [InteractionController],
  providers: [OAuthProviderRef, OAuthService, OAuthRepository, OAuthTokenVerifier],
  exports: [OAuthProviderRef, OAuthService, OAuthTokenVerifier],
})
export class OAuthModule {}

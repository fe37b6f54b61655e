import { Global, MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import express from 'express';
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
export class OAuthModule implements NestModule {
  configure(consumer: MiddlewareConsumer) {
    // The sign-in and consent forms.
    consumer.apply(express.urlencoded({ extended: false, limit: '20kb', parameterLimit: 20 })).forRoutes({ path: 'oauth/interaction/*path', method: RequestMethod.POST });
  }
}

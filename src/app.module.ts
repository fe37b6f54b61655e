/**
 * The root module: it assembles every feature module, the database connection, the credential
 * verifiers and the global guards (authentication, then the credential's budget).
 */
import { DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from './audit/audit.module';
import { AuthDocController } from './auth/auth-doc.controller';
import { AuthGuard } from './auth/auth.guard';
import { CREDENTIAL_VERIFIERS } from './auth/credential-verifier';
import { ProtectedResourceController } from './auth/protected-resource.controller';
import { AppConfig } from './config/config';
import { ConfigModule } from './config/config.module';
import { dataSourceOptions } from './database/data-source';
import { ReadReplicaModule } from './database/replica';
import { openGuardedDataSource } from './database/transaction';
import { DemoModule } from './demo/demo.module';
import { ExportsModule } from './exports/exports.module';
import { FormsModule } from './forms/forms.module';
import { HealthModule } from './health/health.module';
import { IndexModule } from './index/index.module';
import { McpModule } from './mcp/mcp.module';
import { CredentialRateLimitGuard } from './rate-limit/credential-rate-limit.guard';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { OAuthModule } from './oauth/oauth.module';
import { OAuthTokenVerifier } from './oauth/oauth-token.verifier';
import { RespondentModule } from './respondent/respondent.module';
import { ResponseSequencerWorker } from './responses/response-sequencer';
import { FormAnswersModule } from './responses/form-answers.module';
import { ResponsesModule } from './responses/responses.module';
import { SessionsModule } from './settings/sessions.module';
import { StorageModule } from './storage/storage.module';
import { UploadToolsModule } from './uploads/upload-tools.module';
import { SettingsModule } from './settings/settings.module';
import { TokensModule } from './tokens/tokens.module';
import { TokensService } from './tokens/tokens.service';
import { ToolsModule } from './tools/tools.module';
import { WebhooksModule } from './webhooks/webhooks.module';
import { WorkspacesModule } from './workspaces/workspaces.module';
import { ObservabilityModule } from './observability/observability.module';

/**
 * The whole service. `databaseUrl` is the resolved URL (the embedded server's when DATABASE_URL
 * is unset). Global guards run in the order listed: authentication, then the credential's budget;
 * tool routes then add tool resolution and the scope/plan/role checks.
 */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, databaseUrl: string): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forConfig(config),
        // Each feature module registers its entities (TypeOrmModule.forFeature).
        TypeOrmModule.forRootAsync({
          // Every wait bounded (a request answers 503 instead of hanging): see data-source.ts.
          useFactory: () => ({
            ...dataSourceOptions(databaseUrl, config.databasePoolSize, true, {
              kind: 'request',
              timeouts: config.databaseTimeouts,
              pooler: config.databasePooler,
            }),
            autoLoadEntities: true,
          }),
          dataSourceFactory: openGuardedDataSource,
        }),
        ReadReplicaModule,
        ObservabilityModule,
        AuditModule,
        StorageModule,
        WorkspacesModule,
        TokensModule,
        RateLimitModule,
        ToolsModule,
        McpModule,
        FormsModule,
        FormAnswersModule,
        ResponsesModule,
        UploadToolsModule,
        ExportsModule,
        RespondentModule,
        WebhooksModule,
        OAuthModule,
        SessionsModule,
        SettingsModule,
        DemoModule,
        HealthModule,
        IndexModule,
      ],
      controllers: [ProtectedResourceController, AuthDocController],
      providers: [
        {
          provide: CREDENTIAL_VERIFIERS,
          useFactory: (tokens: TokensService, oauth: OAuthTokenVerifier) => [tokens, oauth],
          inject: [TokensService, OAuthTokenVerifier],
        },
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_GUARD, useClass: CredentialRateLimitGuard },
        // The service sequences waiting responses in the background; the CLI does not.
        ResponseSequencerWorker,
      ],
    };
  }
}

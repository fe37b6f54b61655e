/**
 * The settings pages, server-rendered: sign-in, account, and per workspace its members, API tokens,
 * connected apps, webhooks, audit trail, plan and embed origins.
 */
import { Module } from '@nestjs/common';
import { TokensModule } from '../tokens/tokens.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { SessionsModule } from './sessions.module';
import { SettingsController } from './settings.controller';
import { SettingsRepository } from './settings.repository';
import { SettingsService } from './settings.service';
import { WebhooksPageService } from './webhooks-page.service';

/** The workspace settings pages: controller, service (the rules of each action) and repository. */
@Module({
  imports: [WorkspacesModule, TokensModule, SessionsModule, WebhooksModule],
  controllers: [SettingsController],
  providers: [SettingsService, SettingsRepository, WebhooksPageService],
})
export class SettingsModule {}

import { Module } from '@nestjs/common';
import { TokensModule } from '../tokens/tokens.module';
import { ToolsModule } from '../tools/tools.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { SessionsModule } from './sessions.module';
import { SettingsController } from './settings.controller';
import { SettingsService } from './settings.service';
import { WebhooksPageService } from './webhooks-page.service';

@Module({
  imports: [WorkspacesModule, TokensModule, SessionsModule, ToolsModule, WebhooksModule],
  controllers: [SettingsController],
  providers: [SettingsService, WebhooksPageService],
})
export class SettingsModule {}

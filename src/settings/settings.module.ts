import { Module } from '@nestjs/common';
import { TokensModule } from '../tokens/tokens.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { SessionsModule } from './sessions.module';
import { SettingsController } from './settings.controller';
import { SettingsService } from './settings.service';

@Module({
  imports: [WorkspacesModule, TokensModule, SessionsModule],
  controllers: [SettingsController],
  providers: [SettingsService],
})
export class SettingsModule {}

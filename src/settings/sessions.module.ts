/** Browser sessions and set-password links, shared by the settings pages, the OAuth sign-in and the CLI. */
import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PasswordLinkEntity } from './entities/password-link.entity';
import { SettingsOnceEntity } from './entities/settings-once.entity';
import { SettingsSessionEntity } from './entities/settings-session.entity';
import { SessionsRepository } from './sessions.repository';
import { SessionsService } from './sessions.service';

@Global()
@Module({
  imports: [TypeOrmModule.forFeature([SettingsSessionEntity, SettingsOnceEntity, PasswordLinkEntity])],
  providers: [SessionsService, SessionsRepository],
  exports: [SessionsService],
})
export class SessionsModule {}

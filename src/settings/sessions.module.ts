import { Global, Module } from '@nestjs/common';
import { SessionsRepository } from './sessions.repository';
import { SessionsService } from './sessions.service';

/** Browser sessions and set-password links, shared by the settings pages, the OAuth sign-in and the CLI. */
@Global()
@Module({ providers: [SessionsService, SessionsRepository], exports: [SessionsService] })
export class SessionsModule {}

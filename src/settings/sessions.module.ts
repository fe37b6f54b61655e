import { Global, Module } from '@nestjs/common';
import { SessionsService } from './sessions.service';

/** Browser sessions and set-password links, shared by the settings pages, the OAuth sign-in and the CLI. */
@Global()
@Module({ providers: [SessionsService], exports: [SessionsService] })
export class SessionsModule {}

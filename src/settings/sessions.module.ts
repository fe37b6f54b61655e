/** Browser sessions and set-password links, shared by the settings pages, the OAuth sign-in and the CLI. */
import { Global, Module } from '@nestjs/common';
import { SessionsService } from './sessions.service';

@Global()
@Module({ providers: [SessionsService], exports: [SessionsService] })
export class SessionsModule {}

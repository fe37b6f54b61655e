import { Module } from '@nestjs/common';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { TokensRepository } from './tokens.repository';
import { TokensService } from './tokens.service';

/** API tokens: the service (create, list, revoke, verify) and its repository. */
@Module({ imports: [WorkspacesModule], providers: [TokensService, TokensRepository], exports: [TokensService] })
export class TokensModule {}

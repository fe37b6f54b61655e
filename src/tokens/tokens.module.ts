/** Workspace API tokens (fw_...): creating, listing and revoking them, and verifying one as a bearer credential. */
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiTokenEntity } from './entities/api-token.entity';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { TokensRepository } from './tokens.repository';
import { TokensService } from './tokens.service';

/** API tokens: the service (create, list, revoke, verify) and its repository. */
@Module({
  imports: [TypeOrmModule.forFeature([ApiTokenEntity]), WorkspacesModule],
  providers: [TokensService, TokensRepository],
  exports: [TokensService],
})
export class TokensModule {}

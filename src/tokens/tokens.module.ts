/** Workspace API tokens (fw_...): creating, listing and revoking them, and verifying one as a bearer credential. */
import { Module } from '@nestjs/common';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { TokensService } from './tokens.service';

@Module({ imports: [WorkspacesModule], providers: [TokensService], exports: [TokensService] })
export class TokensModule {}

/** Workspaces, users and memberships: who belongs to which workspace with which role, and each workspace's plan. */
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MembershipEntity } from './entities/membership.entity';
import { UserEntity } from './entities/user.entity';
import { WorkspaceEntity } from './entities/workspace.entity';
import { WorkspacesRepository } from './workspaces.repository';
import { WorkspacesService } from './workspaces.service';

/** Workspaces, users and memberships: the service and its repository. */
@Module({
  imports: [TypeOrmModule.forFeature([WorkspaceEntity, UserEntity, MembershipEntity])],
  providers: [WorkspacesService, WorkspacesRepository],
  exports: [WorkspacesService],
})
export class WorkspacesModule {}

import { Module } from '@nestjs/common';
import { WorkspacesRepository } from './workspaces.repository';
import { WorkspacesService } from './workspaces.service';

/** Workspaces, users and memberships: the service and its repository. */
@Module({ providers: [WorkspacesService, WorkspacesRepository], exports: [WorkspacesService] })
export class WorkspacesModule {}

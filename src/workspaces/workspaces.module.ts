/** Workspaces, users and memberships: who belongs to which workspace with which role, and each workspace's plan. */
import { Module } from '@nestjs/common';
import { WorkspacesService } from './workspaces.service';

@Module({ providers: [WorkspacesService], exports: [WorkspacesService] })
export class WorkspacesModule {}

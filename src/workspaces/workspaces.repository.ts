/** The data access of workspaces, users and memberships (WorkspacesRepository). */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Plan, Role } from '../common/access/roles';
import { MembershipEntity } from './entities/membership.entity';
import { UserEntity } from './entities/user.entity';
import { WorkspaceEntity } from './entities/workspace.entity';

/** The SQL (through TypeORM's entity API) of the tables workspaces, users and memberships. */
@Injectable()
export class WorkspacesRepository {
  findBySlug(manager: EntityManager, slug: string): Promise<WorkspaceEntity | null> {
    return manager.findOneBy(WorkspaceEntity, { slug });
  }

  insertWorkspace(tx: EntityManager, workspace: { name: string; slug: string; plan: Plan }): Promise<WorkspaceEntity> {
    return tx.save(tx.create(WorkspaceEntity, workspace));
  }

  async setEmbedOrigins(manager: EntityManager, workspaceId: string, origins: string[]): Promise<void> {
    await manager.update(WorkspaceEntity, { id: workspaceId }, { embedOrigins: origins });
  }

  /** The workspace's embed origins ([] for an unknown workspace). */
  async embedOriginsOf(manager: EntityManager, workspaceId: string): Promise<string[]> {
    const workspace = await manager.findOne(WorkspaceEntity, {
      select: { embedOrigins: true },
      where: { id: workspaceId },
    });
    return workspace?.embedOrigins ?? [];
  }

  async hasAnyWorkspace(manager: EntityManager): Promise<boolean> {
    return (await manager.count(WorkspaceEntity, { take: 1 })) > 0;
  }

  /** `email` must be normalized (trimmed, lower case). */
  findUserByEmail(manager: EntityManager, email: string): Promise<UserEntity | null> {
    return manager.findOneBy(UserEntity, { email });
  }

  insertUser(tx: EntityManager, email: string): Promise<UserEntity> {
    return tx.save(tx.create(UserEntity, { email }));
  }

  findMembership(manager: EntityManager, workspaceId: string, userId: string): Promise<MembershipEntity | null> {
    return manager.findOneBy(MembershipEntity, { workspaceId, userId });
  }

  /** Adds the membership, or sets its role when it exists. */
  saveMembership(
    tx: EntityManager,
    membership: { workspaceId: string; userId: string; role: Role },
  ): Promise<MembershipEntity> {
    return tx.save(tx.create(MembershipEntity, membership));
  }

  /** Whether there was such a membership. */
  async deleteMembership(manager: EntityManager, workspaceId: string, userId: string): Promise<boolean> {
    const result = await manager.delete(MembershipEntity, { workspaceId, userId });
    return (result.affected ?? 0) > 0;
  }
}

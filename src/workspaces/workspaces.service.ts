import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Plan, Role } from '../common/access/roles';
import { ApiError } from '../common/errors/api-error';
import { currentManager, inTransaction } from '../database/transaction';
import { EMBED_ORIGIN_HINT, normalizeEmbedOrigins } from './embed-origins';
import { MembershipEntity } from './entities/membership.entity';
import { UserEntity } from './entities/user.entity';
import { WorkspaceEntity } from './entities/workspace.entity';
import { WorkspacesRepository } from './workspaces.repository';

export interface WorkspaceView {
  id: string;
  name: string;
  slug: string;
  plan: Plan;
  createdAt: string;
}

export { SLUG_PATTERN } from './slug';

/**
 * Workspaces, their people and memberships: creation with an owner, members added and removed,
 * the origins allowed to embed forms. The SQL is in WorkspacesRepository.
 */
@Injectable()
export class WorkspacesService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: WorkspacesRepository,
  ) {}

  static view(w: WorkspaceEntity): WorkspaceView {
    return { id: w.id, name: w.name, slug: w.slug, plan: w.plan, createdAt: w.createdAt.toISOString() };
  }

  /** Creates a workspace and its owner (the user is created if the email is new). */
  async create(input: {
    name: string;
    slug: string;
    plan: Plan;
    ownerEmail: string;
  }): Promise<{ workspace: WorkspaceEntity; owner: UserEntity }> {
    return inTransaction(this.db, async (tx) => {
      if (await this.repo.findBySlug(tx, input.slug)) {
        throw new ApiError('invalid_arguments', {
          message: `A workspace with the slug "${input.slug}" already exists.`,
          hint: 'Pick another slug.',
          details: [{ path: '/slug', message: 'already taken' }],
        });
      }
      const workspace = await this.repo.insertWorkspace(tx, { name: input.name, slug: input.slug, plan: input.plan });
      const owner = await this.findOrCreateUser(tx, input.ownerEmail);
      await this.repo.saveMembership(tx, { workspaceId: workspace.id, userId: owner.id, role: 'owner' });
      return { workspace, owner };
    });
  }

  /** Adds a member, or changes the role of an existing one. */
  async addMember(
    slug: string,
    email: string,
    role: Role,
  ): Promise<{ workspace: WorkspaceEntity; user: UserEntity; membership: MembershipEntity }> {
    return inTransaction(this.db, async (tx) => {
      const workspace = await this.requireBySlug(slug, tx);
      const user = await this.findOrCreateUser(tx, email);
      const membership = await this.repo.saveMembership(tx, { workspaceId: workspace.id, userId: user.id, role });
      return { workspace, user, membership };
    });
  }

  async removeMember(slug: string, email: string): Promise<boolean> {
    const workspace = await this.requireBySlug(slug);
    const user = await this.findUserByEmail(email);
    if (!user) return false;
    return this.repo.deleteMembership(currentManager(this.db), workspace.id, user.id);
  }

  /**
   * Sets the origins allowed to embed the workspace's forms (an empty list: no site may). Every
   * origin is checked and normalized first; one bad origin refuses the whole list and changes nothing.
   */
  async setEmbedOrigins(slug: string, input: readonly string[]): Promise<WorkspaceEntity> {
    const { origins, details } = normalizeEmbedOrigins(input);
    if (details.length) {
      throw new ApiError('invalid_arguments', {
        message: `Not an origin that may embed forms: ${details.map((d) => d.message).join('; ')}.`,
        hint: EMBED_ORIGIN_HINT,
        details,
      });
    }
    const workspace = await this.requireBySlug(slug);
    await this.repo.setEmbedOrigins(currentManager(this.db), workspace.id, origins);
    workspace.embedOrigins = origins;
    return workspace;
  }

  /** The origins allowed to frame the respondent pages of a workspace's forms ([] for an unknown workspace). */
  async embedOriginsOf(workspaceId: string): Promise<string[]> {
    return this.repo.embedOriginsOf(currentManager(this.db), workspaceId);
  }

  /** A workspace's plan (the respondent page's file limits); 'free' for an unknown workspace. */
  async planOf(workspaceId: string): Promise<Plan> {
    const w = await currentManager(this.db).findOne(WorkspaceEntity, {
      where: { id: workspaceId },
      select: { plan: true },
    });
    return w?.plan ?? 'free';
  }

  async requireBySlug(slug: string, manager: EntityManager = currentManager(this.db)): Promise<WorkspaceEntity> {
    const workspace = await this.findBySlug(slug, manager);
    if (!workspace) {
      throw new ApiError('not_found', {
        message: `No workspace with the slug "${slug}".`,
        hint: 'Check the slug; `workspace create` makes one.',
      });
    }
    return workspace;
  }

  /** The workspace with this slug, or null. */
  findBySlug(slug: string, manager: EntityManager = currentManager(this.db)): Promise<WorkspaceEntity | null> {
    return this.repo.findBySlug(manager, slug);
  }

  async findMembership(workspaceId: string, userId: string): Promise<MembershipEntity | null> {
    return this.repo.findMembership(currentManager(this.db), workspaceId, userId);
  }

  async findUserByEmail(email: string): Promise<UserEntity | null> {
    return this.repo.findUserByEmail(currentManager(this.db), email.trim().toLowerCase());
  }

  async isEmpty(): Promise<boolean> {
    return !(await this.repo.hasAnyWorkspace(currentManager(this.db)));
  }

  private async findOrCreateUser(tx: EntityManager, email: string): Promise<UserEntity> {
    const normalized = email.trim().toLowerCase();
    const existing = await this.repo.findUserByEmail(tx, normalized);
    return existing ?? this.repo.insertUser(tx, normalized);
  }
}

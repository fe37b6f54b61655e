import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Plan, Role } from '../common/access/roles';
import { ApiError } from '../common/errors/api-error';
import { EMBED_ORIGIN_HINT, normalizeEmbedOrigins } from './embed-origins';
import { MembershipEntity } from './entities/membership.entity';
import { UserEntity } from './entities/user.entity';
import { WorkspaceEntity } from './entities/workspace.entity';

export interface WorkspaceView {
  id: string;
  name: string;
  slug: string;
  plan: Plan;
  createdAt: string;
}

export { SLUG_PATTERN } from './slug';

@Injectable()
export class WorkspacesService {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

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
    return this.db.transaction(async (tx) => {
      if (await tx.findOneBy(WorkspaceEntity, { slug: input.slug })) {
        throw new ApiError('invalid_arguments', {
          message: `A workspace with the slug "${input.slug}" already exists.`,
          hint: 'Pick another slug.',
          details: [{ path: '/slug', message: 'already taken' }],
        });
      }
      const workspace = await tx.save(
        tx.create(WorkspaceEntity, { name: input.name, slug: input.slug, plan: input.plan }),
      );
      const owner = await this.findOrCreateUser(tx, input.ownerEmail);
      await tx.save(tx.create(MembershipEntity, { workspaceId: workspace.id, userId: owner.id, role: 'owner' }));
      return { workspace, owner };
    });
  }

  /** Adds a member, or changes the role of an existing one. */
  async addMember(
    slug: string,
    email: string,
    role: Role,
  ): Promise<{ workspace: WorkspaceEntity; user: UserEntity; membership: MembershipEntity }> {
    return this.db.transaction(async (tx) => {
      const workspace = await this.requireBySlug(slug, tx);
      const user = await this.findOrCreateUser(tx, email);
      const membership = await tx.save(
        tx.create(MembershipEntity, { workspaceId: workspace.id, userId: user.id, role }),
      );
      return { workspace, user, membership };
    });
  }

  async removeMember(slug: string, email: string): Promise<boolean> {
    const workspace = await this.requireBySlug(slug);
    const user = await this.db.getRepository(UserEntity).findOneBy({ email: email.trim().toLowerCase() });
    if (!user) return false;
    const result = await this.db.getRepository(MembershipEntity).delete({ workspaceId: workspace.id, userId: user.id });
    return (result.affected ?? 0) > 0;
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
    await this.db.getRepository(WorkspaceEntity).update({ id: workspace.id }, { embedOrigins: origins });
    workspace.embedOrigins = origins;
    return workspace;
  }

  /** The origins allowed to frame the respondent pages of a workspace's forms ([] for an unknown workspace). */
  async embedOriginsOf(workspaceId: string): Promise<string[]> {
    const rows: Array<{ embed_origins: string[] }> = await this.db.query(
      'SELECT embed_origins FROM workspaces WHERE id = $1',
      [workspaceId],
    );
    return rows[0]?.embed_origins ?? [];
  }

  async requireBySlug(slug: string, manager: EntityManager = this.db.manager): Promise<WorkspaceEntity> {
    const workspace = await manager.findOneBy(WorkspaceEntity, { slug });
    if (!workspace) {
      throw new ApiError('not_found', {
        message: `No workspace with the slug "${slug}".`,
        hint: 'Check the slug; `workspace create` makes one.',
      });
    }
    return workspace;
  }

  async findMembership(workspaceId: string, userId: string): Promise<MembershipEntity | null> {
    return this.db.getRepository(MembershipEntity).findOneBy({ workspaceId, userId });
  }

  async findUserByEmail(email: string): Promise<UserEntity | null> {
    return this.db.getRepository(UserEntity).findOneBy({ email: email.trim().toLowerCase() });
  }

  async isEmpty(): Promise<boolean> {
    return (await this.db.getRepository(WorkspaceEntity).count({ take: 1 })) === 0;
  }

  private async findOrCreateUser(tx: EntityManager, email: string): Promise<UserEntity> {
    const normalized = email.trim().toLowerCase();
    const existing = await tx.findOneBy(UserEntity, { email: normalized });
    return existing ?? tx.save(tx.create(UserEntity, { email: normalized }));
  }
}

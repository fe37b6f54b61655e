import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { UserEntity } from '../../workspaces/entities/user.entity';
import { WorkspaceEntity } from '../../workspaces/entities/workspace.entity';

/**
 * A connected app: what a person allowed a client to do, in which workspace. Its tokens act with
 * the person's current role there; revoking it stops them all.
 */
@Entity({ name: 'oauth_grants' })
@Index('IDX_oauth_grants_workspace', ['workspaceId'])
export class OAuthGrantEntity {
  /** oidc-provider's grant id (carried by every token of the grant). */
  @PrimaryColumn({ name: 'grant_id', type: 'text' })
  grantId: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @Column({ name: 'client_id', type: 'text' })
  clientId: string;

  @Column({ name: 'client_name', type: 'text', nullable: true })
  clientName: string | null;

  @Column({ type: 'text', array: true })
  scopes: string[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'workspace_id' })
  workspace?: WorkspaceEntity;

  @ManyToOne(() => UserEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: UserEntity;
}

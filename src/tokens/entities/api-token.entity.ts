import { Column, PrimaryGeneratedColumn, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import type { Role, Scope } from '../../common/access/roles';
import { UserEntity } from '../../workspaces/entities/user.entity';
import { WorkspaceEntity } from '../../workspaces/entities/workspace.entity';

/** A workspace API token. The secret itself is never stored: only its SHA-256 hash. */
@Entity({ name: 'api_tokens' })
@Index('IDX_api_tokens_workspace', ['workspaceId'])
export class ApiTokenEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId: string;

  @Column({ type: 'text' })
  name: string;

  /** Hex SHA-256 of the whole token string. */
  @Column({ name: 'token_hash', type: 'text', unique: true })
  tokenHash: string;

  /** The first characters of the token (fw_ and 4 more), to recognise it in a list. */
  @Column({ name: 'token_prefix', type: 'text' })
  tokenPrefix: string;

  @Column({ type: 'text' })
  role: Role;

  /** Null: every scope. */
  @Column({ type: 'text', array: true, nullable: true })
  scopes: Scope[] | null;

  /** The member who created it (null when an operator created it with the CLI). Its role caps the token's. */
  @Column({ name: 'created_by_user_id', type: 'uuid', nullable: true })
  createdByUserId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'workspace_id' })
  workspace?: WorkspaceEntity;

  @ManyToOne(() => UserEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'created_by_user_id' })
  createdBy?: UserEntity;
}

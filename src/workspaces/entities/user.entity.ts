import { Column, PrimaryGeneratedColumn, CreateDateColumn, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { WorkspaceEntity } from './workspace.entity';

@Entity({ name: 'users' })
export class UserEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  /** Stored lower-cased, so lookups are case-insensitive. */
  @Column({ type: 'text', unique: true })
  email: string;

  @Column({ type: 'text', nullable: true })
  name: string | null;

  /** scrypt hash (see src/oauth/passwords.ts); null until set with `user set-password`. */
  @Column({ name: 'password_hash', type: 'text', nullable: true })
  passwordHash: string | null;

  /**
   * The workspace whose admin issued the set-password link this password was set through; null
   * when the person has no password, or the operator set it (CLI). A password bound to a workspace
   * acts only there: that workspace's admins may know it. See PASSWORD_BINDING in
   * src/settings/settings.service.ts. Deleting the workspace clears the password too (migration
   * 1796000020000-PasswordWorkspaceBinding).
   */
  @Column({ name: 'password_workspace_id', type: 'uuid', nullable: true })
  passwordWorkspaceId: string | null;

  /**
   * The password works once: its first sign-in asks for a new one before anything else (the demo
   * owner's password, printed at the first start). Any new password clears it (migration
   * 1796000050360-PasswordMustChange).
   */
  @Column({ name: 'password_must_change', type: 'boolean', default: false })
  passwordMustChange: boolean;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'password_workspace_id' })
  passwordWorkspace?: WorkspaceEntity;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { WorkspaceEntity } from '../../workspaces/entities/workspace.entity';

/** A one-time link to set a password (Formwork sends no email: an admin passes it on). */
@Entity({ name: 'password_links' })
export class PasswordLinkEntity {
  /** SHA-256 (hex) of the secret in the link. */
  @PrimaryColumn({ name: 'token_hash', type: 'text' })
  tokenHash: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  /**
   * The workspace whose admin issued the link (the password set with it is bound there); null for
   * a link the operator's CLI printed. The link goes with its workspace: were it kept with no
   * workspace, it would set an unbound password.
   */
  @Column({ name: 'workspace_id', type: 'uuid', nullable: true })
  workspaceId: string | null;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'workspace_id' })
  workspace?: WorkspaceEntity;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'used_at', type: 'timestamptz', nullable: true })
  usedAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}

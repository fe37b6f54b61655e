import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { WorkspaceEntity } from '../../workspaces/entities/workspace.entity';

/**
 * Where a workspace's events are sent. The signing secret must be usable (an HMAC key), so it
 * cannot be hashed like an API token: it is stored encrypted under WEBHOOK_SECRET_KEY (secret-box.ts,
 * docs/webhooks.md, "Secrets"). After a rotation the previous secret signs beside the new one until
 * previous_secret_expires_at.
 */
@Entity({ name: 'webhook_endpoints' })
@Index('IDX_webhook_endpoints_workspace', ['workspaceId', 'createdAt'])
export class WebhookEndpointEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId: string;

  @Column({ type: 'text' })
  url: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  /** The event types it is subscribed to (response.created, form.updated, ...). */
  @Column({ type: 'text', array: true })
  events: string[];

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  /** Why the service disabled it (410 Gone, or 5 days of failures); null when enabled or disabled by a person. */
  @Column({ name: 'disabled_reason', type: 'text', nullable: true })
  disabledReason: string | null;

  @Column({ name: 'disabled_at', type: 'timestamptz', nullable: true })
  disabledAt: Date | null;

  /** whsec_<base64 of 32 random bytes>, sealed: fwse1:<key id>:<nonce, ciphertext, tag>. */
  @Column({ type: 'text' })
  secret: string;

  @Column({ name: 'previous_secret', type: 'text', nullable: true })
  previousSecret: string | null;

  @Column({ name: 'previous_secret_expires_at', type: 'timestamptz', nullable: true })
  previousSecretExpiresAt: Date | null;

  /** The first failed attempt since the last success: 5 days of failures disable the endpoint. */
  @Column({ name: 'failing_since', type: 'timestamptz', nullable: true })
  failingSince: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'workspace_id' })
  workspace?: WorkspaceEntity;
}

import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { WorkspaceEntity } from '../../workspaces/entities/workspace.entity';

/**
 * One message to send (migration 1796000620000), written in the transaction that causes it and
 * claimed by the delivery loop with a lease, like webhook_deliveries. Rendered when sent.
 */
@Entity({ name: 'email_outbox' })
@Index('IDX_email_outbox_due', ['nextAttemptAt'], { where: `status = 'pending'` })
@Index('IDX_email_outbox_workspace', ['workspaceId', 'createdAt'])
@Index('IDX_email_outbox_recipient', ['toAddress', 'createdAt'], {
  where: 'form_id IS NOT NULL AND subscription_id IS NULL',
})
@Index('IDX_email_outbox_form', ['formId', 'createdAt'], { where: 'form_id IS NOT NULL AND subscription_id IS NULL' })
@Index('IDX_email_outbox_client', ['clientIp', 'createdAt'], { where: 'client_ip IS NOT NULL' })
export class EmailOutboxEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'PK_email_outbox' })
  id: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId: string;

  @Column({ type: 'text' })
  kind: string;

  @Column({ name: 'to_address', type: 'text' })
  toAddress: string;

  @Column({ name: 'subscription_id', type: 'uuid', nullable: true })
  subscriptionId: string | null;

  @Column({ name: 'form_id', type: 'uuid', nullable: true })
  formId: string | null;

  @Column({ name: 'response_id', type: 'uuid', nullable: true })
  responseId: string | null;

  /** A digest's window. */
  @Column({ type: 'timestamptz', nullable: true })
  since: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  until: Date | null;

  @Column({ type: 'text', default: 'pending' })
  status: string;

  /** The client (IP) whose page post asked for it (a resume link: migration 1796000670000), to limit per client. */
  @Column({ name: 'client_ip', type: 'text', nullable: true })
  clientIp: string | null;

  /** A secret the message carries (a resume link's), sealed under WEBHOOK_SECRET_KEY; cleared once done with. */
  @Column({ type: 'text', nullable: true })
  sealed: string | null;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', nullable: true, default: () => 'now()' })
  nextAttemptAt: Date | null;

  @Column({ name: 'claimed_until', type: 'timestamptz', nullable: true })
  claimedUntil: Date | null;

  @Column({ name: 'claim_token', type: 'uuid', nullable: true })
  claimToken: string | null;

  @Column({ name: 'attempt_count', type: 'integer', default: 0 })
  attemptCount: number;

  @Column({ name: 'last_attempt_at', type: 'timestamptz', nullable: true })
  lastAttemptAt: Date | null;

  @Column({ name: 'last_code', type: 'integer', nullable: true })
  lastCode: number | null;

  @Column({ name: 'last_answer', type: 'text', nullable: true })
  lastAnswer: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'workspace_id', foreignKeyConstraintName: 'email_outbox_workspace_id_fkey' })
  workspace?: WorkspaceEntity;
}

import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { FormEntity } from '../../forms/entities/form.entity';

/**
 * A single-use invitation to answer a form (issue 47). Its secret is shown once, by create_invites;
 * only its SHA-256 is kept. Its state: revoked, completed, expired, started (response_id names its
 * partial), else unused.
 */
@Entity({ name: 'form_invites' })
@Index('IDX_form_invites_secret', ['secretHash'], { unique: true })
@Index('IDX_form_invites_form', ['formId', 'createdAt', 'position'])
@Index('IDX_form_invites_response', ['responseId'], { where: 'response_id IS NOT NULL' })
export class FormInviteEntity {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'PK_form_invites' })
  id: string;

  @Column({ name: 'form_id', type: 'uuid' })
  formId: string;

  @Column({ name: 'secret_hash', type: 'bytea' })
  secretHash: Buffer;

  /** The hidden values it fixes: the respondent cannot change them. */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  hidden: Record<string, string>;

  @Column({ type: 'text', nullable: true })
  email: string | null;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  /** Its place in its create_invites call: pages read in (createdAt, position) order. */
  @Column({ type: 'integer', default: 0 })
  position: number;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt: Date | null;

  /** The partial it started, then the response that answered it. */
  @Column({ name: 'response_id', type: 'uuid', nullable: true })
  responseId: string | null;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id', foreignKeyConstraintName: 'FK_form_invites_form' })
  form?: FormEntity;
}

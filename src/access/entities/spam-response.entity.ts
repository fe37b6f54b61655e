import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { FormEntity } from '../../forms/entities/form.entity';

/**
 * A respondent page's post judged as spam (issue 47): kept apart from responses, so nothing counts
 * it (totals, summaries, webhooks, the sequence), until deleted or restored (update_response).
 */
@Entity({ name: 'spam_responses' })
@Index('IDX_spam_responses_form', ['formId', 'id'])
export class SpamResponseEntity {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'PK_spam_responses' })
  id: string;

  @Column({ name: 'form_id', type: 'uuid' })
  formId: string;

  /** As the post carried them, by block id (as create_response takes them). */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  answers: Record<string, unknown>;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  hidden: Record<string, string>;

  /** Why it was judged as spam: honeypot, too_fast, no_challenge, bad_challenge. */
  @Column({ type: 'text' })
  reason: string;

  @Column({ name: 'received_at', type: 'timestamptz', default: () => 'now()' })
  receivedAt: Date;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id', foreignKeyConstraintName: 'FK_spam_responses_form' })
  form?: FormEntity;
}

import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { FormEntity } from '../../forms/entities/form.entity';

/**
 * A response not yet completed (issue 36). On completion it is inserted into responses with the
 * same id and this row is deleted, in one transaction. Answers are stored as responses store them.
 */
@Entity({ name: 'partial_responses' })
@Index('IDX_partial_responses_form', ['formId', 'id'])
@Index('IDX_partial_responses_updated', ['updatedAt'])
@Index('IDX_partial_responses_resume', ['resumeHash'], { unique: true, where: 'resume_hash IS NOT NULL' })
@Index('IDX_partial_responses_client', ['clientHash'], { where: 'client_hash IS NOT NULL' })
export class PartialResponseEntity {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'PK_partial_responses' })
  id: string;

  @Column({ name: 'form_id', type: 'uuid' })
  formId: string;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  answers: Record<string, unknown>;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  hidden: Record<string, string>;

  /** Every page it ever reached ('' for the first page, else its page_break's id), in the order reached. */
  @Column({ name: 'pages_reached', type: 'text', array: true, default: () => "'{}'" })
  pagesReached: string[];

  @Column({ name: 'last_page', type: 'text', default: '' })
  lastPage: string;

  /** "api" (create_response) or "web" (the respondent page). */
  /** What its answers computed so far (issue 46), as on responses. */
  @Column({ type: 'jsonb', nullable: true })
  variables: Record<string, number | string> | null;

  @Column({ type: 'text', nullable: true })
  ending: string | null;

  @Column({ type: 'text', default: 'api' })
  source: string;

  /** SHA-256 of the resume secret (the page's); null for partials made over the tools. */
  @Column({ name: 'resume_hash', type: 'bytea', nullable: true })
  resumeHash: Buffer | null;

  /** A keyed hash of the client IP that started it on the respondent page (never the IP); NULL over the tools. */
  @Column({ name: 'client_hash', type: 'bytea', nullable: true })
  clientHash: Buffer | null;

  @Column({ name: 'started_at', type: 'timestamptz', default: () => 'now()' })
  startedAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id', foreignKeyConstraintName: 'FK_partial_responses_form' })
  form?: FormEntity;
}

/** Per form and page: how many partials reached it; page '*': how many partials the form has. */
@Entity({ name: 'partial_page_counts' })
export class PartialPageCountEntity {
  @PrimaryColumn({ name: 'form_id', type: 'uuid', primaryKeyConstraintName: 'PK_partial_page_counts' })
  formId: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_partial_page_counts' })
  page: string;

  @Column({ type: 'bigint', default: 0 })
  n: string;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id', foreignKeyConstraintName: 'FK_partial_page_counts_form' })
  form?: FormEntity;
}

/**
 * The hash of a resume secret replaced because its link was opened in another browser (issue 45,
 * 6.1): the old link then says where its answers went (on, or submitted), never showing them.
 */
@Entity({ name: 'resume_moves' })
@Index('IDX_resume_moves_moved', ['movedAt'])
export class ResumeMoveEntity {
  @PrimaryColumn({ type: 'bytea', primaryKeyConstraintName: 'PK_resume_moves' })
  hash: Buffer;

  @Column({ name: 'form_id', type: 'uuid' })
  formId: string;

  /** The partial's id (also the response's, once completed). */
  @Column({ name: 'response_id', type: 'uuid' })
  responseId: string;

  @Column({ name: 'moved_at', type: 'timestamptz', default: () => 'now()' })
  movedAt: Date;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id', foreignKeyConstraintName: 'FK_resume_moves_form' })
  form?: FormEntity;
}

import { Column, PrimaryGeneratedColumn, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { FormEntity } from '../../forms/entities/form.entity';

/** A submitted answer set. Answers are keyed by block id; choice answers are stored by choice id. */
@Entity({ name: 'responses' })
// The order (seq) and `since` (time) indexes hold sequenced responses; the third finds the others.
@Index('IDX_responses_form_submitted', ['formId', 'submittedAt', 'seq'], { where: 'seq IS NOT NULL' })
@Index('IDX_responses_form_seq', ['formId', 'seq'], { unique: true, where: 'seq IS NOT NULL' })
@Index('IDX_responses_unsequenced', ['formId', 'submittedAt', 'arrival'], { where: 'seq IS NULL' })
@Index('IDX_responses_resume', ['resumeHash'], { unique: true, where: 'resume_hash IS NOT NULL' })
// GIN (jsonb_path_ops) indexes for filters, made by migration 1796000430000 (TypeORM cannot declare their operator class).
@Index('IDX_responses_answers', { synchronize: false })
@Index('IDX_responses_hidden', { synchronize: false })
// and on variables (WHERE variables IS NOT NULL), made by migration 1796000710000.
@Index('IDX_responses_variables', { synchronize: false })
export class ResponseEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'form_id', type: 'uuid' })
  formId: string;

  /**
   * Position in the form's order, given after the commit by the form's sequencer (see
   * response-stats.repository.ts); NULL until then, for a fraction of a second.
   */
  @Column({ type: 'bigint', nullable: true })
  seq: string | null;

  /** Arrival order (a database sequence): orders the responses submitted at the same time. NULL on responses older than it. */
  @Column({ type: 'bigint', nullable: true, default: () => "nextval('response_arrival')" })
  arrival: string | null;

  @Column({ name: 'submitted_at', type: 'timestamptz', default: () => 'now()' })
  submittedAt: Date;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  answers: Record<string, unknown>;

  /** Values of the form's hidden fields the response came with: { name: value }. */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  hidden: Record<string, string>;

  /** Ids of the blocks its path showed; NULL when every block was shown (a form without rules, or stored before forms had them). */
  @Column({ type: 'jsonb', nullable: true })
  shown: string[] | null;

  /** When it started as a partial response (issue 36); NULL: it did not (it started when submitted). */
  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  /** The page it was completed on, when it started as a partial ('' the first page, else a page_break id). */
  @Column({ name: 'last_page', type: 'text', nullable: true })
  lastPage: string | null;

  /** SHA-256 of the resume secret of the partial it completed (its link then says "already submitted"). */
  @Column({ name: 'resume_hash', type: 'bytea', nullable: true })
  resumeHash: Buffer | null;

  /** What it computed, on a form that computes (issue 46): { name: value }, and the ending it reached. */
  @Column({ type: 'jsonb', nullable: true })
  variables: Record<string, number | string> | null;

  @Column({ type: 'text', nullable: true })
  ending: string | null;

  /** How it arrived: "api" (create_response), "web" (the respondent page), "import". */
  @Column({ type: 'text', default: 'api' })
  source: string;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id' })
  form?: FormEntity;
}

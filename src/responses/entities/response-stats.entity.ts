import { Column, Entity, Index, JoinColumn, ManyToOne, OneToOne, PrimaryColumn } from 'typeorm';
import { FormEntity } from '../../forms/entities/form.entity';

/**
 * Per-form counters of the sequenced responses, kept by the form's sequencer (which hands out
 * `seq` to committed responses in batches, under the form's sequencer lock) and by deletes.
 */
@Entity({ name: 'response_counters' })
export class ResponseCounterEntity {
  @PrimaryColumn({ name: 'form_id', type: 'uuid' })
  formId: string;

  @Column({ type: 'bigint', default: 0 })
  total: string;

  /** The last seq handed out. */
  @Column({ name: 'last_seq', type: 'bigint', default: 0 })
  lastSeq: string;

  /** Sequenced responses with a recorded path (responses.shown); the others were shown every block. */
  @Column({ type: 'bigint', default: 0 })
  recorded: string;

  /** submittedAt of the last sequenced response: submittedAt never goes backwards in seq order. */
  @Column({ name: 'last_submitted_at', type: 'timestamptz', nullable: true })
  lastSubmittedAt: Date | null;

  /**
   * total and last_seq as hidden_counts knows them: moved with them by the code that keeps
   * hidden_counts, so they differ only where code that does not (an instance of the version before
   * it, during a deploy) counted or deleted responses; hidden_counts is then not read (see
   * HiddenCountEntity).
   */
  @Column({ name: 'hidden_total', type: 'bigint', default: 0 })
  hiddenTotal: string;

  @Column({ name: 'hidden_seq', type: 'bigint', default: 0 })
  hiddenSeq: string;

  @OneToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id' })
  form?: FormEntity;
}

/** How many responses of a form fall in each range of 1024 seq values: a seek table for deep offsets. */
@Entity({ name: 'response_buckets' })
export class ResponseBucketEntity {
  @PrimaryColumn({ name: 'form_id', type: 'uuid' })
  formId: string;

  @PrimaryColumn({ type: 'bigint' })
  bucket: string;

  @Column({ type: 'integer' })
  count: number;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id' })
  form?: FormEntity;
}

/** Per block: how many responses answered it, the sum of numeric answers, the latest text answers. */
@Entity({ name: 'block_stats' })
export class BlockStatsEntity {
  @PrimaryColumn({ name: 'form_id', type: 'uuid' })
  formId: string;

  @PrimaryColumn({ name: 'block_id', type: 'text' })
  blockId: string;

  @Column({ type: 'bigint', default: 0 })
  answered: string;

  @Column({ type: 'double precision', default: 0 })
  sum: number;

  /** How many counted responses with a recorded path were shown the block (see ResponseCounterEntity.recorded). */
  @Column({ type: 'bigint', default: 0 })
  shown: string;

  /** Up to 5 latest text answers, newest first: [{ responseId, value, seq, submittedAt }]. */
  @Column({ type: 'jsonb', default: () => "'[]'" })
  latest: Array<{ responseId: string; value: string; seq: number; submittedAt: string }>;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id' })
  form?: FormEntity;
}

/**
 * A histogram per block: how many answers hold each value (a choice id, a rating, a number, a date,
 * true/false). Counts per choice come from it, and min/max from its ordered index.
 */
@Entity({ name: 'answer_counts' })
@Index('IDX_answer_counts_num', ['formId', 'blockId', 'num'])
export class AnswerCountEntity {
  @PrimaryColumn({ name: 'form_id', type: 'uuid' })
  formId: string;

  @PrimaryColumn({ name: 'block_id', type: 'text' })
  blockId: string;

  @PrimaryColumn({ type: 'text' })
  value: string;

  /** The value as a number, for numeric blocks (min/max by index). */
  @Column({ type: 'double precision', nullable: true })
  num: number | null;

  @Column({ type: 'bigint' })
  count: string;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id' })
  form?: FormEntity;
}

/**
 * How many sequenced responses hold each value of each hidden field, so that the total of a list
 * filtered on hidden values (equals, in) is read rather than counted. Keyed by the SHA-256 of the
 * value's UTF-8 (values take up to 1000 characters, more than a btree key takes), which no two
 * values share in practice.
 */
@Entity({ name: 'hidden_counts' })
export class HiddenCountEntity {
  @PrimaryColumn({ name: 'form_id', type: 'uuid' })
  formId: string;

  @PrimaryColumn({ type: 'text' })
  name: string;

  /** sha256(convert_to(value, 'UTF8')). */
  @PrimaryColumn({ type: 'bytea' })
  digest: Buffer;

  @Column({ type: 'bigint' })
  count: string;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id' })
  form?: FormEntity;
}

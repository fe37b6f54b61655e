import { Column, Entity, Index, JoinColumn, ManyToOne, OneToOne, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
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

/**
 * A segment of a form's responses: those whose `kind` column (answers or hidden) contains `match`
 * (one hidden value, one choice, one ticked checkbox: see segmentOf), with its aggregates kept
 * like the form's so that its summary is read, not counted. Made by the first summary of it
 * (ResponseStatsRepository.startSegment, scanSegment, finishSegment), then kept by the form's sequencer; a delete drops the
 * segments its response was in, an edit that discards answers and a recount drop the form's.
 */
@Entity({ name: 'response_segments' })
@Index('IDX_response_segments_form_digest', ['formId', 'digest'], { unique: true })
export class ResponseSegmentEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'form_id', type: 'uuid' })
  formId: string;

  /** 'answers' or 'hidden': the column `match` is contained in. */
  @Column({ type: 'text' })
  kind: string;

  @Column({ type: 'jsonb' })
  match: Record<string, unknown>;

  /** sha256(convert_to(kind || ' ' || match::text, 'UTF8')): the segment's key in its form (a value takes up to 1000 characters). */
  @Column({ type: 'bytea' })
  digest: Buffer;

  @Column({ type: 'bigint', default: 0 })
  total: string;

  /** Its responses with a recorded path (see ResponseCounterEntity.recorded). */
  @Column({ type: 'bigint', default: 0 })
  recorded: string;

  @Column({ name: 'first_at', type: 'timestamptz', nullable: true })
  firstAt: Date | null;

  @Column({ name: 'last_at', type: 'timestamptz', nullable: true })
  lastAt: Date | null;

  /**
   * The form's last_seq and total as the segment knows them, moved with them by every sequencing
   * and delete: where they differ from response_counters, code that does not keep segments (an
   * instance of the version before, during a deploy) sequenced or deleted responses, and the
   * segment is made again rather than read.
   */
  @Column({ name: 'form_seq', type: 'bigint', default: 0 })
  formSeq: string;

  @Column({ name: 'form_total', type: 'bigint', default: 0 })
  formTotal: string;

  /**
   * While its first build runs: the form's last_seq when it began, the responses its scan counts
   * (newer ones are folded in meanwhile); NULL once the scan is added. Only a NULL one is read;
   * meanwhile form_total is kept 2^40 below the form's (MAKING_TOTAL_OFFSET), so that code from
   * before this column, which reads any segment in step, sees it out of step.
   */
  @Column({ name: 'scan_seq', type: 'bigint', nullable: true })
  scanSeq: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  /** When a summary last read it (written at most once an hour): what a sweep of unused segments goes by. */
  @Column({ name: 'last_read_at', type: 'timestamptz', default: () => 'now()' })
  lastReadAt: Date;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id' })
  form?: FormEntity;
}

/** A segment's BlockStatsEntity, with the range of a number or date block (min/max as the summary shows them). */
@Entity({ name: 'segment_block_stats' })
export class SegmentBlockStatsEntity {
  @PrimaryColumn({ name: 'segment_id', type: 'bigint' })
  segmentId: string;

  @PrimaryColumn({ name: 'block_id', type: 'text' })
  blockId: string;

  @Column({ type: 'bigint', default: 0 })
  answered: string;

  @Column({ type: 'double precision', default: 0 })
  sum: number;

  @Column({ type: 'bigint', default: 0 })
  shown: string;

  /** Numeric blocks: the smallest and largest answer. */
  @Column({ name: 'min_num', type: 'double precision', nullable: true })
  minNum: number | null;

  @Column({ name: 'max_num', type: 'double precision', nullable: true })
  maxNum: number | null;

  /** Date blocks: the earliest and latest answer (YYYY-MM-DD). */
  @Column({ name: 'min_text', type: 'text', nullable: true })
  minText: string | null;

  @Column({ name: 'max_text', type: 'text', nullable: true })
  maxText: string | null;

  /** Up to 5 latest text answers of the segment, newest first: [{ value, submittedAt }]. */
  @Column({ type: 'jsonb', default: () => "'[]'" })
  latest: Array<{ value: string; submittedAt: string }>;

  @ManyToOne(() => ResponseSegmentEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'segment_id' })
  segment?: ResponseSegmentEntity;
}

/** A segment's AnswerCountEntity, for the blocks a summary counts (choices, yes/no, the scales). */
@Entity({ name: 'segment_answer_counts' })
export class SegmentAnswerCountEntity {
  @PrimaryColumn({ name: 'segment_id', type: 'bigint' })
  segmentId: string;

  @PrimaryColumn({ name: 'block_id', type: 'text' })
  blockId: string;

  @PrimaryColumn({ type: 'text' })
  value: string;

  @Column({ type: 'bigint' })
  count: string;

  @ManyToOne(() => ResponseSegmentEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'segment_id' })
  segment?: ResponseSegmentEntity;
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Segment aggregates (issue 38, item 3): the summary of a form's responses that match one filter
 * condition naming one value (a hidden field's value, a choice, a ticked checkbox: see segmentOf
 * in src/responses/response-filter.ts), kept like the form's own aggregates so that a filtered
 * summary is read, not computed from the matching rows (3.2-3.5 s for 1M matches of 10M).
 *
 *   response_segments      one per segment: what it matches (`match`, contained in the response's
 *                          answers or hidden), total, recorded, first/last submittedAt, last read,
 *                          and the form's last_seq and total as it knows them (form_seq, form_total:
 *                          a segment out of step with the form is made again, not read)
 *   segment_block_stats    per block: answered, sum, shown, the range of numbers and dates, the
 *                          latest texts
 *   segment_answer_counts  answers per value of the counted blocks (choices, yes/no, scales)
 *
 * Made on demand: the first summary of a segment fills them from the form's sequenced responses,
 * under the form's sequencer lock, and from then on the sequencer folds every response it counts
 * into the segments of its form that it matches. No backfill: the tables start empty.
 */
export class SegmentAggregates1796000480000 implements MigrationInterface {
  name = 'SegmentAggregates1796000480000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "response_segments" ("id" BIGSERIAL NOT NULL, "form_id" uuid NOT NULL, "kind" text NOT NULL, "match" jsonb NOT NULL, "digest" bytea NOT NULL, "total" bigint NOT NULL DEFAULT '0', "recorded" bigint NOT NULL DEFAULT '0', "first_at" TIMESTAMP WITH TIME ZONE, "last_at" TIMESTAMP WITH TIME ZONE, "form_seq" bigint NOT NULL DEFAULT '0', "form_total" bigint NOT NULL DEFAULT '0', "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "last_read_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_2f93ce74412b24c666b34c8bba8" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "IDX_response_segments_form_digest" ON "response_segments" ("form_id", "digest") `,
    );
    await queryRunner.query(
      `CREATE TABLE "segment_block_stats" ("segment_id" bigint NOT NULL, "block_id" text NOT NULL, "answered" bigint NOT NULL DEFAULT '0', "sum" double precision NOT NULL DEFAULT '0', "shown" bigint NOT NULL DEFAULT '0', "min_num" double precision, "max_num" double precision, "min_text" text, "max_text" text, "latest" jsonb NOT NULL DEFAULT '[]', CONSTRAINT "PK_466c4b7e6a2f0fccb5fa01876d5" PRIMARY KEY ("segment_id", "block_id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "segment_answer_counts" ("segment_id" bigint NOT NULL, "block_id" text NOT NULL, "value" text NOT NULL, "count" bigint NOT NULL, CONSTRAINT "PK_fa35ee0d7189b56d37096cd89b3" PRIMARY KEY ("segment_id", "block_id", "value"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "response_segments" ADD CONSTRAINT "FK_5ac9d4af9b76822ba2738de357e" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "segment_block_stats" ADD CONSTRAINT "FK_60ce94d640ac1be4997e3b1c0de" FOREIGN KEY ("segment_id") REFERENCES "response_segments"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "segment_answer_counts" ADD CONSTRAINT "FK_43523b2410abc571cf37ba05222" FOREIGN KEY ("segment_id") REFERENCES "response_segments"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "segment_answer_counts"`);
    await queryRunner.query(`DROP TABLE "segment_block_stats"`);
    await queryRunner.query(`DROP TABLE "response_segments"`);
  }
}

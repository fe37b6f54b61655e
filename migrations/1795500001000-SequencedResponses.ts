import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Responses are stored unsequenced (seq NULL) and given their seq afterwards, in batches, by the
 * form's sequencer, which also folds them into the aggregates: submissions to one form no longer
 * queue on its counter row. `arrival` (from a sequence) orders responses submitted at the same
 * time as they arrived; existing responses are all sequenced and keep it NULL (no table rewrite).
 * A partial index finds the unsequenced responses of a form, in the order they get their seq; the
 * indexes by seq and by time hold only the sequenced ones, so that a submission updates two
 * indexes of responses (its id, the unsequenced) instead of four.
 */

export class SequencedResponses1795500001000 implements MigrationInterface {
  name = 'SequencedResponses1795500001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE SEQUENCE "response_arrival"
        `);
    await queryRunner.query(`
            ALTER TABLE "responses" ADD "arrival" bigint
        `);
    await queryRunner.query(`
            ALTER TABLE "responses" ALTER COLUMN "arrival" SET DEFAULT nextval('response_arrival')
        `);
    await queryRunner.query(`
            ALTER TABLE "responses" ALTER COLUMN "seq" DROP NOT NULL
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_responses_unsequenced" ON "responses" ("form_id", "submitted_at", "arrival") WHERE seq IS NULL
        `);
    await queryRunner.query(`
            DROP INDEX "IDX_responses_form_seq"
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "IDX_responses_form_seq" ON "responses" ("form_id", "seq") WHERE seq IS NOT NULL
        `);
    await queryRunner.query(`
            DROP INDEX "IDX_responses_form_submitted"
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_responses_form_submitted" ON "responses" ("form_id", "submitted_at", "seq") WHERE seq IS NOT NULL
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    // Unsequenced responses are not in the aggregates yet: the service folds them within a second,
    // so a rollback waits for that rather than guess.
    await queryRunner.query(`
            DO $$ BEGIN
              IF EXISTS (SELECT 1 FROM "responses" WHERE seq IS NULL) THEN
                RAISE EXCEPTION 'responses are waiting for their seq: stop submissions and let a running service sequence them first';
              END IF;
            END $$
        `);
    await queryRunner.query(`
            DROP INDEX "IDX_responses_form_submitted"
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_responses_form_submitted" ON "responses" ("form_id", "submitted_at", "seq")
        `);
    await queryRunner.query(`
            DROP INDEX "IDX_responses_form_seq"
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "IDX_responses_form_seq" ON "responses" ("form_id", "seq")
        `);
    await queryRunner.query(`
            DROP INDEX "IDX_responses_unsequenced"
        `);
    await queryRunner.query(`
            ALTER TABLE "responses" ALTER COLUMN "seq" SET NOT NULL
        `);
    await queryRunner.query(`
            ALTER TABLE "responses" DROP COLUMN "arrival"
        `);
    await queryRunner.query(`
            DROP SEQUENCE "response_arrival"
        `);
  }
}

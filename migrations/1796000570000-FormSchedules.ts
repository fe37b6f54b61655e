import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 47, item 1: a form's schedule. opens_at: before it the form takes no answers; closes_at: at
 * it a published form reads as closed, and a sweep (on every instance) persists the transition
 * once. The partial index holds only the published forms that have a closing time: what the sweep reads.
 */
export class FormSchedules1796000570000 implements MigrationInterface {
  name = 'FormSchedules1796000570000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "forms" ADD "opens_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "forms" ADD "closes_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(
      `CREATE INDEX "IDX_forms_closes_at" ON "forms" ("closes_at") WHERE status = 'published' AND closes_at IS NOT NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_forms_closes_at"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP COLUMN "closes_at"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP COLUMN "opens_at"`);
  }
}

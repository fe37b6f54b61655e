import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Forms that branch (issue 25): hidden fields and the path a response took.
 *
 * - forms.hidden_fields: the names of the form's hidden fields (a JSON list of strings; [] for
 *   every existing form, which has none).
 * - responses.hidden: the hidden values a response came with ({ name: value }; {} for existing
 *   responses, which had none).
 * - responses.shown: the ids of the blocks the response's path showed (its answers and hidden
 *   values decide it). NULL when every block was shown: responses stored before this change, and
 *   responses to forms without rules.
 * Refs, page breaks, showIf and jumps are block settings (blocks.settings, jsonb): no column.
 */
export class FormLogic1796000030000 implements MigrationInterface {
  name = 'FormLogic1796000030000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "forms" ADD "hidden_fields" jsonb NOT NULL DEFAULT '[]'`);
    await queryRunner.query(`ALTER TABLE "responses" ADD "hidden" jsonb NOT NULL DEFAULT '{}'`);
    await queryRunner.query(`ALTER TABLE "responses" ADD "shown" jsonb`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "responses" DROP COLUMN "shown"`);
    await queryRunner.query(`ALTER TABLE "responses" DROP COLUMN "hidden"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP COLUMN "hidden_fields"`);
  }
}

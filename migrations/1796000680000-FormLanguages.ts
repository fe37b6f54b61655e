import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 51, forms in several languages: a form's languages (BCP 47 tags, the first the default;
 * empty: one language, as before) and its translations ({ language: { text key: text } }), read
 * with the form's row and changed with its version.
 */
export class FormLanguages1796000680000 implements MigrationInterface {
  name = 'FormLanguages1796000680000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "forms" ADD "languages" jsonb NOT NULL DEFAULT '[]', ADD "translations" jsonb NOT NULL DEFAULT '{}'`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "forms" DROP COLUMN "translations", DROP COLUMN "languages"`);
  }
}

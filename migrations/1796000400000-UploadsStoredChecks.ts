import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * uploads (issue 35): what the service saw of the bytes when they came through it (the disk upload
 * endpoint, the page without JavaScript): their size and the type check's finding, so that naming
 * the upload in a response is a row check, with no read of the stored object. Both NULL: not seen
 * (a direct upload to the bucket), checked on the object itself.
 */
export class UploadsStoredChecks1796000400000 implements MigrationInterface {
  name = 'UploadsStoredChecks1796000400000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "uploads" ADD "stored_size" bigint`);
    await queryRunner.query(`ALTER TABLE "uploads" ADD "type_problem" text`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "uploads" DROP COLUMN "type_problem"`);
    await queryRunner.query(`ALTER TABLE "uploads" DROP COLUMN "stored_size"`);
  }
}

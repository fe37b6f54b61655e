import { MigrationInterface, QueryRunner } from 'typeorm';

/** The origins allowed to frame a workspace's respondent pages (CSP frame-ancestors); empty: no site may. */

export class EmbedOrigins1795400001000 implements MigrationInterface {
  name = 'EmbedOrigins1795400001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "workspaces" ADD "embed_origins" text array NOT NULL DEFAULT '{}'
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "workspaces" DROP COLUMN "embed_origins"
        `);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * export_links (issue 34, 1.7): an export link's grant is stored here and the link is a random
 * token, so that a link stays short whatever its filter (a large filter made a link of 36,695
 * characters, refused with 431). Rows live as long as their link (15 minutes), then are swept.
 * Links are no longer signed: the key they were signed with goes (links signed with it, 15 minutes
 * at most, stop serving).
 */
export class ExportLinks1796000070000 implements MigrationInterface {
  name = 'ExportLinks1796000070000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "export_links" (
                "id" text NOT NULL,
                "payload" jsonb NOT NULL,
                "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL,
                CONSTRAINT "PK_export_links" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`CREATE INDEX "IDX_export_links_expires_at" ON "export_links" ("expires_at")`);
    await queryRunner.query(`DELETE FROM "oauth_secrets" WHERE "name" = 'export-link-key'`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "export_links"`);
  }
}

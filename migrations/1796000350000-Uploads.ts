import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * uploads (issue 35): files sent for file_upload blocks, pending until a response names them. The
 * partial indexes serve the sweep (pending by age) and deletes by response; form_id serves the
 * form's deletion. A response deleted without its uploads leaves them pending (SET NULL), for the
 * sweep to collect with their objects.
 */
export class Uploads1796000350000 implements MigrationInterface {
  name = 'Uploads1796000350000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "uploads" (
                "id" text NOT NULL,
                "workspace_id" uuid NOT NULL,
                "form_id" uuid NOT NULL,
                "block_id" text NOT NULL,
                "name" text NOT NULL,
                "content_type" text NOT NULL,
                "size" bigint NOT NULL,
                "response_id" uuid,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_uploads" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`CREATE INDEX "IDX_uploads_pending" ON "uploads" ("created_at") WHERE response_id IS NULL`);
    await queryRunner.query(
      `CREATE INDEX "IDX_uploads_response" ON "uploads" ("response_id") WHERE response_id IS NOT NULL`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_uploads_form" ON "uploads" ("form_id")`);
    await queryRunner.query(
      `ALTER TABLE "uploads" ADD CONSTRAINT "FK_822159eda1dd5157a4cf1769bed" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "uploads" ADD CONSTRAINT "FK_ea53413d704fc5198845466c176" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "uploads" ADD CONSTRAINT "FK_7574b96e940f76e86c54b7d006e" FOREIGN KEY ("response_id") REFERENCES "responses"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "uploads"`);
  }
}

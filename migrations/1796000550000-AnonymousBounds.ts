import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 45, items 6.1 and 6.6.
 * - uploads.client_hash and partial_responses.client_hash: a keyed hash (HMAC-SHA256, a server
 *   key) of the client IP that made the row on the respondent page, never the IP itself; NULL for
 *   rows made over the tools. With the partial indexes below, the pending uploads (count, bytes)
 *   and the open partials of one address or one form are counted from the index, on any instance.
 * - resume_moves: the hashes of resume secrets replaced when a link was opened in another browser
 *   (the secret is rotated). An old link then says its answers continue elsewhere (or, once they
 *   are submitted, that they were submitted) and shows none of them. Kept as long as a partial.
 */
export class AnonymousBounds1796000550000 implements MigrationInterface {
  name = 'AnonymousBounds1796000550000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "uploads" ADD "client_hash" bytea`);
    await queryRunner.query(
      `CREATE INDEX "IDX_uploads_pending_client" ON "uploads" ("client_hash") WHERE response_id IS NULL AND client_hash IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_uploads_pending_form" ON "uploads" ("form_id") WHERE response_id IS NULL`,
    );
    await queryRunner.query(`ALTER TABLE "partial_responses" ADD "client_hash" bytea`);
    await queryRunner.query(
      `CREATE INDEX "IDX_partial_responses_client" ON "partial_responses" ("client_hash") WHERE client_hash IS NOT NULL`,
    );
    await queryRunner.query(`
            CREATE TABLE "resume_moves" (
                "hash" bytea NOT NULL,
                "form_id" uuid NOT NULL,
                "response_id" uuid NOT NULL,
                "moved_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_resume_moves" PRIMARY KEY ("hash")
            )
        `);
    await queryRunner.query(`CREATE INDEX "IDX_resume_moves_moved" ON "resume_moves" ("moved_at")`);
    await queryRunner.query(
      `ALTER TABLE "resume_moves" ADD CONSTRAINT "FK_resume_moves_form" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "resume_moves"`);
    await queryRunner.query(`DROP INDEX "IDX_partial_responses_client"`);
    await queryRunner.query(`ALTER TABLE "partial_responses" DROP COLUMN "client_hash"`);
    await queryRunner.query(`DROP INDEX "IDX_uploads_pending_form"`);
    await queryRunner.query(`DROP INDEX "IDX_uploads_pending_client"`);
    await queryRunner.query(`ALTER TABLE "uploads" DROP COLUMN "client_hash"`);
  }
}

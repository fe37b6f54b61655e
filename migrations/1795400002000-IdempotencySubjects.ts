import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a stored Idempotency-Key answer shows, so that deleting a form or a response leaves none of
 * it readable: the workspace, whether the tool only reads, and the form and response it names.
 */

export class IdempotencySubjects1795400002000 implements MigrationInterface {
  name = 'IdempotencySubjects1795400002000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "idempotency_keys"
                ADD "workspace_id" uuid,
                ADD "read_only" boolean NOT NULL DEFAULT false,
                ADD "form_public_id" text,
                ADD "response_id" text
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_idempotency_keys_workspace_id" ON "idempotency_keys" ("workspace_id")
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_idempotency_keys_form_public_id" ON "idempotency_keys" ("form_public_id")
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_idempotency_keys_response_id" ON "idempotency_keys" ("response_id")
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_idempotency_keys_response_id"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_idempotency_keys_form_public_id"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_idempotency_keys_workspace_id"`);
    await queryRunner.query(`
            ALTER TABLE "idempotency_keys" DROP COLUMN "response_id", DROP COLUMN "form_public_id", DROP COLUMN "read_only", DROP COLUMN "workspace_id"
        `);
  }
}

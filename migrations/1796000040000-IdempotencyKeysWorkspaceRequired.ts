import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * idempotency_keys.workspace_id becomes NOT NULL (docs/scaling.md, "Schema steps that are cheap
 * now", step 4): every key written since IdempotencySubjects carries its workspace, and keys live
 * 24 hours, so the rows without one are expired answers nobody can replay any more. Deleting them
 * and setting NOT NULL scans a table that holds a day of keys; no rewrite, nothing per request.
 * With it, the workspace can join the table's key the day the tables are distributed by workspace.
 */
export class IdempotencyKeysWorkspaceRequired1796000040000 implements MigrationInterface {
  name = 'IdempotencyKeysWorkspaceRequired1796000040000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DELETE FROM "idempotency_keys" WHERE "workspace_id" IS NULL`);
    await queryRunner.query(`ALTER TABLE "idempotency_keys" ALTER COLUMN "workspace_id" SET NOT NULL`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "idempotency_keys" ALTER COLUMN "workspace_id" DROP NOT NULL`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/** The audit trail: every write with its actor (credential and, for OAuth, user) and time. */

export class AuditEvents1795284244979 implements MigrationInterface {
  name = 'AuditEvents1795284244979';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "audit_events" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "workspace_id" uuid NOT NULL,
                "action" text NOT NULL,
                "subject_id" text NOT NULL,
                "actor_kind" text NOT NULL,
                "actor_id" text NOT NULL,
                "actor_user_id" uuid,
                "at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "details" jsonb NOT NULL DEFAULT '{}',
                CONSTRAINT "PK_910f64d901a5c3e9878f0d4a407" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_audit_events_workspace_at" ON "audit_events" ("workspace_id", "at")
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            DROP INDEX "public"."IDX_audit_events_workspace_at"
        `);
    await queryRunner.query(`
            DROP TABLE "audit_events"
        `);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 49, item 7: long tool calls run in the background as jobs (MCP tasks, REST 202). A job's
 * state lives here, so any instance answers a poll or a cancel of a job another instance runs.
 * status: working, then completed (result), failed (error: the tool's refusal) or cancelled.
 * The index serves the sweep of expired jobs.
 */
export class Jobs1796000650000 implements MigrationInterface {
  name = 'Jobs1796000650000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "jobs" (
                "id" text PRIMARY KEY,
                "workspace_id" uuid NOT NULL REFERENCES "workspaces" ("id") ON DELETE CASCADE,
                "tool" text NOT NULL,
                "status" text NOT NULL DEFAULT 'working'
                    CHECK ("status" IN ('working', 'completed', 'failed', 'cancelled')),
                "status_message" text,
                "result" jsonb,
                "error" jsonb,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL
            )
        `);
    await queryRunner.query(`CREATE INDEX "IDX_jobs_expires_at" ON "jobs" ("expires_at")`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "jobs"`);
  }
}

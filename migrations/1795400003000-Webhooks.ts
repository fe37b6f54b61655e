import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks: endpoints (URL, events, signing secret), deliveries (the transactional outbox: one row
 * per event and endpoint, written by the transaction that made the change, claimed by any
 * instance when due) and their attempts. Frozen SQL: never import src/ here.
 */

export class Webhooks1795400003000 implements MigrationInterface {
  name = 'Webhooks1795400003000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "webhook_endpoints" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "workspace_id" uuid NOT NULL,
                "url" text NOT NULL,
                "description" text,
                "events" text array NOT NULL,
                "enabled" boolean NOT NULL DEFAULT true,
                "disabled_reason" text,
                "disabled_at" TIMESTAMP WITH TIME ZONE,
                "secret" text NOT NULL,
                "previous_secret" text,
                "previous_secret_expires_at" TIMESTAMP WITH TIME ZONE,
                "failing_since" TIMESTAMP WITH TIME ZONE,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_054c4cfb95223732f5939d2d546" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_endpoints_workspace" ON "webhook_endpoints" ("workspace_id", "created_at")`,
    );
    await queryRunner.query(`
            CREATE TABLE "webhook_deliveries" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "workspace_id" uuid NOT NULL,
                "endpoint_id" uuid NOT NULL,
                "event_id" text NOT NULL,
                "event_type" text NOT NULL,
                "payload" text NOT NULL,
                "status" text NOT NULL DEFAULT 'pending',
                "attempt_count" integer NOT NULL DEFAULT '0',
                "next_attempt_at" TIMESTAMP WITH TIME ZONE,
                "claim_token" uuid,
                "claimed_until" TIMESTAMP WITH TIME ZONE,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_535dd409947fb6d8fc6dfc0112a" PRIMARY KEY ("id")
            )
        `);
    // Room in each page, so that a claim (which changes no indexed column) is a HOT update: no new index entries.
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" SET (fillfactor = 70)`);
    await queryRunner.query(`CREATE INDEX "IDX_webhook_deliveries_created_at" ON "webhook_deliveries" ("created_at")`);
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_endpoint" ON "webhook_deliveries" ("endpoint_id", "created_at")`,
    );
    // The delivery loop's claim reads only this: due rows that are still pending.
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_due" ON "webhook_deliveries" ("next_attempt_at") WHERE "status" = 'pending'`,
    );
    await queryRunner.query(`
            CREATE TABLE "webhook_attempts" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "delivery_id" uuid NOT NULL,
                "attempted_at" TIMESTAMP WITH TIME ZONE NOT NULL,
                "status_code" smallint,
                "duration_ms" integer NOT NULL,
                "error" text,
                "response_body" text,
                "next_attempt_at" TIMESTAMP WITH TIME ZONE,
                CONSTRAINT "PK_2de7e7887ad97de459adab62638" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_attempts_delivery" ON "webhook_attempts" ("delivery_id", "attempted_at")`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "FK_a37f51d7045b4f19721c6813c63" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "FK_0b882c26a9b91c26e6e86b4867c" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_attempts" ADD CONSTRAINT "FK_0d56d91d61b827bb2079c256538" FOREIGN KEY ("delivery_id") REFERENCES "webhook_deliveries"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "webhook_attempts"`);
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(`DROP TABLE "webhook_endpoints"`);
  }
}

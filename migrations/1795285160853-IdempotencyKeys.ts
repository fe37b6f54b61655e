import { MigrationInterface, QueryRunner } from 'typeorm';

/** Idempotency-Key records: per (credential, tool, key), the request's fingerprint and the answer to replay; kept 24 hours. */

export class IdempotencyKeys1795285160853 implements MigrationInterface {
  name = 'IdempotencyKeys1795285160853';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "idempotency_keys" (
                "scope" text NOT NULL,
                "tool" text NOT NULL,
                "idempotency_key" character varying(255) NOT NULL,
                "fingerprint" bytea NOT NULL,
                "response_status" smallint,
                "response_headers" jsonb,
                "response_body" text,
                "lock_token" uuid,
                "locked_until" TIMESTAMP WITH TIME ZONE,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_idempotency_keys" PRIMARY KEY ("scope", "tool", "idempotency_key")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_idempotency_keys_created_at" ON "idempotency_keys" ("created_at")
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            DROP INDEX "public"."IDX_idempotency_keys_created_at"
        `);
    await queryRunner.query(`
            DROP TABLE "idempotency_keys"
        `);
  }
}

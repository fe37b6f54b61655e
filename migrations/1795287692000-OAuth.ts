import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The built-in OAuth 2.1 authorization server: what oidc-provider persists (oauth_models), the
 * connected apps bound to a workspace (oauth_grants), the keys all instances share, failed
 * sign-ins per email (login_failures), and users' password hashes.
 */

export class OAuth1795287692000 implements MigrationInterface {
  name = 'OAuth1795287692000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "login_failures" (
                "email" text NOT NULL,
                "failures" integer NOT NULL,
                "last_failure_at" TIMESTAMP WITH TIME ZONE NOT NULL,
                CONSTRAINT "PK_45d383d601f0542bc1eb677ff19" PRIMARY KEY ("email")
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "oauth_grants" (
                "grant_id" text NOT NULL,
                "workspace_id" uuid NOT NULL,
                "user_id" uuid NOT NULL,
                "client_id" text NOT NULL,
                "client_name" text,
                "scopes" text array NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "revoked_at" TIMESTAMP WITH TIME ZONE,
                CONSTRAINT "PK_383ddd3e5b59fe19135dc9ba4ae" PRIMARY KEY ("grant_id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_oauth_grants_workspace" ON "oauth_grants" ("workspace_id")
        `);
    await queryRunner.query(`
            CREATE TABLE "oauth_models" (
                "model" text NOT NULL,
                "id" text NOT NULL,
                "payload" jsonb NOT NULL,
                "grant_id" text,
                "user_code" text,
                "uid" text,
                "expires_at" TIMESTAMP WITH TIME ZONE,
                "consumed_at" TIMESTAMP WITH TIME ZONE,
                CONSTRAINT "PK_a7e367d95bfc6c1a1360a6d3f49" PRIMARY KEY ("model", "id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_oauth_models_expires" ON "oauth_models" ("expires_at")
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_oauth_models_uid" ON "oauth_models" ("uid")
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_oauth_models_grant" ON "oauth_models" ("grant_id")
        `);
    await queryRunner.query(`
            CREATE TABLE "oauth_secrets" (
                "name" text NOT NULL,
                "value" jsonb NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_a555c3b0272beffb74139323edf" PRIMARY KEY ("name")
            )
        `);
    await queryRunner.query(`
            ALTER TABLE "users"
            ADD "password_hash" text
        `);
    await queryRunner.query(`
            ALTER TABLE "oauth_grants"
            ADD CONSTRAINT "FK_76dc4cd26ec9a0e8d9c13f1f96b" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "oauth_grants"
            ADD CONSTRAINT "FK_7c995394933a14c9235b4b0bd88" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "oauth_grants" DROP CONSTRAINT "FK_7c995394933a14c9235b4b0bd88"
        `);
    await queryRunner.query(`
            ALTER TABLE "oauth_grants" DROP CONSTRAINT "FK_76dc4cd26ec9a0e8d9c13f1f96b"
        `);
    await queryRunner.query(`
            ALTER TABLE "users" DROP COLUMN "password_hash"
        `);
    await queryRunner.query(`
            DROP TABLE "oauth_secrets"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_oauth_models_grant"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_oauth_models_uid"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_oauth_models_expires"
        `);
    await queryRunner.query(`
            DROP TABLE "oauth_models"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_oauth_grants_workspace"
        `);
    await queryRunner.query(`
            DROP TABLE "oauth_grants"
        `);
    await queryRunner.query(`
            DROP TABLE "login_failures"
        `);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The first schema: workspaces, users and memberships; workspace API tokens (hashes only);
 * forms, their blocks (ids stable across edits) and responses (answers by block id).
 * Generated from the entities with `typeorm migration:generate`, then read.
 */

export class Init1795283628889 implements MigrationInterface {
  name = 'Init1795283628889';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "workspaces" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "name" text NOT NULL,
                "slug" text NOT NULL,
                "plan" text NOT NULL DEFAULT 'free',
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "UQ_b8e9fe62e93d60089dfc4f175f3" UNIQUE ("slug"),
                CONSTRAINT "PK_098656ae401f3e1a4586f47fd8e" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "forms" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "public_id" text NOT NULL,
                "workspace_id" uuid NOT NULL,
                "title" text NOT NULL,
                "description" text,
                "status" text NOT NULL DEFAULT 'draft',
                "version" integer NOT NULL DEFAULT '1',
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "published_at" TIMESTAMP WITH TIME ZONE,
                "closed_at" TIMESTAMP WITH TIME ZONE,
                CONSTRAINT "UQ_604866024c8687dc86447a9c34b" UNIQUE ("public_id"),
                CONSTRAINT "PK_ba062fd30b06814a60756f233da" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_forms_workspace_created" ON "forms" ("workspace_id", "created_at", "id")
        `);
    await queryRunner.query(`
            CREATE TABLE "blocks" (
                "form_id" uuid NOT NULL,
                "id" text NOT NULL,
                "position" integer NOT NULL,
                "type" text NOT NULL,
                "title" text NOT NULL,
                "description" text,
                "required" boolean NOT NULL DEFAULT false,
                "settings" jsonb NOT NULL DEFAULT '{}',
                CONSTRAINT "PK_ce64bf15c8644b78b97dd77165d" PRIMARY KEY ("form_id", "id")
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "responses" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "form_id" uuid NOT NULL,
                "submitted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "answers" jsonb NOT NULL DEFAULT '{}',
                "source" text NOT NULL DEFAULT 'api',
                CONSTRAINT "PK_be3bdac59bd243dff421ad7bf70" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_responses_form_order" ON "responses" ("form_id", "submitted_at", "id")
        `);
    await queryRunner.query(`
            CREATE TABLE "users" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "email" text NOT NULL,
                "name" text,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "UQ_97672ac88f789774dd47f7c8be3" UNIQUE ("email"),
                CONSTRAINT "PK_a3ffb1c0c8416b9fc6f907b7433" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "api_tokens" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "workspace_id" uuid NOT NULL,
                "name" text NOT NULL,
                "token_hash" text NOT NULL,
                "token_prefix" text NOT NULL,
                "role" text NOT NULL,
                "scopes" text array,
                "created_by_user_id" uuid,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "expires_at" TIMESTAMP WITH TIME ZONE,
                "revoked_at" TIMESTAMP WITH TIME ZONE,
                "last_used_at" TIMESTAMP WITH TIME ZONE,
                CONSTRAINT "UQ_bbd687a104e1921e6702c6e3aad" UNIQUE ("token_hash"),
                CONSTRAINT "PK_c587455266b5fa8dace7194caac" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_api_tokens_workspace" ON "api_tokens" ("workspace_id")
        `);
    await queryRunner.query(`
            CREATE TABLE "memberships" (
                "workspace_id" uuid NOT NULL,
                "user_id" uuid NOT NULL,
                "role" text NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_b30e6ce2c364503f9840fa6440b" PRIMARY KEY ("workspace_id", "user_id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_memberships_user" ON "memberships" ("user_id")
        `);
    await queryRunner.query(`
            ALTER TABLE "forms"
            ADD CONSTRAINT "FK_e3fba28321ca48423558f50cc10" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "blocks"
            ADD CONSTRAINT "FK_b87b9e371b2d42583eba44de4ff" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "responses"
            ADD CONSTRAINT "FK_b3e219038bc78f6c3441c5a9a96" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "api_tokens"
            ADD CONSTRAINT "FK_9c644dd21cac1a0e8fca9443373" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "api_tokens"
            ADD CONSTRAINT "FK_4a228d3a048dfe653e19c3e3a14" FOREIGN KEY ("created_by_user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "memberships"
            ADD CONSTRAINT "FK_9b76ecf1dda18a6adec17fe71c4" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "memberships"
            ADD CONSTRAINT "FK_7c1e2fdfed4f6838e0c05ae5051" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "memberships" DROP CONSTRAINT "FK_7c1e2fdfed4f6838e0c05ae5051"
        `);
    await queryRunner.query(`
            ALTER TABLE "memberships" DROP CONSTRAINT "FK_9b76ecf1dda18a6adec17fe71c4"
        `);
    await queryRunner.query(`
            ALTER TABLE "api_tokens" DROP CONSTRAINT "FK_4a228d3a048dfe653e19c3e3a14"
        `);
    await queryRunner.query(`
            ALTER TABLE "api_tokens" DROP CONSTRAINT "FK_9c644dd21cac1a0e8fca9443373"
        `);
    await queryRunner.query(`
            ALTER TABLE "responses" DROP CONSTRAINT "FK_b3e219038bc78f6c3441c5a9a96"
        `);
    await queryRunner.query(`
            ALTER TABLE "blocks" DROP CONSTRAINT "FK_b87b9e371b2d42583eba44de4ff"
        `);
    await queryRunner.query(`
            ALTER TABLE "forms" DROP CONSTRAINT "FK_e3fba28321ca48423558f50cc10"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_memberships_user"
        `);
    await queryRunner.query(`
            DROP TABLE "memberships"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_api_tokens_workspace"
        `);
    await queryRunner.query(`
            DROP TABLE "api_tokens"
        `);
    await queryRunner.query(`
            DROP TABLE "users"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_responses_form_order"
        `);
    await queryRunner.query(`
            DROP TABLE "responses"
        `);
    await queryRunner.query(`
            DROP TABLE "blocks"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_forms_workspace_created"
        `);
    await queryRunner.query(`
            DROP TABLE "forms"
        `);
    await queryRunner.query(`
            DROP TABLE "workspaces"
        `);
  }
}

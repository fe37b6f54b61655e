import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Workspace settings in the browser: sessions (only the SHA-256 of the cookie's secret), one-time
 * flashes and form nonces, one-time set-password links, and the request id of each audit event.
 */

export class SettingsSessions1795600000000 implements MigrationInterface {
  name = 'SettingsSessions1795600000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "password_links" ("token_hash" text NOT NULL, "user_id" uuid NOT NULL, "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, "used_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_66e3415c64e32460ee0c5cb5dd1" PRIMARY KEY ("token_hash"))
        `);
    await queryRunner.query(`
            CREATE TABLE "settings_once" ("key" text NOT NULL, "session_id" text, "payload" jsonb NOT NULL DEFAULT '{}', "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_61b42f2a9ec669d133cf15a6635" PRIMARY KEY ("key"))
        `);
    await queryRunner.query(`
            CREATE TABLE "settings_sessions" ("id" text NOT NULL, "user_id" uuid NOT NULL, "csrf" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "last_seen_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_8656eb4552436966301c127e2f3" PRIMARY KEY ("id"))
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_settings_sessions_user" ON "settings_sessions" ("user_id")
        `);
    await queryRunner.query(`
            ALTER TABLE "audit_events" ADD "request_id" text
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "audit_events" DROP COLUMN "request_id"`);
    await queryRunner.query(`DROP TABLE "settings_sessions"`);
    await queryRunner.query(`DROP TABLE "settings_once"`);
    await queryRunner.query(`DROP TABLE "password_links"`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 47, item 4: invitations. forms.access: 'public' (anyone with the link) or 'invite' (only
 * with an invite). form_invites: one single-use invite each, its secret stored only as its SHA-256
 * (secret_hash), the hidden values it fixes, and its life: response_id (the partial it started, then
 * the response that answered it), completed_at, revoked_at, expires_at. Pages read in
 * (form_id, created_at, position) order (position: its place in its create_invites call); a
 * partial's invite is found by response_id.
 */
export class FormInvites1796000600000 implements MigrationInterface {
  name = 'FormInvites1796000600000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "forms" ADD "access" text NOT NULL DEFAULT 'public'`);
    await queryRunner.query(`
            CREATE TABLE "form_invites" (
                "id" uuid NOT NULL,
                "form_id" uuid NOT NULL,
                "secret_hash" bytea NOT NULL,
                "hidden" jsonb NOT NULL DEFAULT '{}',
                "email" text,
                "expires_at" TIMESTAMP WITH TIME ZONE,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "position" integer NOT NULL DEFAULT 0,
                "revoked_at" TIMESTAMP WITH TIME ZONE,
                "completed_at" TIMESTAMP WITH TIME ZONE,
                "response_id" uuid,
                CONSTRAINT "PK_form_invites" PRIMARY KEY ("id")
            )`);
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_form_invites_secret" ON "form_invites" ("secret_hash")`);
    await queryRunner.query(
      `CREATE INDEX "IDX_form_invites_form" ON "form_invites" ("form_id", "created_at", "position")`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_form_invites_response" ON "form_invites" ("response_id") WHERE response_id IS NOT NULL`,
    );
    await queryRunner.query(
      `ALTER TABLE "form_invites" ADD CONSTRAINT "FK_form_invites_form" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "form_invites"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP COLUMN "access"`);
  }
}

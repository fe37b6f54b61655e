import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A password set through a link that a workspace's admin was shown is bound to that workspace
 * (issue 23, account takeover across workspaces): the admin who passed the link on may know the
 * password, so it must act in no other workspace.
 *
 * - password_links.workspace_id: the workspace whose admin issued the link; null for a link the
 *   operator's CLI printed. ON DELETE CASCADE: a link of a deleted workspace goes with it (set to
 *   null, it would turn into an operator's link and set an unbound password).
 * - users.password_workspace_id: the workspace the person's password is bound to; null when they
 *   have none or the operator set it. ON DELETE SET NULL, after a trigger that first clears the
 *   password of everyone bound to the deleted workspace and signs them out (settings sessions and
 *   the authorization server's sessions): an unbound password that a deleted workspace's admin may
 *   know would otherwise act in every other workspace of the person. They sign in again once the
 *   operator sets a password (`user set-password`).
 * Existing rows get null: passwords set before this change are treated as the operator's.
 */
export class PasswordWorkspaceBinding1796000020000 implements MigrationInterface {
  name = 'PasswordWorkspaceBinding1796000020000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "users" ADD "password_workspace_id" uuid`);
    await queryRunner.query(`ALTER TABLE "password_links" ADD "workspace_id" uuid`);
    await queryRunner.query(
      `ALTER TABLE "users" ADD CONSTRAINT "FK_a668c77293358be1deff23e70f3" FOREIGN KEY ("password_workspace_id") REFERENCES "workspaces"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "password_links" ADD CONSTRAINT "FK_bf62f8a9cd06a6aa44eeba46cd1" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`
      CREATE FUNCTION "workspace_deleted_clear_bound_passwords"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM settings_sessions
         WHERE user_id IN (SELECT id FROM users WHERE password_workspace_id = OLD.id);
        DELETE FROM oauth_models
         WHERE model = 'Session'
           AND payload->>'accountId' IN (SELECT id::text FROM users WHERE password_workspace_id = OLD.id);
        UPDATE users SET password_hash = NULL, password_workspace_id = NULL WHERE password_workspace_id = OLD.id;
        RETURN OLD;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER "workspaces_clear_bound_passwords" BEFORE DELETE ON "workspaces"
      FOR EACH ROW EXECUTE FUNCTION "workspace_deleted_clear_bound_passwords"()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "workspaces_clear_bound_passwords" ON "workspaces"`);
    await queryRunner.query(`DROP FUNCTION "workspace_deleted_clear_bound_passwords"()`);
    await queryRunner.query(`ALTER TABLE "password_links" DROP CONSTRAINT "FK_bf62f8a9cd06a6aa44eeba46cd1"`);
    await queryRunner.query(`ALTER TABLE "users" DROP CONSTRAINT "FK_a668c77293358be1deff23e70f3"`);
    await queryRunner.query(`ALTER TABLE "password_links" DROP COLUMN "workspace_id"`);
    await queryRunner.query(`ALTER TABLE "users" DROP COLUMN "password_workspace_id"`);
  }
}

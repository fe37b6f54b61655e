import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * users.password_must_change (issue 34, 3.6): a password that works once, for the sign-in that
 * then asks for a new one. Set for the demo owner's password that the first start prints (later
 * starts listen on every interface, and the terminal's scrollback keeps it); every new password
 * clears it. On the person, not a membership: they may belong to several workspaces.
 */
export class PasswordMustChange1796000050360 implements MigrationInterface {
  name = 'PasswordMustChange1796000050360';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "users" ADD "password_must_change" boolean NOT NULL DEFAULT false`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "users" DROP COLUMN "password_must_change"`);
  }
}

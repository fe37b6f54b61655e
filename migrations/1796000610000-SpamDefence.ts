import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 47, item 5: spam defence of the respondent pages. forms.spam_protection: off, auto (the
 * challenge once a form's or an IP's page posts pass a rate) or always. spam_responses: posts judged
 * as spam, kept apart from responses (so nothing counts them: no totals, no webhooks, no sequence)
 * until deleted or restored as a response.
 */
export class SpamDefence1796000610000 implements MigrationInterface {
  name = 'SpamDefence1796000610000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "forms" ADD "spam_protection" text NOT NULL DEFAULT 'auto'`);
    await queryRunner.query(
      `CREATE TABLE "spam_responses" ("id" uuid NOT NULL, "form_id" uuid NOT NULL, "answers" jsonb NOT NULL DEFAULT '{}', "hidden" jsonb NOT NULL DEFAULT '{}', "reason" text NOT NULL, "received_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_spam_responses" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_spam_responses_form" ON "spam_responses" ("form_id", "id")`);
    await queryRunner.query(
      `ALTER TABLE "spam_responses" ADD CONSTRAINT "FK_spam_responses_form" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "spam_responses"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP COLUMN "spam_protection"`);
  }
}

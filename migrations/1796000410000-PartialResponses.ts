import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Partial responses (issue 36). A partial lives in partial_responses until it completes: then it
 * is inserted into responses with the same id (and gets its seq then) and its row deleted, so the
 * maintained aggregates of responses never see partials. partial_page_counts keeps, per form and
 * page, how many partials reached that page (page '*': how many partials there are), for the
 * funnel and the counts by status without a scan. forms.partial_responses is the owner's setting.
 * uploads.response_id may now name a partial (the same id it keeps on completion), so its foreign
 * key to responses goes; every path that deletes responses deletes their uploads first.
 */
export class PartialResponses1796000410000 implements MigrationInterface {
  name = 'PartialResponses1796000410000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "forms" ADD "partial_responses" boolean NOT NULL DEFAULT false`);
    await queryRunner.query(`ALTER TABLE "responses" ADD "started_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "responses" ADD "last_page" text`);
    // A completed partial keeps its resume secret's hash: its link then says "already submitted".
    await queryRunner.query(`ALTER TABLE "responses" ADD "resume_hash" bytea`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "IDX_responses_resume" ON "responses" ("resume_hash") WHERE resume_hash IS NOT NULL`,
    );
    // The funnel reads how many completed responses reached each page from block_stats.shown of
    // its page_break, now kept for page breaks too (see shownOf): counted here for those stored.
    await queryRunner.query(`
            INSERT INTO block_stats (form_id, block_id, shown)
            SELECT r.form_id, b.id, count(*) FROM responses r
              CROSS JOIN LATERAL jsonb_array_elements_text(CASE WHEN jsonb_typeof(r.shown) = 'array' THEN r.shown ELSE '[]'::jsonb END) e
              JOIN blocks b ON b.form_id = r.form_id AND b.id = e AND b.type = 'page_break'
             WHERE r.seq IS NOT NULL GROUP BY 1, 2
            ON CONFLICT (form_id, block_id) DO UPDATE SET shown = EXCLUDED.shown
        `);
    await queryRunner.query(`
            CREATE TABLE "partial_responses" (
                "id" uuid NOT NULL,
                "form_id" uuid NOT NULL,
                "answers" jsonb NOT NULL DEFAULT '{}',
                "hidden" jsonb NOT NULL DEFAULT '{}',
                "pages_reached" text array NOT NULL DEFAULT '{}',
                "last_page" text NOT NULL DEFAULT '',
                "source" text NOT NULL DEFAULT 'api',
                "resume_hash" bytea,
                "started_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_partial_responses" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`CREATE INDEX "IDX_partial_responses_form" ON "partial_responses" ("form_id", "id")`);
    await queryRunner.query(`CREATE INDEX "IDX_partial_responses_updated" ON "partial_responses" ("updated_at")`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "IDX_partial_responses_resume" ON "partial_responses" ("resume_hash") WHERE resume_hash IS NOT NULL`,
    );
    await queryRunner.query(
      `ALTER TABLE "partial_responses" ADD CONSTRAINT "FK_partial_responses_form" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`
            CREATE TABLE "partial_page_counts" (
                "form_id" uuid NOT NULL,
                "page" text NOT NULL,
                "n" bigint NOT NULL DEFAULT 0,
                CONSTRAINT "PK_partial_page_counts" PRIMARY KEY ("form_id", "page")
            )
        `);
    await queryRunner.query(
      `ALTER TABLE "partial_page_counts" ADD CONSTRAINT "FK_partial_page_counts_form" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`ALTER TABLE "uploads" DROP CONSTRAINT "FK_7574b96e940f76e86c54b7d006e"`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "uploads" ADD CONSTRAINT "FK_7574b96e940f76e86c54b7d006e" FOREIGN KEY ("response_id") REFERENCES "responses"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`DROP TABLE "partial_page_counts"`);
    await queryRunner.query(`DROP TABLE "partial_responses"`);
    await queryRunner.query(
      `DELETE FROM block_stats s USING blocks b WHERE b.form_id = s.form_id AND b.id = s.block_id AND b.type = 'page_break'`,
    );
    await queryRunner.query(`ALTER TABLE "responses" DROP COLUMN "resume_hash"`);
    await queryRunner.query(`ALTER TABLE "responses" DROP COLUMN "last_page"`);
    await queryRunner.query(`ALTER TABLE "responses" DROP COLUMN "started_at"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP COLUMN "partial_responses"`);
  }
}

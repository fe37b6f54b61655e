import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Summaries count, per block, how many responses were shown it (issue 25), kept with the other
 * aggregates by the form's sequencer, deletes and recounts:
 * - block_stats.shown: counted responses whose recorded path (responses.shown) showed the block;
 * - response_counters.recorded: counted responses that have a recorded path. A response without
 *   one (stored before forms had rules, or to a form without rules) was shown every block, so a
 *   block's shown count is block_stats.shown + total - recorded.
 * Backfilled from the responses already stored with a path (none before FormLogic).
 */
export class ShownStats1796000030001 implements MigrationInterface {
  name = 'ShownStats1796000030001';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "block_stats" ADD "shown" bigint NOT NULL DEFAULT 0`);
    await queryRunner.query(`ALTER TABLE "response_counters" ADD "recorded" bigint NOT NULL DEFAULT 0`);
    await queryRunner.query(
      `UPDATE response_counters c SET recorded = x.n
         FROM (SELECT form_id, count(*) AS n FROM responses WHERE seq IS NOT NULL AND shown IS NOT NULL GROUP BY form_id) x
        WHERE c.form_id = x.form_id`,
    );
    await queryRunner.query(
      `INSERT INTO block_stats (form_id, block_id, shown)
       SELECT r.form_id, b.id, count(*) FROM responses r
         CROSS JOIN LATERAL jsonb_array_elements_text(r.shown) e
         JOIN blocks b ON b.form_id = r.form_id AND b.id = e AND b.type NOT IN ('statement', 'page_break')
        WHERE r.seq IS NOT NULL AND jsonb_typeof(r.shown) = 'array'
        GROUP BY 1, 2
       ON CONFLICT (form_id, block_id) DO UPDATE SET shown = EXCLUDED.shown`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "response_counters" DROP COLUMN "recorded"`);
    await queryRunner.query(`ALTER TABLE "block_stats" DROP COLUMN "shown"`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * hidden_counts: how many sequenced responses of a form hold each value of each hidden field, kept
 * with the other aggregates by the form's sequencer, deletes and recounts, so that the total of a
 * list filtered with equals / in on a hidden field is read, not counted (issue 38: 1M matching rows
 * took 1.3 s to count). Keyed by the SHA-256 of the value's UTF-8: values take up to 1000
 * characters, more than a btree key holds.
 *
 * response_counters.hidden_total / hidden_seq are total and last_seq as hidden_counts knows them.
 * The code that keeps hidden_counts moves them with total and last_seq; an instance of the previous
 * version, still running during a deploy, moves only total and last_seq. Where they differ the
 * counts are not read (the list counts rows) until the form's aggregates are recomputed.
 *
 * The backfill runs a transaction per form, under the form's sequencer lock (the form's row, then
 * its advisory lock, as ResponseStatsRepository.lockSequencer takes them), which every version
 * takes to sequence or delete: the form's sequenced responses cannot change meanwhile, and no
 * other form waits. Not a single transaction (`transaction = false`), so that reads of other forms
 * never wait on it. A run that stopped midway starts again where it stopped: a form in step is
 * skipped. About 3 s per million responses with a hidden value (bench/README.md, session 16).
 */
export class HiddenCounts1796000450000 implements MigrationInterface {
  name = 'HiddenCounts1796000450000';
  transaction = false;

  public async up(queryRunner: QueryRunner): Promise<void> {
    await inTransaction(queryRunner, async () => {
      await queryRunner.query(
        `CREATE TABLE IF NOT EXISTS "hidden_counts" ("form_id" uuid NOT NULL, "name" text NOT NULL, "digest" bytea NOT NULL, "count" bigint NOT NULL, CONSTRAINT "PK_c8be649df68323e8da087a112a9" PRIMARY KEY ("form_id", "name", "digest"))`,
      );
      await queryRunner.query(
        `ALTER TABLE "response_counters" ADD COLUMN IF NOT EXISTS "hidden_total" bigint NOT NULL DEFAULT '0'`,
      );
      await queryRunner.query(
        `ALTER TABLE "response_counters" ADD COLUMN IF NOT EXISTS "hidden_seq" bigint NOT NULL DEFAULT '0'`,
      );
      const [fk] = await queryRunner.query(
        `SELECT 1 FROM pg_constraint WHERE conname = 'FK_3119d5bf5e2d87848ea688fa066'`,
      );
      if (!fk)
        await queryRunner.query(
          `ALTER TABLE "hidden_counts" ADD CONSTRAINT "FK_3119d5bf5e2d87848ea688fa066" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
        );
    });

    const forms: Array<{ form_id: string }> = await queryRunner.query(
      `SELECT form_id FROM response_counters WHERE hidden_total <> total OR hidden_seq <> last_seq ORDER BY form_id`,
    );
    for (const { form_id: formId } of forms)
      await inTransaction(queryRunner, async () => {
        const locked: unknown[] = await queryRunner.query(
          `SELECT pg_advisory_xact_lock(hashtextextended('formwork.sequencer:' || f.id::text, 0))
             FROM (SELECT id FROM forms WHERE id = $1 FOR KEY SHARE) f`,
          [formId],
        );
        if (!locked.length) return; // deleted meanwhile
        await queryRunner.query(`DELETE FROM hidden_counts WHERE form_id = $1`, [formId]);
        await queryRunner.query(
          `INSERT INTO hidden_counts (form_id, name, digest, count)
           SELECT $1::uuid, h.key, sha256(convert_to(h.value #>> '{}', 'UTF8')), count(*)
             FROM responses r CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(r.hidden) = 'object' THEN r.hidden ELSE '{}' END) h
            WHERE r.form_id = $1::uuid AND r.seq IS NOT NULL AND r.hidden <> '{}'
              AND jsonb_typeof(h.value) = 'string' AND h.value <> '""'
            GROUP BY 1, 2, 3`,
          [formId],
        );
        await queryRunner.query(
          `UPDATE response_counters SET hidden_total = total, hidden_seq = last_seq WHERE form_id = $1`,
          [formId],
        );
      });
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "response_counters" DROP COLUMN "hidden_seq"`);
    await queryRunner.query(`ALTER TABLE "response_counters" DROP COLUMN "hidden_total"`);
    await queryRunner.query(`DROP TABLE "hidden_counts"`);
  }
}

async function inTransaction(queryRunner: QueryRunner, work: () => Promise<void>): Promise<void> {
  await queryRunner.startTransaction();
  try {
    await work();
    await queryRunner.commitTransaction();
  } catch (err) {
    await queryRunner.rollbackTransaction();
    throw err;
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A segment's first build scans its matches without holding the form's sequencer lock: the row is
 * inserted first, under the lock, with scan_seq = the form's last_seq, and the sequencer folds
 * newer responses into it while the scan counts those up to scan_seq; the scan is added under the
 * lock and scan_seq set to NULL. A row with scan_seq is not read (not ready); its form_total is
 * kept 2^40 below the form's meanwhile, so that an instance of the version before (during a
 * deploy) sees it out of step and makes the segment again rather than read it. Rows from before
 * were made whole under the lock: NULL, ready.
 */
export class SegmentScanSeq1796000490000 implements MigrationInterface {
  name = 'SegmentScanSeq1796000490000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "response_segments" ADD "scan_seq" bigint`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "response_segments" DROP COLUMN "scan_seq"`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * GIN indexes (jsonb_path_ops) on responses.answers and responses.hidden, for the filters of
 * list_responses, summarize_responses, export_responses and the results page (issue 38): an
 * `equals` of one value on a block or a hidden field is a containment, `answers @> {block: value}`
 * or `hidden @> {name: value}` (conditionSql), which these indexes answer, so a filter matching a
 * few rows of a big form reads those rows, not every row of the form. jsonb_path_ops keeps one
 * hash per value (the smallest and fastest GIN for @>, which is the only operator it serves).
 *
 * Built CONCURRENTLY, outside a transaction (`transaction = false`): on a big table a plain build
 * would hold off every submission for minutes (at 10M responses the build takes minutes; instances
 * of the previous version keep answering meanwhile, since the service starts only once `migrate`
 * has run). A concurrent build waits for the transactions older than it, among them a second
 * `migrate` waiting for the migration lock (migrate.ts): run one `migrate` at a time. A build that
 * failed leaves an invalid index, dropped before the next try; one that succeeded is kept.
 */
export class ResponseFilterIndexes1796000430000 implements MigrationInterface {
  name = 'ResponseFilterIndexes1796000430000';
  transaction = false;

  public async up(queryRunner: QueryRunner): Promise<void> {
    for (const [name, column] of INDEXES) {
      const [index] = await queryRunner.query(
        `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1`,
        [name],
      );
      if (index?.valid) continue; // built by an earlier try of this migration
      if (index) await queryRunner.query(`DROP INDEX CONCURRENTLY "${name}"`); // a failed build's leftover
      await queryRunner.query(
        `CREATE INDEX CONCURRENTLY "${name}" ON "responses" USING gin ("${column}" jsonb_path_ops)`,
      );
    }
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const [name] of INDEXES) await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS "${name}"`);
  }
}

const INDEXES = [
  ['IDX_responses_answers', 'answers'],
  ['IDX_responses_hidden', 'hidden'],
] as const;

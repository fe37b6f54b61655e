import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A GIN index (jsonb_path_ops) on responses.variables (issue 46), for `where` filters on a form's
 * variables, as migration 1796000430000's serve blocks and hidden fields: a number variable's
 * `equals` is the containment `variables @> {name: value}` (conditionSql), and a range on one
 * (gt, gte, lt, lte) that few responses match is read as the containment of any of the values in
 * that range the maintained counts hold (answer_counts: see ResponsesService.list), so a filter
 * matching a few rows of a big form reads those rows, not every row of the form until 50 match.
 *
 * Partial (variables IS NOT NULL): responses of forms that compute nothing add no entry, so their
 * inserts pay nothing for it. Built CONCURRENTLY, outside a transaction, as 1796000430000's (see
 * there): a build that failed leaves an invalid index, dropped before the next try.
 */
export class VariableFilterIndex1796000710000 implements MigrationInterface {
  name = 'VariableFilterIndex1796000710000';
  transaction = false;

  public async up(queryRunner: QueryRunner): Promise<void> {
    const [index] = await queryRunner.query(
      `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1`,
      [NAME],
    );
    if (index?.valid) return; // built by an earlier try of this migration
    if (index) await queryRunner.query(`DROP INDEX CONCURRENTLY "${NAME}"`); // a failed build's leftover
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY "${NAME}" ON "responses" USING gin ("variables" jsonb_path_ops) WHERE variables IS NOT NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS "${NAME}"`);
  }
}

const NAME = 'IDX_responses_variables';

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Deliveries that wait for their endpoint (disabled) or their workspace (back on Free) leave the
 * due index: a claim that meets one marks it 'paused', and the delivery loop makes it 'pending'
 * again, oldest first, once its endpoint is enabled and its workspace on Pro, finding the paused
 * rows of each endpoint through this index of paused rows only. Before, they stayed pending, and
 * every claim, every half second on every instance, walked past all of them (a Free workspace with
 * an endpoint keeps recording events for 30 days).
 *
 * Not built CONCURRENTLY: that waits for every transaction open at the time, and an instance that
 * waits for the migration lock (migrate.ts) holds one, so two instances starting together would
 * wait on each other. The build reads the whole table once (the index itself starts empty), during
 * which writes of deliveries wait.
 */
export class WebhookDeliveriesPaused1795800000000 implements MigrationInterface {
  name = 'WebhookDeliveriesPaused1795800000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_paused" ON "webhook_deliveries" ("endpoint_id", "next_attempt_at") WHERE "status" = 'paused'`,
    );
  }

  /** Stop the instances of this version first: they would pause deliveries again. */
  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`UPDATE "webhook_deliveries" SET "status" = 'pending' WHERE "status" = 'paused'`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_paused"`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * webhook_deliveries loses its index on created_at: every delivery wrote an entry into it twice
 * (on insert, by the submission's statement, and again when recorded as delivered, an update that
 * cannot be HOT), only for the purge of 30-day-old rows, which now walks each endpoint's part of
 * IDX_webhook_deliveries_endpoint (endpoint_id, created_at) instead.
 */
export class WebhookDeliveriesFewerIndexes1795700000000 implements MigrationInterface {
  name = 'WebhookDeliveriesFewerIndexes1795700000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_created_at"`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX "IDX_webhook_deliveries_created_at" ON "webhook_deliveries" ("created_at")`);
  }
}

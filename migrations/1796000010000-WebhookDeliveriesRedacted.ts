import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A delivery of a deleted response (delete_response, or delete_form for each of its responses) is
 * redacted in the transaction of the delete: its stored payload keeps the response's id and
 * submittedAt, not its answers, and `redacted` says why ('response_deleted' or 'form_deleted').
 * redeliver_webhook refuses such a delivery (404), and list_webhook_deliveries shows it redacted.
 * Nullable without a default: adding it rewrites no row, and no index is added (each one costs
 * every delivery's writes).
 */
export class WebhookDeliveriesRedacted1796000010000 implements MigrationInterface {
  name = 'WebhookDeliveriesRedacted1796000010000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" ADD "redacted" text`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" DROP COLUMN "redacted"`);
  }
}

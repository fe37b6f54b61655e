import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 53, traces: the W3C traceparent of the request that queued a webhook delivery, so that its
 * `webhook deliver` span links to that request's trace. Nullable: rows written without a trace
 * (tracing off, the batched response store) have none.
 */
export class WebhookDeliveryTraceparent1796000640000 implements MigrationInterface {
  name = 'WebhookDeliveryTraceparent1796000640000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" ADD "traceparent" text`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" DROP COLUMN "traceparent"`);
  }
}

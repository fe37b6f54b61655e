import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Deliveries no longer have a foreign key to their endpoint. Every submission to a workspace with
 * an endpoint writes a delivery, and the key made each of those inserts share-lock the endpoint's
 * row: with submissions arriving at once that lock becomes a multixact, and the row, its page and
 * the WAL are written for every response. A pgbench of the submission statement (10 clients) ran
 * 21% to 29% more of them per second without the key (see bench/README.md, Webhooks).
 *
 * What the key did is now done by hand: delete_webhook deletes the endpoint's deliveries with it,
 * and a delivery written by a submission that raced that delete (its endpoint gone) is deleted by
 * the first claim that meets it (CLAIM_SQL). Attempts keep their key to deliveries.
 */
export class WebhookDeliveriesNoEndpointKey1795900000000 implements MigrationInterface {
  name = 'WebhookDeliveriesNoEndpointKey1795900000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "FK_0b882c26a9b91c26e6e86b4867c"`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `DELETE FROM "webhook_deliveries" d WHERE NOT EXISTS (SELECT 1 FROM "webhook_endpoints" e WHERE e.id = d.endpoint_id)`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "FK_0b882c26a9b91c26e6e86b4867c" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }
}

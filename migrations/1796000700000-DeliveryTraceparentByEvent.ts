import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 53, traces: the response.created deliveries written by the response store functions
 * (formwork_store_responses_v4 / formwork_store_claiming_responses_v5, not changed here) get the
 * traceparent of the request that made each response. With tracing on, the store statement first
 * sets `formwork.traceparents` (local to its transaction) to a JSON object of event id to
 * traceparent (see ResponsesRepository.insertMany: a batched statement holds several requests'
 * responses); this trigger fills a delivery's traceparent from it. Untraced, the setting is unset
 * or empty, and the trigger's WHEN is false: its function never runs.
 */
export class DeliveryTraceparentByEvent1796000700000 implements MigrationInterface {
  name = 'DeliveryTraceparentByEvent1796000700000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE FUNCTION formwork_delivery_traceparent() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.traceparent := current_setting('formwork.traceparents', true)::jsonb ->> NEW.event_id;
  RETURN NEW;
END $$`);
    await queryRunner.query(`CREATE TRIGGER webhook_deliveries_traceparent BEFORE INSERT ON webhook_deliveries
  FOR EACH ROW WHEN (NEW.traceparent IS NULL AND current_setting('formwork.traceparents', true) <> '')
  EXECUTE FUNCTION formwork_delivery_traceparent()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER webhook_deliveries_traceparent ON webhook_deliveries`);
    await queryRunner.query(`DROP FUNCTION formwork_delivery_traceparent()`);
  }
}

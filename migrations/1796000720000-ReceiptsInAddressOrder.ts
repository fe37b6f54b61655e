import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The receipts' trigger (migration 1796000670000) takes each address's advisory lock in the order
 * of the addresses, so two batched inserts naming the same addresses in other orders ({a, b} and
 * {b, a}) wait on each other in turn instead of deadlocking (40P01 would fail every response of
 * the losing batch). Otherwise the same function. Frozen, as every migration's SQL is.
 */
export class ReceiptsInAddressOrder1796000720000 implements MigrationInterface {
  name = 'ReceiptsInAddressOrder1796000720000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE OR REPLACE FUNCTION formwork_email_receipts() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE
              c record;
            BEGIN
              FOR c IN
                SELECT f.workspace_id, f.id AS form_id, n.id AS response_id, lower(btrim(n.answers ->> b.id)) AS address
                  FROM new_responses n
                  JOIN forms f ON f.id = n.form_id AND f.receipt IS NOT NULL
                  JOIN blocks b ON b.form_id = f.id AND b.type = 'email' AND b.settings ->> 'ref' = f.receipt ->> 'to'
                 WHERE jsonb_typeof(n.answers -> b.id) = 'string'
                 ORDER BY 4
              LOOP
                CONTINUE WHEN c.address IS NULL OR length(c.address) > 254
                  OR c.address !~ '^[a-z0-9.!#$%&''*+/=?^_\`{|}~-]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$';
                PERFORM pg_advisory_xact_lock(hashtextextended('formwork.email:' || c.address, 0));
                CONTINUE WHEN (SELECT count(*) FROM email_outbox o
                                WHERE o.to_address = c.address AND o.form_id IS NOT NULL AND o.subscription_id IS NULL
                                  AND o.created_at > now() - interval '1 hour') >= 3;
                CONTINUE WHEN (SELECT count(*) FROM email_outbox o
                                WHERE o.form_id = c.form_id AND o.subscription_id IS NULL AND o.kind = 'receipt'
                                  AND o.created_at > now() - interval '1 hour') >= 500;
                INSERT INTO email_outbox (workspace_id, kind, to_address, form_id, response_id)
                VALUES (c.workspace_id, 'receipt', c.address, c.form_id, c.response_id);
              END LOOP;
              RETURN NULL;
            END $$
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE OR REPLACE FUNCTION formwork_email_receipts() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE
              c record;
            BEGIN
              FOR c IN
                SELECT f.workspace_id, f.id AS form_id, n.id AS response_id, lower(btrim(n.answers ->> b.id)) AS address
                  FROM new_responses n
                  JOIN forms f ON f.id = n.form_id AND f.receipt IS NOT NULL
                  JOIN blocks b ON b.form_id = f.id AND b.type = 'email' AND b.settings ->> 'ref' = f.receipt ->> 'to'
                 WHERE jsonb_typeof(n.answers -> b.id) = 'string'
              LOOP
                CONTINUE WHEN c.address IS NULL OR length(c.address) > 254
                  OR c.address !~ '^[a-z0-9.!#$%&''*+/=?^_\`{|}~-]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$';
                PERFORM pg_advisory_xact_lock(hashtextextended('formwork.email:' || c.address, 0));
                CONTINUE WHEN (SELECT count(*) FROM email_outbox o
                                WHERE o.to_address = c.address AND o.form_id IS NOT NULL AND o.subscription_id IS NULL
                                  AND o.created_at > now() - interval '1 hour') >= 3;
                CONTINUE WHEN (SELECT count(*) FROM email_outbox o
                                WHERE o.form_id = c.form_id AND o.subscription_id IS NULL AND o.kind = 'receipt'
                                  AND o.created_at > now() - interval '1 hour') >= 500;
                INSERT INTO email_outbox (workspace_id, kind, to_address, form_id, response_id)
                VALUES (c.workspace_id, 'receipt', c.address, c.form_id, c.response_id);
              END LOOP;
              RETURN NULL;
            END $$
        `);
  }
}

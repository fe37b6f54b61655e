import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 48, items 4 and 5: email to respondents. forms.receipt: the receipt setting ({ to: an email
 * block's ref, subject?, message? }), null when off. email_outbox.client_ip: the address of the page
 * post that asked for a message (a resume link), to limit what one client can send; email_outbox.sealed:
 * a secret the message carries (a resume link's), sealed under WEBHOOK_SECRET_KEY and cleared once the
 * message is done with. The indexes count a recipient's, a form's and a client's recent messages.
 *
 * A receipt is written by a statement-level trigger on responses beside the notifications' (every path
 * that stores a completed response inserts it there), so it commits with the response. It is skipped
 * (never queued) for an answer that is no address, and past 3 messages an hour to the address or 500
 * receipts an hour of the form; a transaction-scoped advisory lock per address makes the count exact
 * under concurrency.
 */
export class EmailRespondents1796000670000 implements MigrationInterface {
  name = 'EmailRespondents1796000670000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "forms" ADD "receipt" jsonb`);
    await queryRunner.query(`ALTER TABLE "email_outbox" ADD "client_ip" text`);
    await queryRunner.query(`ALTER TABLE "email_outbox" ADD "sealed" text`);
    await queryRunner.query(
      `CREATE INDEX "IDX_email_outbox_recipient" ON "email_outbox" ("to_address", "created_at") WHERE form_id IS NOT NULL AND subscription_id IS NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_email_outbox_form" ON "email_outbox" ("form_id", "created_at") WHERE form_id IS NOT NULL AND subscription_id IS NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_email_outbox_client" ON "email_outbox" ("client_ip", "created_at") WHERE client_ip IS NOT NULL`,
    );
    await queryRunner.query(`
            CREATE FUNCTION formwork_email_receipts() RETURNS trigger LANGUAGE plpgsql AS $$
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
    await queryRunner.query(`
            CREATE TRIGGER "TRG_responses_receipt" AFTER INSERT ON "responses"
            REFERENCING NEW TABLE AS new_responses FOR EACH STATEMENT EXECUTE FUNCTION formwork_email_receipts()
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "TRG_responses_receipt" ON "responses"`);
    await queryRunner.query(`DROP FUNCTION formwork_email_receipts()`);
    await queryRunner.query(`DROP INDEX "IDX_email_outbox_client"`);
    await queryRunner.query(`DROP INDEX "IDX_email_outbox_form"`);
    await queryRunner.query(`DROP INDEX "IDX_email_outbox_recipient"`);
    await queryRunner.query(`ALTER TABLE "email_outbox" DROP COLUMN "sealed"`);
    await queryRunner.query(`ALTER TABLE "email_outbox" DROP COLUMN "client_ip"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP COLUMN "receipt"`);
  }
}

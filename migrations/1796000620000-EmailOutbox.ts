import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 48: email. email_subscriptions: a member's notifications of one form (each response, or an
 * hourly or daily digest; no row is off). email_outbox: one message to send, written in the
 * transaction that causes it and sent by the delivery loop (the webhooks' loop, generalised: claims
 * with leases, backoff, fairness between workspaces). A message is rendered when it is sent, from
 * what it names (a response, a digest's window), so a response deleted meanwhile is not mailed.
 *
 * A new response's notifications are written by a statement-level trigger on responses (every path
 * that stores a completed response inserts it there, the batched store functions included), so the
 * outbox row commits with the response, and a workspace without subscriptions pays one join of the
 * statement's new rows against an empty index.
 */
export class EmailOutbox1796000620000 implements MigrationInterface {
  name = 'EmailOutbox1796000620000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "email_subscriptions" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "workspace_id" uuid NOT NULL REFERENCES "workspaces"("id") ON DELETE CASCADE,
                "form_id" uuid NOT NULL REFERENCES "forms"("id") ON DELETE CASCADE,
                "user_id" uuid NOT NULL REFERENCES "users"("id") ON DELETE CASCADE,
                "mode" text NOT NULL CHECK ("mode" IN ('each', 'hourly', 'daily')),
                "digest_from" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_email_subscriptions" PRIMARY KEY ("form_id", "user_id"),
                CONSTRAINT "UQ_email_subscriptions_id" UNIQUE ("id")
            )
        `);
    await queryRunner.query(`CREATE INDEX "IDX_email_subscriptions_user" ON "email_subscriptions" ("user_id")`);
    await queryRunner.query(
      `CREATE INDEX "IDX_email_subscriptions_digest" ON "email_subscriptions" ("digest_from") WHERE mode <> 'each'`,
    );
    await queryRunner.query(`
            CREATE TABLE "email_outbox" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "workspace_id" uuid NOT NULL REFERENCES "workspaces"("id") ON DELETE CASCADE,
                "kind" text NOT NULL,
                "to_address" text NOT NULL,
                "subscription_id" uuid,
                "form_id" uuid,
                "response_id" uuid,
                "since" TIMESTAMP WITH TIME ZONE,
                "until" TIMESTAMP WITH TIME ZONE,
                "status" text NOT NULL DEFAULT 'pending',
                "next_attempt_at" TIMESTAMP WITH TIME ZONE DEFAULT now(),
                "claimed_until" TIMESTAMP WITH TIME ZONE,
                "claim_token" uuid,
                "attempt_count" integer NOT NULL DEFAULT 0,
                "last_attempt_at" TIMESTAMP WITH TIME ZONE,
                "last_code" integer,
                "last_answer" text,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_email_outbox" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(
      `CREATE INDEX "IDX_email_outbox_due" ON "email_outbox" ("next_attempt_at") WHERE status = 'pending'`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_email_outbox_workspace" ON "email_outbox" ("workspace_id", "created_at")`,
    );
    await queryRunner.query(`
            CREATE FUNCTION formwork_email_on_responses() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              INSERT INTO email_outbox (workspace_id, kind, to_address, subscription_id, form_id, response_id)
              SELECT s.workspace_id, 'notification', u.email, s.id, s.form_id, n.id
                FROM new_responses n
                JOIN email_subscriptions s ON s.form_id = n.form_id AND s.mode = 'each'
                JOIN memberships m ON m.workspace_id = s.workspace_id AND m.user_id = s.user_id
                JOIN users u ON u.id = s.user_id;
              RETURN NULL;
            END $$
        `);
    await queryRunner.query(`
            CREATE TRIGGER "TRG_responses_email" AFTER INSERT ON "responses"
            REFERENCING NEW TABLE AS new_responses FOR EACH STATEMENT EXECUTE FUNCTION formwork_email_on_responses()
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "TRG_responses_email" ON "responses"`);
    await queryRunner.query(`DROP FUNCTION formwork_email_on_responses()`);
    await queryRunner.query(`DROP TABLE "email_outbox"`);
    await queryRunner.query(`DROP TABLE "email_subscriptions"`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Registered OAuth clients now expire 30 days after their last use (the adapter sets and moves
 * oauth_models.expires_at), and every client is public. Clients registered before were stored
 * without an expiry, and so were their registration access tokens, which are no longer issued:
 * they get 30 days from now. Clients registered with a secret method become public ("none"), and
 * their stored secret is dropped (the server now accepts no other method). No schema change.
 */

export class OAuthClientExpiry1795400000000 implements MigrationInterface {
  name = 'OAuthClientExpiry1795400000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            UPDATE "oauth_models" SET "expires_at" = now() + interval '30 days'
             WHERE "model" IN ('Client', 'RegistrationAccessToken') AND "expires_at" IS NULL
        `);
    await queryRunner.query(`
            UPDATE "oauth_models"
               SET "payload" = ("payload" - 'client_secret' - 'client_secret_expires_at' - 'token_endpoint_auth_signing_alg')
                               || '{"token_endpoint_auth_method": "none"}'::jsonb
             WHERE "model" = 'Client' AND ("payload"->>'token_endpoint_auth_method' IS DISTINCT FROM 'none' OR "payload" ? 'client_secret')
        `);
  }

  public async down(): Promise<void> {
    // Nothing to undo: the previous version accepts these rows as they are now.
  }
}

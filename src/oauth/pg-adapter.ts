/** oidc-provider's storage on PostgreSQL. */
import type { DataSource } from 'typeorm';
import { currentManager } from '../database/transaction';
import { isClientDocumentId } from './client-metadata-document';
import { CLIENT_TTL_DAYS } from './oauth-config';

type Payload = Record<string, unknown> & { grantId?: string; userCode?: string; uid?: string; consumed?: unknown };

/** Reads a client metadata document (client-metadata-document.ts), throwing the OAuth error that says why it cannot be used. */
export type ClientDocuments = (id: string) => Promise<{ metadata: Payload; cacheSeconds: number | null }>;

/**
 * oidc-provider's persistence on PostgreSQL (its adapter interface: upsert, find, findByUid,
 * findByUserCode, consume, destroy, revokeByGrantId), one class per model name.
 * Expired rows are never returned, and are purged by the OAuth service. Registered clients
 * expire CLIENT_TTL_DAYS after their last use (oidc-provider stores them without an expiry).
 * A client id that is a URL is a client metadata document, read through `documents` and kept
 * as long as its Cache-Control says (model ClientDocument, so every instance shares it).
 */
export function pgAdapter(db: DataSource, documents?: ClientDocuments) {
  return class PgAdapter {
    constructor(private readonly model: string) {}

    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      if (this.model === 'Client' && expiresIn === undefined) expiresIn = CLIENT_TTL_DAYS * 24 * 3600;
      await currentManager(db).query(
        `INSERT INTO oauth_models (model, id, payload, grant_id, user_code, uid, expires_at)
         VALUES ($1, $2, $3::jsonb, $4, $5, $6, CASE WHEN $7::int IS NULL THEN NULL ELSE now() + make_interval(secs => $7::int) END)
         ON CONFLICT (model, id) DO UPDATE SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id,
           user_code = EXCLUDED.user_code, uid = EXCLUDED.uid, expires_at = EXCLUDED.expires_at`,
        [
          this.model,
          id,
          JSON.stringify(payload),
          payload.grantId ?? null,
          payload.userCode ?? null,
          payload.uid ?? null,
          expiresIn ?? null,
        ],
      );
    }

    find(id: string) {
      if (this.model !== 'Client') return this.one('id = $2', id);
      return documents && isClientDocumentId(id) ? this.findDocument(id, documents) : this.findClient(id);
    }

    findByUid(uid: string) {
      return this.one('uid = $2', uid);
    }

    findByUserCode(userCode: string) {
      return this.one('user_code = $2', userCode);
    }

    async consume(id: string): Promise<void> {
      await currentManager(db).query(
        `UPDATE oauth_models SET consumed_at = now(), payload = payload || jsonb_build_object('consumed', extract(epoch from now())::bigint)
          WHERE model = $1 AND id = $2`,
        [this.model, id],
      );
    }

    async destroy(id: string): Promise<void> {
      await currentManager(db).query('DELETE FROM oauth_models WHERE model = $1 AND id = $2', [this.model, id]);
    }

    /** Called on refresh token reuse, revocation and grant removal: every token of the grant goes. */
    async revokeByGrantId(grantId: string): Promise<void> {
      await currentManager(db).query(`DELETE FROM oauth_models WHERE grant_id = $1 OR (model = 'Grant' AND id = $1)`, [
        grantId,
      ]);
      await currentManager(db).query(
        'UPDATE oauth_grants SET revoked_at = now() WHERE grant_id = $1 AND revoked_at IS NULL',
        [grantId],
      );
    }

    /**
     * Every use of a client reads it: reading moves its expiry to CLIENT_TTL_DAYS from now, written
     * only when less than CLIENT_TTL_DAYS - 1 remain (at most once a day per client). The SELECT sees
     * the row as it was before the UPDATE, which touches only unexpired rows anyway.
     */
    private async findClient(id: string): Promise<Payload | undefined> {
      const [row] = await currentManager(db).query(
        `WITH used AS (
           UPDATE oauth_models SET expires_at = now() + interval '${CLIENT_TTL_DAYS} days'
            WHERE model = 'Client' AND id = $1 AND expires_at > now() AND expires_at < now() + interval '${CLIENT_TTL_DAYS - 1} days')
         SELECT payload FROM oauth_models WHERE model = 'Client' AND id = $1 AND (expires_at IS NULL OR expires_at > now())`,
        [id],
      );
      return row?.payload;
    }

    /**
     * A client metadata document: the copy kept while its cache lifetime lasts, otherwise fetched
     * (and kept unless it said no-store/no-cache). Kept apart from registered clients (model
     * ClientDocument): its expiry is the cache's, and its grants do not end when the copy does.
     */
    private async findDocument(id: string, fetchDocument: ClientDocuments): Promise<Payload | undefined> {
      const [row] = await currentManager(db).query(
        `SELECT payload FROM oauth_models WHERE model = 'ClientDocument' AND id = $1 AND expires_at > now()`,
        [id],
      );
      if (row) return row.payload;
      const { metadata, cacheSeconds } = await fetchDocument(id);
      if (cacheSeconds !== null) {
        await currentManager(db).query(
          `INSERT INTO oauth_models (model, id, payload, expires_at)
           VALUES ('ClientDocument', $1, $2::jsonb, now() + make_interval(secs => $3::int))
           ON CONFLICT (model, id) DO UPDATE SET payload = EXCLUDED.payload, expires_at = EXCLUDED.expires_at`,
          [id, JSON.stringify(metadata), cacheSeconds],
        );
      }
      return metadata;
    }

    private async one(where: string, value: string): Promise<Payload | undefined> {
      const [row] = await currentManager(db).query(
        `SELECT payload FROM oauth_models WHERE model = $1 AND ${where} AND (expires_at IS NULL OR expires_at > now())`,
        [this.model, value],
      );
      return row?.payload;
    }
  };
}

/** The SQL of idempotency_keys (IdempotencyRepository): claiming a key, storing and replaying answers, forgetting what a deletion removed, purging. */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { IdempotencyKeyEntity } from './entities/idempotency-key.entity';

/** How long a key is remembered: a retry within this replays, a later one runs afresh. */
export const RETENTION_HOURS = 24;
/**
 * How long a run of a read tool holds its key (a write tool's claim lives in its transaction and
 * is never left behind). After this, a retry takes over a key whose instance died mid-run.
 */
export const LOCK_SECONDS = 60;
/** The purge deletes at most PURGE_BATCH rows per statement. */
export const PURGE_BATCH = 1_000;

/** A claim's outcome: whether this call took the key, and else the record that holds it (if still kept). */
export type ClaimRow = { claimed: boolean } & Pick<
  IdempotencyKeyEntity,
  'responseStatus' | 'responseHeaders' | 'responseBody'
> & {
    fingerprint: Buffer | null;
  };

/** Which call a record belongs to: the credential, the tool and the key. */
export interface KeyId {
  scope: string;
  tool: string;
  key: string;
}

/** A finished answer to store, and the form and response it shows (forgotten when they are deleted). */
export type StoredAnswer = Pick<
  IdempotencyKeyEntity,
  'responseStatus' | 'responseBody' | 'formPublicId' | 'responseId'
> & {
  responseHeaders: Record<string, string> | null;
};

const KEY_WHERE = 'scope = $1 AND tool = $2 AND idempotency_key = $3';
/** A transaction-level advisory lock per key: held by a write tool's run, so a duplicate gets 409 at once instead of waiting. */
const KEY_LOCK = 'pg_try_advisory_xact_lock(hashtextextended($1 || chr(31) || $2 || chr(31) || $3, 0))';
/**
 * An existing row may be replaced when it has expired, or when it is a run whose lock expired (its
 * instance died) for the same body. The store function (migrations/1796000470000-StoreResponsesFunction.ts)
 * claims create_response's keys in its statement by the same lock and rule, written out there.
 */
const REPLACEABLE = `k.created_at <= now() - interval '${RETENTION_HOURS} hours'
      OR (k.response_status IS NULL AND k.locked_until <= now() AND k.fingerprint = EXCLUDED.fingerprint)`;

const CLAIM_SQL = `
WITH lock AS (SELECT ${KEY_LOCK} AS got),
claimed AS (
  INSERT INTO idempotency_keys AS k (scope, tool, idempotency_key, fingerprint, lock_token, locked_until, workspace_id, read_only)
  SELECT $1, $2, $3, $4, $5, now() + make_interval(secs => $6), $7, $8 FROM lock WHERE got
  ON CONFLICT (scope, tool, idempotency_key) DO UPDATE
     SET fingerprint = EXCLUDED.fingerprint, lock_token = EXCLUDED.lock_token, locked_until = EXCLUDED.locked_until,
         response_status = NULL, response_headers = NULL, response_body = NULL, created_at = now(),
         workspace_id = EXCLUDED.workspace_id, read_only = EXCLUDED.read_only, form_public_id = NULL, response_id = NULL
   WHERE ${REPLACEABLE}
  RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM claimed) AS claimed, e.fingerprint, e.response_status AS "responseStatus",
       e.response_headers AS "responseHeaders", e.response_body AS "responseBody"
  FROM lock l
  LEFT JOIN idempotency_keys e
    ON e.scope = $1 AND e.tool = $2 AND e.idempotency_key = $3 AND e.created_at > now() - interval '${RETENTION_HOURS} hours'`;

/** Stores a finished answer without a prior claim (a write tool's 4xx, after its transaction rolled back). */
const STORE_SQL = `
WITH lock AS (SELECT ${KEY_LOCK} AS got)
INSERT INTO idempotency_keys AS k (scope, tool, idempotency_key, fingerprint, response_status, response_headers, response_body,
                                   workspace_id, read_only, form_public_id, response_id)
SELECT $1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11 FROM lock WHERE got
ON CONFLICT (scope, tool, idempotency_key) DO UPDATE
   SET fingerprint = EXCLUDED.fingerprint, lock_token = NULL, locked_until = NULL, response_status = EXCLUDED.response_status,
       response_headers = EXCLUDED.response_headers, response_body = EXCLUDED.response_body, created_at = now(),
       workspace_id = EXCLUDED.workspace_id, read_only = EXCLUDED.read_only, form_public_id = EXCLUDED.form_public_id, response_id = EXCLUDED.response_id
 WHERE ${REPLACEABLE}`;

const COMPLETE_SQL = `
UPDATE idempotency_keys SET response_status = $5, response_headers = $6::jsonb, response_body = $7, lock_token = NULL, locked_until = NULL,
       form_public_id = $8, response_id = $9
 WHERE ${KEY_WHERE} AND lock_token = $4`;

/** A deletion in a workspace forgets every stored read answer there (a read is safe to run again), runs in progress included. */
const FORGET_READS_SQL = `DELETE FROM idempotency_keys WHERE workspace_id = $1 AND read_only`;

/** ... and turns the stored answers of writes that showed the deleted form or response into a 404 (the key stays spent). */
const FORGET_WRITES_SQL = `
UPDATE idempotency_keys SET response_status = $3, response_headers = NULL, response_body = $4
 WHERE NOT read_only AND response_status IS NOT NULL AND (form_public_id = $1 OR response_id = $2)`;

const RELEASE_SQL = `DELETE FROM idempotency_keys WHERE ${KEY_WHERE} AND lock_token = $4 AND response_status IS NULL`;

const PURGE_SQL = `
DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
  SELECT ctid FROM idempotency_keys WHERE created_at < now() - interval '${RETENTION_HOURS} hours' LIMIT ${PURGE_BATCH}))`;

/** The SQL of the table idempotency_keys. */
@Injectable()
export class IdempotencyRepository {
  /** Claims the key for a run with this fingerprint (see CLAIM_SQL), or reads the record that holds it. */
  async claim(
    manager: EntityManager,
    id: KeyId,
    claim: { fingerprint: Buffer; token: string; workspaceId: string; readOnly: boolean },
  ): Promise<ClaimRow> {
    const [row]: ClaimRow[] = await manager.query(CLAIM_SQL, [
      id.scope,
      id.tool,
      id.key,
      claim.fingerprint,
      claim.token,
      LOCK_SECONDS,
      claim.workspaceId,
      claim.readOnly,
    ]);
    return row;
  }

  /** Stores the answer of the run that holds the claim `token`. */
  async complete(manager: EntityManager, id: KeyId, token: string, answer: StoredAnswer): Promise<void> {
    await manager.query(COMPLETE_SQL, [
      id.scope,
      id.tool,
      id.key,
      token,
      answer.responseStatus,
      answer.responseHeaders ? JSON.stringify(answer.responseHeaders) : null,
      answer.responseBody,
      answer.formPublicId,
      answer.responseId,
    ]);
  }

  /** Stores an answer without a prior claim (see STORE_SQL). */
  async store(
    manager: EntityManager,
    id: KeyId,
    record: StoredAnswer & { fingerprint: Buffer; workspaceId: string; readOnly: boolean },
  ): Promise<void> {
    await manager.query(STORE_SQL, [
      id.scope,
      id.tool,
      id.key,
      record.fingerprint,
      record.responseStatus,
      record.responseHeaders ? JSON.stringify(record.responseHeaders) : null,
      record.responseBody,
      record.workspaceId,
      record.readOnly,
      record.formPublicId,
      record.responseId,
    ]);
  }

  /** Gives back a claim whose run failed without an answer to keep. */
  async release(manager: EntityManager, id: KeyId, token: string): Promise<void> {
    await manager.query(RELEASE_SQL, [id.scope, id.tool, id.key, token]);
  }

  /** See FORGET_READS_SQL and FORGET_WRITES_SQL. */
  async forget(
    tx: EntityManager,
    deleted: { workspaceId: string; formPublicId: string | null; responseId: string | null },
    gone: { status: number; body: string },
  ): Promise<void> {
    await tx.query(FORGET_READS_SQL, [deleted.workspaceId]);
    await tx.query(FORGET_WRITES_SQL, [deleted.formPublicId, deleted.responseId, gone.status, gone.body]);
  }

  /** Deletes one batch of expired records; how many. */
  async purgeBatch(manager: EntityManager): Promise<number> {
    const [, count] = (await manager.query(PURGE_SQL)) as [unknown, number];
    return count;
  }
}

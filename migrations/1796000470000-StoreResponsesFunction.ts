import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The statement that stores submissions (ResponsesRepository.insertMany) as PL/pgSQL functions
 * (issues 37 and 38): formwork_store_responses_v1(rows jsonb) for rows without Idempotency-Keys or
 * uploads, formwork_store_claiming_responses_v1(rows jsonb), which also claims keys and holds
 * uploads (its extra parts cost a plain batch 0.05 to 0.1 ms more). Behind a transaction pooler
 * (PgBouncer before 1.21 keeps no prepared statements) and on the embedded database every
 * statement the service sends is parsed and planned afresh, and this one, the hottest write, cost
 * 0.5 to 1.2 ms of the database's CPU to plan, against 0.1 to 0.15 ms prepared. A function's plan
 * is cached by each server session whatever the client does: calling it unprepared costs about what
 * the prepared statement does (0.18 to 0.23 ms; prepared, the plain function costs what the plain
 * prepared statement did, 0.13 to 0.2 ms).
 *
 * What it does, in one statement (so atomic): the rows (a JSON array, ResponsesRepository's
 * insertRow), their forms share-locked (those an edit holds are skipped), the rows whose form is
 * still at their version (fit); the uploads they name locked (those another statement holds are
 * skipped: free; one that two rows name goes to one of them: mine), the rows whose uploads are all
 * theirs, each with its submittedAt (ok); the rows' Idempotency-Keys claimed with their stored
 * answers, by IdempotencyRepository's rule (the key's advisory lock, then a live record is left
 * alone; k: a row whose key is held is not stored); the responses (r), their uploads held (h),
 * their response.created deliveries (e: one per enabled subscribed endpoint of the form's
 * workspace) and their audit records (a). Returns the stored responses (a keyed one with the
 * answer stored with its key: the call sends that very text), and each keyed row whose key was
 * held with what holds it. `ok` is materialized, so each row's submittedAt is read once: the
 * response's and the stored answer's are the same instant.
 *
 * Frozen here, as every migration's SQL is: a change to it is a new function (_v2) in a new
 * migration, so that instances of the previous release keep calling theirs during a rolling
 * deploy; a later migration drops the old one. The rule for keys (REPLACEABLE in
 * idempotency.repository.ts), the ISO time format (isoText) and the audit record's columns
 * (AuditRepository.insertFromSql) are written out here as they are there.
 */
export class StoreResponsesFunction1796000470000 implements MigrationInterface {
  name = 'StoreResponsesFunction1796000470000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    for (const [name, claims] of FUNCTIONS) {
      await queryRunner.query(`CREATE OR REPLACE FUNCTION ${name}(rows jsonb)
RETURNS TABLE (id uuid, "submittedAt" timestamptz, "keyHeld" boolean, fingerprint bytea, "responseStatus" smallint,
               "responseHeaders" jsonb, "responseBody" text)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY ${storeSql(claims)};
END
$fn$`);
    }
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const [name] of FUNCTIONS) await queryRunner.query(`DROP FUNCTION IF EXISTS ${name}(jsonb)`);
  }
}

/** The functions, and whether each claims keys and holds uploads. */
const FUNCTIONS: Array<[string, boolean]> = [
  ['formwork_store_responses_v1', false],
  ['formwork_store_claiming_responses_v1', true],
];

const ISO = (t: string) => `to_char(${t} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The statement (see above); with `claims`, its key claim (k), upload hold (free, mine, h) and held keys. */
function storeSql(claims: boolean): string {
  const fits = `FROM i JOIN f ON f.id = i.form_id AND f.version = i.version AND (NOT i.published OR f.status = 'published')`;
  const ok = claims
    ? `fit AS (SELECT i.*, f.workspace_id ${fits}),
  free AS (
    SELECT u.id, fit.id AS response_id
      FROM fit CROSS JOIN LATERAL jsonb_to_recordset(fit.uploads) AS n(id text, block_id text)
      JOIN uploads u ON u.id = n.id AND u.block_id = n.block_id AND u.workspace_id = fit.workspace_id AND u.form_id = fit.form_id
     WHERE fit.uploads IS NOT NULL AND u.response_id IS NULL AND u.stored_size = u.size AND u.type_problem IS NULL
       FOR UPDATE OF u SKIP LOCKED),
  mine AS (SELECT id, min(response_id::text)::uuid AS response_id FROM free GROUP BY id),
  ok AS MATERIALIZED (
    SELECT fit.*, COALESCE(fit.submitted_at, clock_timestamp()) AS at FROM fit
     WHERE fit.uploads IS NULL OR (SELECT count(*) FROM mine WHERE mine.response_id = fit.id) = jsonb_array_length(fit.uploads)),
  k AS (
    INSERT INTO idempotency_keys AS k (scope, tool, idempotency_key, fingerprint, response_status, response_body,
                                       workspace_id, read_only, form_public_id, response_id)
    SELECT c.scope, c.tool, c.idempotency_key, c.fingerprint, 200, c.response_body, c.workspace_id, false, c.form_public_id, c.response_id
      FROM (SELECT ok.key_scope AS scope, ok.key_tool AS tool, ok.key AS idempotency_key, decode(ok.key_print, 'hex') AS fingerprint,
                   ok.key_ws AS workspace_id, ok.key_form AS form_public_id, ok.id::text AS response_id,
                   ok.answer_head || ${ISO('ok.at')} || ok.answer_tail AS response_body,
                   row_number() OVER (PARTITION BY ok.key_scope, ok.key_tool, ok.key) AS nth
              FROM ok WHERE ok.key IS NOT NULL) c
     WHERE c.nth = 1 AND pg_try_advisory_xact_lock(hashtextextended(c.scope || chr(31) || c.tool || chr(31) || c.idempotency_key, 0))
    ON CONFLICT (scope, tool, idempotency_key) DO UPDATE
       SET fingerprint = EXCLUDED.fingerprint, lock_token = NULL, locked_until = NULL, response_status = EXCLUDED.response_status,
           response_headers = NULL, response_body = EXCLUDED.response_body, created_at = now(), workspace_id = EXCLUDED.workspace_id,
           read_only = false, form_public_id = EXCLUDED.form_public_id, response_id = EXCLUDED.response_id
     WHERE k.created_at <= now() - interval '24 hours'
        OR (k.response_status IS NULL AND k.locked_until <= now() AND k.fingerprint = EXCLUDED.fingerprint)
    RETURNING k.response_id, k.response_body),`
    : `ok AS MATERIALIZED (SELECT i.*, COALESCE(i.submitted_at, clock_timestamp()) AS at ${fits}),`;
  return `WITH i AS (
    SELECT * FROM jsonb_to_recordset(rows) AS i(
      id uuid, form_id uuid, version int, published boolean, answers jsonb, source text, submitted_at timestamptz,
      hidden jsonb, shown jsonb, started_at timestamptz, last_page text, resume_hash text, event_id text, head text, tail text, audit jsonb${
        claims
          ? `,
      key_scope text, key_tool text, key text, key_print text, key_ws uuid, key_form text, answer_head text, answer_tail text, uploads jsonb`
          : ''
      })),
  f AS (SELECT id, workspace_id, version, status FROM forms WHERE id = ANY (ARRAY(SELECT form_id FROM i)) ORDER BY id FOR SHARE SKIP LOCKED),
  ${ok}
  r AS (
    INSERT INTO responses (id, form_id, submitted_at, answers, source, hidden, shown, started_at, last_page, resume_hash)
    SELECT ok.id, ok.form_id, ok.at, ok.answers, ok.source, ok.hidden, ok.shown, ok.started_at, ok.last_page, decode(ok.resume_hash, 'hex')
      FROM ok${claims ? ' WHERE ok.key IS NULL OR ok.id::text IN (SELECT response_id FROM k)' : ''}
    RETURNING id, submitted_at),${
      claims
        ? `
  h AS (UPDATE uploads u SET response_id = r.id FROM mine JOIN r ON r.id = mine.response_id WHERE u.id = mine.id),`
        : ''
    }
  e AS (
    INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
    SELECT e.workspace_id, e.id, i.event_id, 'response.created', i.head || ${ISO('r.submitted_at')} || i.tail, now()
      FROM r JOIN i ON i.id = r.id JOIN f ON f.id = i.form_id
      JOIN webhook_endpoints e ON e.workspace_id = f.workspace_id AND e.enabled AND 'response.created' = ANY (e.events)
     WHERE i.event_id IS NOT NULL),
  a AS (
    INSERT INTO audit_events (workspace_id, action, subject_id, actor_kind, actor_id, actor_user_id, details, request_id)
    SELECT (x.audit ->> 'workspaceId')::uuid, x.audit ->> 'action', x.subject, x.audit ->> 'actorKind', x.audit ->> 'actorId',
           (x.audit ->> 'actorUserId')::uuid, x.audit -> 'details', x.audit ->> 'requestId'
      FROM (SELECT r.id::text AS subject, i.audit FROM r JOIN i ON i.id = r.id WHERE i.audit IS NOT NULL) x)
SELECT r.id, r.submitted_at, false, NULL::bytea, NULL::smallint, NULL::jsonb, ${claims ? 'k.response_body' : 'NULL::text'}
  FROM r${claims ? ' LEFT JOIN k ON k.response_id = r.id::text' : ''}${
    claims
      ? `
UNION ALL
SELECT ok.id, NULL, true, e.fingerprint, e.response_status, e.response_headers, e.response_body
  FROM ok LEFT JOIN idempotency_keys e ON e.scope = ok.key_scope AND e.tool = ok.key_tool AND e.idempotency_key = ok.key
            AND e.created_at > now() - interval '24 hours'
 WHERE ok.key IS NOT NULL AND ok.id::text NOT IN (SELECT response_id FROM k)`
      : ''
  }`;
}

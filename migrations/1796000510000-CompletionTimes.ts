import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Times to complete (issue 45).
 *
 * - Every response view now carries startedAt and updatedAt, which for a response that never was a
 *   partial are its submittedAt: the database's clock, known only to the insert statement. A
 *   keyed create_response's answer is stored by that statement, so
 *   formwork_store_claiming_responses_v3 is v2 (migration 1796000500000) but that chr(1) in the
 *   answer's tail (a character JSON never holds raw) is replaced by submittedAt's text as well;
 *   in both functions' response.created events too (formwork_store_responses_v2 is migration
 *   1796000470000's formwork_store_responses_v1 with that change). The previous versions stay for
 *   instances of the previous release during a rolling deploy.
 * - The histogram of the times to complete (submitted_at - started_at of the sequenced responses
 *   that started as partials) is kept in answer_counts under the block key ':seconds' (no block
 *   has it), bucketed: whole seconds under 10 minutes, 10 s under an hour, a minute under a day, an
 *   hour beyond. This backfills it, and drops the segments of the forms that have such responses
 *   (their next summary makes them again, with it).
 *
 * Frozen, as every migration's SQL is.
 */
export class CompletionTimes1796000510000 implements MigrationInterface {
  name = 'CompletionTimes1796000510000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE OR REPLACE FUNCTION formwork_store_claiming_responses_v3(rows jsonb)
RETURNS TABLE (id uuid, "submittedAt" timestamptz, "submittedText" text)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY ${storeSql()};
END
$fn$`);
    await queryRunner.query(`CREATE OR REPLACE FUNCTION formwork_store_responses_v2(rows jsonb)
RETURNS TABLE (id uuid, "submittedAt" timestamptz, "keyHeld" boolean, fingerprint bytea, "responseStatus" smallint,
               "responseHeaders" jsonb, "responseBody" text)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY ${plainStoreSql(false)};
END
$fn$`);
    await queryRunner.query(`INSERT INTO answer_counts (form_id, block_id, value, num, count)
      SELECT form_id, ':seconds', b::text, b::float8, count(*)
        FROM (SELECT form_id, ${BUCKET} AS b FROM responses WHERE seq IS NOT NULL AND started_at IS NOT NULL) x
       GROUP BY form_id, b
      ON CONFLICT (form_id, block_id, value) DO UPDATE SET count = EXCLUDED.count`);
    await queryRunner.query(`DELETE FROM response_segments g WHERE EXISTS (
      SELECT 1 FROM responses r WHERE r.form_id = g.form_id AND r.started_at IS NOT NULL AND r.seq IS NOT NULL)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DELETE FROM answer_counts WHERE block_id = ':seconds'`);
    await queryRunner.query('DROP FUNCTION IF EXISTS formwork_store_claiming_responses_v3(jsonb)');
    await queryRunner.query('DROP FUNCTION IF EXISTS formwork_store_responses_v2(jsonb)');
  }
}

const SECONDS = `GREATEST(0, extract(epoch FROM submitted_at - started_at))`;
const BUCKET = `(CASE WHEN ${SECONDS} < 600 THEN floor(${SECONDS})
  WHEN ${SECONDS} < 3600 THEN floor(${SECONDS} / 10) * 10 WHEN ${SECONDS} < 86400 THEN floor(${SECONDS} / 60) * 60
  ELSE floor(${SECONDS} / 3600) * 3600 END)::bigint`;

const ISO = (t: string) => `to_char(${t} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** v2's statement, but for the stored answer: chr(1) in its tail is the response's submittedAt too. */
function storeSql(): string {
  return `WITH i AS (
    SELECT * FROM jsonb_to_recordset(rows) AS i(
      id uuid, form_id uuid, version int, published boolean, answers jsonb, source text, submitted_at timestamptz,
      hidden jsonb, shown jsonb, started_at timestamptz, last_page text, resume_hash text, event_id text, head text, tail text, audit jsonb,
      key_scope text, key_tool text, key text, key_print text, key_ws uuid, key_form text, answer_tail text, uploads jsonb)),
  f AS (SELECT id, workspace_id, version, status FROM forms WHERE id = ANY (ARRAY(SELECT form_id FROM i)) ORDER BY id FOR SHARE SKIP LOCKED),
  fit AS (
    SELECT i.*, f.workspace_id FROM i JOIN f ON f.id = i.form_id AND f.version = i.version AND (NOT i.published OR f.status = 'published')),
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
                   '{"id":"' || ok.id || '","submittedAt":"' || ${ISO('ok.at')} || replace(ok.answer_tail, chr(1), ${ISO('ok.at')}) AS response_body,
                   row_number() OVER (PARTITION BY ok.key_scope, ok.key_tool, ok.key) AS nth
              FROM ok WHERE ok.key IS NOT NULL) c
     WHERE c.nth = 1 AND pg_try_advisory_xact_lock(hashtextextended(c.scope || chr(31) || c.tool || chr(31) || c.idempotency_key, 0))
    ON CONFLICT (scope, tool, idempotency_key) DO UPDATE
       SET fingerprint = EXCLUDED.fingerprint, lock_token = NULL, locked_until = NULL, response_status = EXCLUDED.response_status,
           response_headers = NULL, response_body = EXCLUDED.response_body, created_at = now(), workspace_id = EXCLUDED.workspace_id,
           read_only = false, form_public_id = EXCLUDED.form_public_id, response_id = EXCLUDED.response_id
     WHERE k.created_at <= now() - interval '24 hours'
        OR (k.response_status IS NULL AND k.locked_until <= now() AND k.fingerprint = EXCLUDED.fingerprint)
    RETURNING k.response_id),
  r AS (
    INSERT INTO responses (id, form_id, submitted_at, answers, source, hidden, shown, started_at, last_page, resume_hash)
    SELECT ok.id, ok.form_id, ok.at, ok.answers, ok.source, ok.hidden, ok.shown, ok.started_at, ok.last_page, decode(ok.resume_hash, 'hex')
      FROM ok WHERE ok.key IS NULL OR ok.id::text IN (SELECT response_id FROM k)
    RETURNING id, submitted_at),
  h AS (UPDATE uploads u SET response_id = r.id FROM mine JOIN r ON r.id = mine.response_id WHERE u.id = mine.id),
  e AS (
    INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
    SELECT e.workspace_id, e.id, i.event_id, 'response.created', i.head || ${ISO('r.submitted_at')} || replace(i.tail, chr(1), ${ISO('r.submitted_at')}), now()
      FROM r JOIN i ON i.id = r.id JOIN f ON f.id = i.form_id
      JOIN webhook_endpoints e ON e.workspace_id = f.workspace_id AND e.enabled AND 'response.created' = ANY (e.events)
     WHERE i.event_id IS NOT NULL),
  a AS (
    INSERT INTO audit_events (workspace_id, action, subject_id, actor_kind, actor_id, actor_user_id, details, request_id)
    SELECT (x.audit ->> 'workspaceId')::uuid, x.audit ->> 'action', x.subject, x.audit ->> 'actorKind', x.audit ->> 'actorId',
           (x.audit ->> 'actorUserId')::uuid, x.audit -> 'details', x.audit ->> 'requestId'
      FROM (SELECT r.id::text AS subject, i.audit FROM r JOIN i ON i.id = r.id WHERE i.audit IS NOT NULL) x)
SELECT r.id, r.submitted_at, ${ISO('r.submitted_at')} FROM r`;
}

/**
 * Migration 1796000470000's statement, frozen as it is there but that chr(1) in the event's tail is
 * its submittedAt too; only its plain form (claims false) is made here.
 */
function plainStoreSql(claims: boolean): string {
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
    SELECT e.workspace_id, e.id, i.event_id, 'response.created', i.head || ${ISO('r.submitted_at')} || replace(i.tail, chr(1), ${ISO('r.submitted_at')}), now()
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

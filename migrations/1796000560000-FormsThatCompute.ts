import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Forms that compute (issue 46): a form's variables, endings and thank-you texts (forms.compute,
 * NULL on a form that has none; blocks keep their calculations in their settings), and what a
 * response computed: its variables ({ name: value }) and the ending it reached, on completed and
 * partial responses (NULL on responses of forms that compute nothing).
 *
 * The store functions gain both columns: formwork_store_responses_v3 and
 * formwork_store_claiming_responses_v4 are v2 and v3 (migration 1796000510000) with `variables`
 * and `ending` in their recordset and insert, and otherwise the same. The old
 * ones stay for instances of the previous release during a rolling deploy; a later migration
 * drops them. Frozen, as every migration's SQL is.
 */
export class FormsThatCompute1796000560000 implements MigrationInterface {
  name = 'FormsThatCompute1796000560000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "forms" ADD "compute" jsonb`);
    await queryRunner.query(`ALTER TABLE "responses" ADD "variables" jsonb`);
    await queryRunner.query(`ALTER TABLE "responses" ADD "ending" text`);
    await queryRunner.query(`ALTER TABLE "partial_responses" ADD "variables" jsonb`);
    await queryRunner.query(`ALTER TABLE "partial_responses" ADD "ending" text`);
    await queryRunner.query(`CREATE OR REPLACE FUNCTION formwork_store_claiming_responses_v4(rows jsonb)
RETURNS TABLE (id uuid, "submittedAt" timestamptz, "submittedText" text)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY ${storeSql()};
END
$fn$`);
    await queryRunner.query(`CREATE OR REPLACE FUNCTION formwork_store_responses_v3(rows jsonb)
RETURNS TABLE (id uuid, "submittedAt" timestamptz, "keyHeld" boolean, fingerprint bytea, "responseStatus" smallint,
               "responseHeaders" jsonb, "responseBody" text)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY ${plainStoreSql(false)};
END
$fn$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP FUNCTION IF EXISTS formwork_store_claiming_responses_v4(jsonb)');
    await queryRunner.query('DROP FUNCTION IF EXISTS formwork_store_responses_v3(jsonb)');
    await queryRunner.query(`ALTER TABLE "partial_responses" DROP COLUMN "ending"`);
    await queryRunner.query(`ALTER TABLE "partial_responses" DROP COLUMN "variables"`);
    await queryRunner.query(`ALTER TABLE "responses" DROP COLUMN "ending"`);
    await queryRunner.query(`ALTER TABLE "responses" DROP COLUMN "variables"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP COLUMN "compute"`);
  }
}

const ISO = (t: string) => `to_char(${t} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** Migration 1796000510000's claiming statement (v3), with variables and ending. */
function storeSql(): string {
  return `WITH i AS (
    SELECT * FROM jsonb_to_recordset(rows) AS i(
      id uuid, form_id uuid, version int, published boolean, answers jsonb, source text, submitted_at timestamptz,
      hidden jsonb, shown jsonb, started_at timestamptz, last_page text, resume_hash text, event_id text, head text, tail text, audit jsonb,
      variables jsonb, ending text,
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
    INSERT INTO responses (id, form_id, submitted_at, answers, source, hidden, shown, started_at, last_page, resume_hash, variables, ending)
    SELECT ok.id, ok.form_id, ok.at, ok.answers, ok.source, ok.hidden, ok.shown, ok.started_at, ok.last_page, decode(ok.resume_hash, 'hex'),
           ok.variables, ok.ending
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

/** Migration 1796000510000's plain statement (v2), with variables and ending; only its plain form (claims false) is made here. */
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
      hidden jsonb, shown jsonb, started_at timestamptz, last_page text, resume_hash text, event_id text, head text, tail text, audit jsonb,
      variables jsonb, ending text${
        claims
          ? `,
      key_scope text, key_tool text, key text, key_print text, key_ws uuid, key_form text, answer_head text, answer_tail text, uploads jsonb`
          : ''
      })),
  f AS (SELECT id, workspace_id, version, status FROM forms WHERE id = ANY (ARRAY(SELECT form_id FROM i)) ORDER BY id FOR SHARE SKIP LOCKED),
  ${ok}
  r AS (
    INSERT INTO responses (id, form_id, submitted_at, answers, source, hidden, shown, started_at, last_page, resume_hash, variables, ending)
    SELECT ok.id, ok.form_id, ok.at, ok.answers, ok.source, ok.hidden, ok.shown, ok.started_at, ok.last_page, decode(ok.resume_hash, 'hex'),
           ok.variables, ok.ending
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

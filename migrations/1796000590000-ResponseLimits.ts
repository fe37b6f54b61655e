import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 47, items 2 and 3: a form's response cap (forms.max_responses) and quotas (forms.quotas:
 * [{ name, limit, when, onFull }]), kept exact under concurrency by counter rows.
 *
 * response_limits holds one row per limit of a form: name '' its cap, else a quota's name; `max`
 * its limit, `count` the completed responses counted toward it. The store functions gain a `limits`
 * column (the names of the counters a row counts toward, computed by the service: '' on a capped
 * form, and the quotas its answers match) and a `full` result column. Before the insert,
 * formwork_admit_responses locks the counter rows the statement's rows name, in one stable order
 * (form id, name: two statements never wait on each other in a cycle), and admits the rows in
 * order while every counter they name has room; a row that does not fit is left out and returned
 * with `full` (the counter that is full, submittedAt NULL), and the statement adds its stored rows
 * to their counters; a stored row says `filled` when the statement filled its form's cap. Rows without `limits` (forms with neither) lock nothing.
 *
 * formwork_store_responses_v4 and formwork_store_claiming_responses_v5 are v3 and v4 (migration
 * 1796000560000) with that added, and otherwise the same. The old ones stay for instances of the
 * previous release during a rolling deploy; a later migration drops them. Frozen, as every
 * migration's SQL is.
 */
export class ResponseLimits1796000590000 implements MigrationInterface {
  name = 'ResponseLimits1796000590000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "forms" ADD "max_responses" integer`);
    await queryRunner.query(`ALTER TABLE "forms" ADD "quotas" jsonb`);
    await queryRunner.query(`CREATE TABLE "response_limits" (
      "form_id" uuid NOT NULL, "name" text NOT NULL, "max" integer NOT NULL, "count" integer NOT NULL DEFAULT 0,
      CONSTRAINT "PK_response_limits" PRIMARY KEY ("form_id", "name"),
      CONSTRAINT "FK_response_limits_form" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE)`);
    await queryRunner.query(`CREATE OR REPLACE FUNCTION formwork_admit_responses(rows jsonb)
RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  room jsonb;
  refused jsonb := '{}';
  x record;
  full_of text;
BEGIN
  SELECT COALESCE(jsonb_object_agg(l.form_id || '/' || l.name, l.max - l.count), '{}') INTO room
    FROM (SELECT l.form_id, l.name, l.max, l.count FROM response_limits l
           WHERE (l.form_id, l.name) IN (
             SELECT (e ->> 'form_id')::uuid, c FROM jsonb_array_elements(rows) e CROSS JOIN jsonb_array_elements_text(e -> 'limits') c
              WHERE jsonb_typeof(e -> 'limits') = 'array')
           ORDER BY l.form_id, l.name FOR UPDATE) l;
  FOR x IN SELECT e ->> 'id' AS id, e ->> 'form_id' AS form_id, e -> 'limits' AS limits
             FROM jsonb_array_elements(rows) WITH ORDINALITY AS t(e, n)
            WHERE jsonb_typeof(e -> 'limits') = 'array' ORDER BY t.n LOOP
    full_of := NULL;
    SELECT c.name INTO full_of FROM jsonb_array_elements_text(x.limits) WITH ORDINALITY AS c(name, n)
     WHERE (room ->> (x.form_id || '/' || c.name))::int <= 0 ORDER BY c.n LIMIT 1;
    IF full_of IS NOT NULL THEN
      refused := refused || jsonb_build_object(x.id, full_of);
    ELSE
      room := room || COALESCE((SELECT jsonb_object_agg(k, (room ->> k)::int - 1)
                                  FROM (SELECT x.form_id || '/' || c AS k FROM jsonb_array_elements_text(x.limits) c) s
                                 WHERE room ? k), '{}');
    END IF;
  END LOOP;
  RETURN refused;
END
$fn$`);
    await queryRunner.query(`CREATE OR REPLACE FUNCTION formwork_store_claiming_responses_v5(rows jsonb)
RETURNS TABLE (id uuid, "submittedAt" timestamptz, "submittedText" text, "full" text, filled boolean)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  refused jsonb := '{}';
BEGIN
  IF rows @? '$[*].limits' THEN refused := formwork_admit_responses(rows); END IF;
  RETURN QUERY ${storeSql()};
END
$fn$`);
    await queryRunner.query(`CREATE OR REPLACE FUNCTION formwork_store_responses_v4(rows jsonb)
RETURNS TABLE (id uuid, "submittedAt" timestamptz, "keyHeld" boolean, fingerprint bytea, "responseStatus" smallint,
               "responseHeaders" jsonb, "responseBody" text, "full" text, filled boolean)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  refused jsonb := '{}';
BEGIN
  IF rows @? '$[*].limits' THEN refused := formwork_admit_responses(rows); END IF;
  RETURN QUERY ${plainStoreSql()};
END
$fn$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP FUNCTION IF EXISTS formwork_store_responses_v4(jsonb)');
    await queryRunner.query('DROP FUNCTION IF EXISTS formwork_store_claiming_responses_v5(jsonb)');
    await queryRunner.query('DROP FUNCTION IF EXISTS formwork_admit_responses(jsonb)');
    await queryRunner.query(`DROP TABLE "response_limits"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP COLUMN "quotas"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP COLUMN "max_responses"`);
  }
}

/** Of a stored row: whether this statement filled its form's cap (the service then closes the form). */
const FILLED = 'COALESCE(n.filled, false)';
const CAP_OF_R = "JOIN i ON i.id = r.id LEFT JOIN n ON n.form_id = i.form_id AND n.name = ''";

const ISO = (t: string) => `to_char(${t} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** Migration 1796000560000's claiming statement (v4), with limits (see above). */
function storeSql(): string {
  return `WITH i AS (
    SELECT * FROM jsonb_to_recordset(rows) AS i(
      id uuid, form_id uuid, version int, published boolean, answers jsonb, source text, submitted_at timestamptz,
      hidden jsonb, shown jsonb, started_at timestamptz, last_page text, resume_hash text, event_id text, head text, tail text, audit jsonb,
      variables jsonb, ending text, limits text[],
      key_scope text, key_tool text, key text, key_print text, key_ws uuid, key_form text, answer_tail text, uploads jsonb)
     WHERE NOT refused ? i.id::text),
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
  n AS (
    UPDATE response_limits l SET count = l.count + x.n
      FROM (SELECT i.form_id, c.name, count(*)::int AS n FROM r JOIN i ON i.id = r.id CROSS JOIN unnest(i.limits) AS c(name)
             GROUP BY i.form_id, c.name) x
     WHERE l.form_id = x.form_id AND l.name = x.name
    RETURNING l.form_id, l.name, l.count >= l.max AS filled),
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
SELECT r.id, r.submitted_at, ${ISO('r.submitted_at')}, NULL::text, ${FILLED} FROM r ${CAP_OF_R}
UNION ALL
SELECT x.key::uuid, NULL, NULL, x.value, false FROM jsonb_each_text(refused) x`;
}

/** Migration 1796000560000's plain statement (v3), with limits (see above). */
function plainStoreSql(): string {
  const fits = `FROM i JOIN f ON f.id = i.form_id AND f.version = i.version AND (NOT i.published OR f.status = 'published')`;
  return `WITH i AS (
    SELECT * FROM jsonb_to_recordset(rows) AS i(
      id uuid, form_id uuid, version int, published boolean, answers jsonb, source text, submitted_at timestamptz,
      hidden jsonb, shown jsonb, started_at timestamptz, last_page text, resume_hash text, event_id text, head text, tail text, audit jsonb,
      variables jsonb, ending text, limits text[])
     WHERE NOT refused ? i.id::text),
  f AS (SELECT id, workspace_id, version, status FROM forms WHERE id = ANY (ARRAY(SELECT form_id FROM i)) ORDER BY id FOR SHARE SKIP LOCKED),
  ok AS MATERIALIZED (SELECT i.*, COALESCE(i.submitted_at, clock_timestamp()) AS at ${fits}),
  r AS (
    INSERT INTO responses (id, form_id, submitted_at, answers, source, hidden, shown, started_at, last_page, resume_hash, variables, ending)
    SELECT ok.id, ok.form_id, ok.at, ok.answers, ok.source, ok.hidden, ok.shown, ok.started_at, ok.last_page, decode(ok.resume_hash, 'hex'),
           ok.variables, ok.ending
      FROM ok
    RETURNING id, submitted_at),
  n AS (
    UPDATE response_limits l SET count = l.count + x.n
      FROM (SELECT i.form_id, c.name, count(*)::int AS n FROM r JOIN i ON i.id = r.id CROSS JOIN unnest(i.limits) AS c(name)
             GROUP BY i.form_id, c.name) x
     WHERE l.form_id = x.form_id AND l.name = x.name
    RETURNING l.form_id, l.name, l.count >= l.max AS filled),
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
SELECT r.id, r.submitted_at, false, NULL::bytea, NULL::smallint, NULL::jsonb, NULL::text, NULL::text, ${FILLED} FROM r ${CAP_OF_R}
UNION ALL
SELECT x.key::uuid, NULL, false, NULL::bytea, NULL::smallint, NULL::jsonb, NULL::text, x.value, false FROM jsonb_each_text(refused) x`;
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Maintained aggregates of responses (counters, seek buckets, per-block stats and value counts)
 * and a per-form seq that orders responses in commit order. Existing responses get their seq in
 * (submitted_at, id) order and every existing form gets its aggregates computed.
 */

export class ResponseStats1795284873160 implements MigrationInterface {
  name = 'ResponseStats1795284873160';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "response_counters" (
                "form_id" uuid NOT NULL,
                "total" bigint NOT NULL DEFAULT '0',
                "last_seq" bigint NOT NULL DEFAULT '0',
                "last_submitted_at" TIMESTAMP WITH TIME ZONE,
                CONSTRAINT "PK_dd8d81fe3d02dc2e5b34b832960" PRIMARY KEY ("form_id")
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "response_buckets" (
                "form_id" uuid NOT NULL,
                "bucket" bigint NOT NULL,
                "count" integer NOT NULL,
                CONSTRAINT "PK_688e8036d94c8c952edb596da7e" PRIMARY KEY ("form_id", "bucket")
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "block_stats" (
                "form_id" uuid NOT NULL,
                "block_id" text NOT NULL,
                "answered" bigint NOT NULL DEFAULT '0',
                "sum" double precision NOT NULL DEFAULT '0',
                "latest" jsonb NOT NULL DEFAULT '[]',
                CONSTRAINT "PK_0b0e76b0ec3dfe0e3bf87351a26" PRIMARY KEY ("form_id", "block_id")
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "answer_counts" (
                "form_id" uuid NOT NULL,
                "block_id" text NOT NULL,
                "value" text NOT NULL,
                "num" double precision,
                "count" bigint NOT NULL,
                CONSTRAINT "PK_9cc31a572e1c99a727ef1219a4d" PRIMARY KEY ("form_id", "block_id", "value")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_answer_counts_num" ON "answer_counts" ("form_id", "block_id", "num")
        `);
    await queryRunner.query(`
            ALTER TABLE "responses"
            ADD "seq" bigint
        `);
    await queryRunner.query(`
            UPDATE "responses" r SET "seq" = o.n
              FROM (SELECT id, row_number() OVER (PARTITION BY form_id ORDER BY submitted_at, id) AS n FROM "responses") o
             WHERE r.id = o.id
        `);
    await queryRunner.query(`
            ALTER TABLE "responses" ALTER COLUMN "seq" SET NOT NULL
        `);
    // `since` seeks by submitted_at; ties are ordered by seq.
    await queryRunner.query(`
            DROP INDEX "IDX_responses_form_order"
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_responses_form_submitted" ON "responses" ("form_id", "submitted_at", "seq")
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "IDX_responses_form_seq" ON "responses" ("form_id", "seq")
        `);
    await queryRunner.query(`
            ALTER TABLE "response_counters"
            ADD CONSTRAINT "FK_dd8d81fe3d02dc2e5b34b832960" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "response_buckets"
            ADD CONSTRAINT "FK_b683d89fd1ea1ae5a9010bfa0da" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "block_stats"
            ADD CONSTRAINT "FK_075142da798b48731047e42cb0c" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "answer_counts"
            ADD CONSTRAINT "FK_8b047585e4b05c06c45d7768e02" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            INSERT INTO "response_counters" (form_id, total, last_seq, last_submitted_at)
            SELECT f.id, count(r.id), COALESCE(max(r.seq), 0), max(r.submitted_at)
              FROM "forms" f LEFT JOIN "responses" r ON r.form_id = f.id GROUP BY f.id
        `);
    const forms: Array<{ id: string }> = await queryRunner.query(`SELECT id FROM "forms"`);
    for (const form of forms) await computeStats(queryRunner, form.id);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "answer_counts" DROP CONSTRAINT "FK_8b047585e4b05c06c45d7768e02"
        `);
    await queryRunner.query(`
            ALTER TABLE "block_stats" DROP CONSTRAINT "FK_075142da798b48731047e42cb0c"
        `);
    await queryRunner.query(`
            ALTER TABLE "response_buckets" DROP CONSTRAINT "FK_b683d89fd1ea1ae5a9010bfa0da"
        `);
    await queryRunner.query(`
            ALTER TABLE "response_counters" DROP CONSTRAINT "FK_dd8d81fe3d02dc2e5b34b832960"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_responses_form_seq"
        `);
    await queryRunner.query(`
            DROP INDEX "IDX_responses_form_submitted"
        `);
    await queryRunner.query(`
            ALTER TABLE "responses" DROP COLUMN "seq"
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_responses_form_order" ON "responses" ("form_id", "submitted_at", "id")
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_answer_counts_num"
        `);
    await queryRunner.query(`
            DROP TABLE "answer_counts"
        `);
    await queryRunner.query(`
            DROP TABLE "block_stats"
        `);
    await queryRunner.query(`
            DROP TABLE "response_buckets"
        `);
    await queryRunner.query(`
            DROP TABLE "response_counters"
        `);
  }
}

/*
 * The aggregates of one form, computed from its responses: the SQL of recomputeResponseStats() as
 * this migration first ran it, frozen here (a migration never imports src/, which changes).
 */
const NUMERIC = `('number', 'rating', 'linear_scale')`;
const TEXT = `('short_text', 'long_text', 'email', 'url', 'phone')`;
const ALL = `(SELECT answers FROM responses WHERE form_id = $1) s`;
const VALUES = `SELECT b.id AS block_id, v.value, CASE WHEN b.type IN ${NUMERIC} THEN v.value::float8 END AS num
    FROM ${ALL} CROSS JOIN blocks b
    CROSS JOIN LATERAL (
      SELECT s.answers ->> b.id AS value WHERE b.type NOT IN ('checkboxes', 'statement') AND s.answers ? b.id
      UNION ALL
      SELECT e FROM jsonb_array_elements_text(CASE WHEN b.type = 'checkboxes' AND jsonb_typeof(s.answers -> b.id) = 'array' THEN s.answers -> b.id ELSE '[]'::jsonb END) e
    ) v
    WHERE b.form_id = $1 AND b.type NOT IN ${TEXT}`;
const ANSWERED = `SELECT b.id AS block_id, b.type, CASE WHEN b.type IN ${NUMERIC} THEN (s.answers ->> b.id)::float8 ELSE 0 END AS num
    FROM ${ALL} CROSS JOIN blocks b
    WHERE b.form_id = $1 AND b.type <> 'statement' AND s.answers ? b.id`;
const LATEST = `COALESCE((SELECT jsonb_agg(jsonb_build_object('responseId', r.id::text, 'value', r.answers ->> a.block_id, 'seq', r.seq,
                    'submittedAt', to_char(r.submitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY r.seq DESC)
            FROM (SELECT id, seq, submitted_at, answers FROM responses
                   WHERE form_id = $1 AND answers ? a.block_id ORDER BY seq DESC LIMIT 5) r), '[]'::jsonb)`;

async function computeStats(queryRunner: QueryRunner, formId: string): Promise<void> {
  await queryRunner.query(
    `INSERT INTO answer_counts (form_id, block_id, value, num, count)
     SELECT $1, block_id, value, num, count(*) FROM (${VALUES}) v GROUP BY block_id, value, num`,
    [formId],
  );
  await queryRunner.query(
    `INSERT INTO block_stats (form_id, block_id, answered, sum, latest)
     SELECT $1, a.block_id, count(*), sum(a.num), CASE WHEN a.type IN ${TEXT} THEN ${LATEST} ELSE '[]'::jsonb END
       FROM (${ANSWERED}) a GROUP BY a.block_id, a.type`,
    [formId],
  );
  await queryRunner.query(
    `INSERT INTO response_buckets (form_id, bucket, count)
     SELECT form_id, seq >> 10, count(*) FROM responses WHERE form_id = $1::uuid GROUP BY 1, 2`,
    [formId],
  );
}

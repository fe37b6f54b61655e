/** The SQL of exports: a form's responses read by key, batch by batch, and the re-check of a link's credential. */
import { Injectable } from '@nestjs/common';
import type { PoolClient } from 'pg';
import { EntityManager } from 'typeorm';
import { ResponseRow, VIEW_COLUMNS } from '../responses/responses.repository';
import type { PartialRow } from '../responses/partial-responses.repository';
import { copyRows, lineRows, PartPool } from './copy-rows';
import type { ExportGrant } from './export-link';
import { currentJob, jobTag } from '../jobs/current-job';

/** A response as a batch reads it: with its seq, the key of the next batch. */
export type ExportRow = ResponseRow & { seq: string };

/**
 * Marks the export's statements, so that they can be told apart in pg_stat_activity (an operator
 * looking at what runs; the test that a disconnect ends the reading).
 */
export const EXPORT_QUERY_TAG = '/* formwork:export */';

/** EXPORT_QUERY_TAG, and in a job the job's tag (what a cancel finds the statement by: see JobsService). */
function tag(): string {
  const job = currentJob();
  return job ? `${EXPORT_QUERY_TAG} ${jobTag(job.id)}` : EXPORT_QUERY_TAG;
}

/** How many responses' lines an NDJSON export writes as one string: strings that die young. */
export const EXPORT_PART_ROWS = 64;

/** The SQL of exports. */
@Injectable()
export class ExportsRepository {
  /** The seq of the form's last sequenced response (0 when none): an export reads up to it. */
  async lastSeq(manager: EntityManager, formId: string): Promise<string> {
    const [row] = await manager.query(
      `${tag()} SELECT COALESCE(max(seq), 0)::text AS seq FROM responses WHERE form_id = $1 AND seq IS NOT NULL`,
      [formId],
    );
    return row.seq;
  }

  /**
   * The form's responses with after < seq <= upTo that match `filter` (a SQL boolean over `r`
   * whose values are params from $4 on), in seq order. The range, not a row count, bounds the
   * batch: a selective filter costs each query at most the range's rows, never a scan to the end.
   */
  readBatch(
    manager: EntityManager,
    formId: string,
    range: { after: string; upTo: string },
    filter: { sql: string; params: unknown[] },
  ): Promise<ExportRow[]> {
    return manager.query(
      `${tag()} SELECT r.seq::text AS seq, r.id, r.submitted_at AS "submittedAt", r.answers, r.hidden, ${VIEW_COLUMNS('r')}
         FROM responses r
        WHERE r.form_id = $1 AND r.seq > $2::bigint AND r.seq <= $3::bigint AND (${filter.sql})
        ORDER BY r.seq`,
      [formId, range.after, range.upTo, ...filter.params],
    );
  }

  /**
   * The CSV records of a batch (`copySql`: see csvCopySql), in seq order, as bytes in parts of
   * about 64 KiB (see copyRows), on a connection of the pool taken for the statement alone.
   */
  readCsvBatch(manager: EntityManager, copySql: string, pool?: PartPool): Promise<Buffer[]> {
    return this.onClient(manager, (client) => copyRows(client, `${tag()} ${copySql}`, pool));
  }

  /**
   * The NDJSON lines of the responses `where` selects (a condition over r, values as literals),
   * in seq order: each row (as readBatch's) written as line(row) once parsed, as bytes in parts of
   * about 64 KiB (see lineRows), on a connection of the pool taken for the statement alone.
   */
  readLineBatch(
    manager: EntityManager,
    where: string,
    line: (row: ExportRow) => string,
    pool?: PartPool,
  ): Promise<Buffer[]> {
    const sql = `${tag()} SELECT r.seq::text AS seq, r.id, r.submitted_at AS "submittedAt", r.answers, r.hidden, ${VIEW_COLUMNS('r')}
         FROM responses r WHERE ${where} ORDER BY r.seq`;
    return this.onClient(manager, (client) =>
      lineRows(client, sql, line as (row: Record<string, unknown>) => string, pool),
    );
  }

  /** `run` on the transaction's connection if there is one (a download runs in none), else on one of the pool's. */
  private async onClient<T>(manager: EntityManager, run: (client: PoolClient) => Promise<T>): Promise<T> {
    const runner = manager.queryRunner ?? manager.connection.createQueryRunner();
    try {
      return await run((await runner.connect()) as PoolClient);
    } finally {
      if (!manager.queryRunner) await runner.release();
    }
  }

  /**
   * Up to `limit` partial responses of the form after the id `after` (null: from the first), in id
   * order, that match `filter` (SQL over r as readBatch's, params from $4; since/until apply to when
   * a partial started).
   */
  readPartialBatch(
    manager: EntityManager,
    formId: string,
    after: string | null,
    limit: number,
    filter: { sql: string; params: unknown[] },
  ): Promise<PartialRow[]> {
    return manager.query(
      `${tag()} SELECT r.id, r.form_id AS "formId", r.answers, r.hidden, r.pages_reached AS "pagesReached",
              r.last_page AS "lastPage", r.source, r.started_at AS "startedAt", r.updated_at AS "updatedAt"
         FROM (SELECT *, started_at AS submitted_at FROM partial_responses WHERE form_id = $1) r
        WHERE ($2::uuid IS NULL OR r.id > $2::uuid) AND (${filter.sql})
        ORDER BY r.id LIMIT $3`,
      [formId, after, limit, ...filter.params],
    );
  }

  /**
   * Whether the credential a link was made by still acts on its workspace: an API token not
   * revoked, not expired, whose creator (if any) is still a member; an OAuth grant not revoked
   * whose person is still a member (and may still use it: see OAuthRepository.findAccessToken),
   * and whose access token is still stored (revoking it deletes it; the token is recognised by its
   * grant and its payload's `exp`, the whole seconds the principal's expiry was made from, the
   * link holding no secret: the row's expires_at is the database's clock with microseconds, which
   * no value in the link equals); a signed-in person still a member.
   */
  async credentialActs(manager: EntityManager, grant: Pick<ExportGrant, 'w' | 'c'>): Promise<boolean> {
    const { k: kind, i: id, x: expiry } = grant.c;
    const sql = {
      api_token: `SELECT t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())
                         AND (t.created_by_user_id IS NULL OR m.role IS NOT NULL) AS ok
                    FROM api_tokens t
                    LEFT JOIN memberships m ON m.workspace_id = t.workspace_id AND m.user_id = t.created_by_user_id
                   WHERE t.id = $1::uuid AND t.workspace_id = $2`,
      oauth: `SELECT g.revoked_at IS NULL AND m.role IS NOT NULL
                     AND (u.password_workspace_id IS NULL OR u.password_workspace_id = g.workspace_id)
                     AND ($3::bigint IS NULL OR EXISTS (
                       SELECT 1 FROM oauth_models a
                        WHERE a.grant_id = g.grant_id AND a.model = 'AccessToken' AND (a.payload ->> 'exp')::bigint = $3::bigint
                          AND a.expires_at > now())) AS ok
                FROM oauth_grants g
                LEFT JOIN memberships m ON m.workspace_id = g.workspace_id AND m.user_id = g.user_id
                LEFT JOIN users u ON u.id = g.user_id
               WHERE g.grant_id = $1 AND g.workspace_id = $2`,
      session: `SELECT (u.password_workspace_id IS NULL OR u.password_workspace_id = m.workspace_id) AS ok
                  FROM memberships m JOIN users u ON u.id = m.user_id
                 WHERE m.user_id = $1::uuid AND m.workspace_id = $2`,
    }[kind];
    if (!sql) return false;
    const params = kind === 'oauth' ? [id, grant.w, expiry ?? null] : [id, grant.w];
    const [row] = await manager.query(`${EXPORT_QUERY_TAG} ${sql}`, params);
    return row?.ok === true;
  }
}

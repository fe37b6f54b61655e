import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Principal } from '../common/access/principal';
import { currentRequestContext } from '../common/request-context';

const COLUMNS = '(workspace_id, action, subject_id, actor_kind, actor_id, actor_user_id, details, request_id)';

/** Records writes in the audit trail, inside the write's own transaction (both commit or neither). */
@Injectable()
export class AuditService {
  async record(
    tx: EntityManager,
    principal: Principal,
    action: string,
    subjectId: string,
    details: Record<string, unknown> = {},
  ): Promise<void> {
    await tx.query(`INSERT INTO audit_events ${COLUMNS} VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)`, [
      principal.workspace.id,
      action,
      subjectId,
      ...this.actor(principal),
      JSON.stringify(details),
      currentRequestContext()?.requestId ?? null,
    ]);
  }

  /**
   * The same record as SQL for a write that is one statement (a response submission): an INSERT
   * taking the subject's id from the column `subject` of the rows of `from` (another part of that
   * statement), with its own parameters numbered from $1.
   */
  recordSql(
    principal: Principal,
    action: string,
    from: string,
    subject: string,
    details: Record<string, unknown> = {},
  ): { sql: string; params: unknown[] } {
    return {
      sql: `INSERT INTO audit_events ${COLUMNS} SELECT $1, $2, ${subject}, $3, $4, $5, $6::jsonb, $7 FROM ${from}`,
      params: [
        principal.workspace.id,
        action,
        ...this.actor(principal),
        JSON.stringify(details),
        currentRequestContext()?.requestId ?? null,
      ],
    };
  }

  private actor(principal: Principal): unknown[] {
    return [principal.credential.kind, principal.credential.id, principal.userId ?? null];
  }
}

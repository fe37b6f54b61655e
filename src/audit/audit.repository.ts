/** The SQL that writes audit_events (AuditRepository). */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { AuditEventEntity } from './entities/audit-event.entity';

/** An audit record as written (its id and time are the database's). */
export type AuditRecord = Omit<AuditEventEntity, 'id' | 'at'>;

/** An audit record whose subject a statement fills in (see insertFromSql), as that statement gets it. */
export type AuditRecordJson = Omit<AuditRecord, 'subjectId'>;

const COLUMNS = '(workspace_id, action, subject_id, actor_kind, actor_id, actor_user_id, details, request_id)';

/** The SQL of the table audit_events (written here; the settings pages read it through SettingsRepository). */
@Injectable()
export class AuditRepository {
  async insert(tx: EntityManager, record: AuditRecord): Promise<void> {
    await tx.query(`INSERT INTO audit_events ${COLUMNS} VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)`, [
      record.workspaceId,
      record.action,
      record.subjectId,
      record.actorKind,
      record.actorId,
      record.actorUserId,
      JSON.stringify(record.details),
      record.requestId,
    ]);
  }

  /**
   * The same INSERT as SQL for a statement to include, one record per row of `rows` (another part
   * of that statement, or a subquery), whose column `subject` is the subject's id and `audit` the
   * rest of the record as JSON (an AuditRecordJson).
   */
  static insertFromSql(rows: string): string {
    return `INSERT INTO audit_events ${COLUMNS}
      SELECT (x.audit ->> 'workspaceId')::uuid, x.audit ->> 'action', x.subject, x.audit ->> 'actorKind', x.audit ->> 'actorId',
             (x.audit ->> 'actorUserId')::uuid, x.audit -> 'details', x.audit ->> 'requestId'
        FROM ${rows} x`;
  }
}

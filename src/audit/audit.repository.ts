/** The SQL that writes audit_events (AuditRepository). */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { AuditEventEntity } from './entities/audit-event.entity';

/** An audit record as written (its id and time are the database's). */
export type AuditRecord = Omit<AuditEventEntity, 'id' | 'at'>;

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
   * The same INSERT as SQL for a statement to include: the subject's id is the SQL expression
   * `subject` over the rows of `from` (another part of that statement); its own parameters are
   * numbered from $1.
   */
  insertSql(record: Omit<AuditRecord, 'subjectId'>, from: string, subject: string): { sql: string; params: unknown[] } {
    return {
      sql: `INSERT INTO audit_events ${COLUMNS} SELECT $1, $2, ${subject}, $3, $4, $5, $6::jsonb, $7 FROM ${from}`,
      params: [
        record.workspaceId,
        record.action,
        record.actorKind,
        record.actorId,
        record.actorUserId,
        JSON.stringify(record.details),
        record.requestId,
      ],
    };
  }
}

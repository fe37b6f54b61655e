import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Principal } from '../common/access/principal';
import { currentRequestContext } from '../common/request-context';

/** Records writes in the audit trail, inside the write's own transaction (both commit or neither). */
@Injectable()
export class AuditService {
  async record(tx: EntityManager, principal: Principal, action: string, subjectId: string, details: Record<string, unknown> = {}): Promise<void> {
    await tx.query(
      `INSERT INTO audit_events (workspace_id, action, subject_id, actor_kind, actor_id, actor_user_id, details, request_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)`,
      [principal.workspace.id, action, subjectId, principal.credential.kind, principal.credential.id, principal.userId ?? null, JSON.stringify(details), currentRequestContext()?.requestId ?? null],
    );
  }
}

import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Principal } from '../common/access/principal';
import { currentRequestContext } from '../common/request-context';
import { AuditRecord, AuditRecordJson, AuditRepository } from './audit.repository';

/** Records writes in the audit trail, inside the write's own transaction (both commit or neither). */
@Injectable()
export class AuditService {
  constructor(private readonly repo: AuditRepository) {}

  async record(
    tx: EntityManager,
    principal: Principal,
    action: string,
    subjectId: string,
    details: Record<string, unknown> = {},
  ): Promise<void> {
    await this.repo.insert(tx, { ...this.event(principal, action, details), subjectId });
  }

  /** Records an event whose actor is not a request's principal (the authorization server acting for an app, say). */
  async recordAs(tx: EntityManager, record: Omit<AuditRecord, 'requestId'>): Promise<void> {
    await this.repo.insert(tx, { ...record, requestId: currentRequestContext()?.requestId ?? null });
  }

  /** Records a change made on the settings pages by the signed-in person `userId`. */
  async recordSession(
    manager: EntityManager,
    workspaceId: string,
    userId: string,
    action: string,
    subjectId: string,
    details: Record<string, unknown>,
  ): Promise<void> {
    await this.repo.insert(manager, {
      workspaceId,
      action,
      subjectId,
      actorKind: 'session',
      actorId: userId,
      actorUserId: userId,
      details,
      requestId: currentRequestContext()?.requestId ?? null,
    });
  }

  /**
   * The record of a write that is one statement (a response submission), for that statement to
   * insert with its subject (AuditRepository.insertFromSql).
   */
  recordJson(principal: Principal, action: string, details: Record<string, unknown> = {}): AuditRecordJson {
    return this.event(principal, action, details);
  }

  /** Who did what, in which workspace and request. */
  private event(principal: Principal, action: string, details: Record<string, unknown>): AuditRecordJson {
    return {
      workspaceId: principal.workspace.id,
      action,
      actorKind: principal.credential.kind,
      actorId: principal.credential.id,
      actorUserId: principal.userId ?? null,
      details,
      requestId: currentRequestContext()?.requestId ?? null,
    };
  }
}

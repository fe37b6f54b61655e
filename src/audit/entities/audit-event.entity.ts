import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** One write, who made it and when: the workspace's audit trail. */
@Entity({ name: 'audit_events' })
@Index('IDX_audit_events_workspace_at', ['workspaceId', 'at'])
export class AuditEventEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId: string;

  /** e.g. "form.create", "form.update", "response.delete". */
  @Column({ type: 'text' })
  action: string;

  /** The public id of what changed (a form's publicId, a response id). */
  @Column({ name: 'subject_id', type: 'text' })
  subjectId: string;

  /** "api_token" or "oauth". */
  @Column({ name: 'actor_kind', type: 'text' })
  actorKind: string;

  /** The token's id, or the OAuth grant's. */
  @Column({ name: 'actor_id', type: 'text' })
  actorId: string;

  /** The person behind the credential, when there is one. */
  @Column({ name: 'actor_user_id', type: 'uuid', nullable: true })
  actorUserId: string | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  at: Date;

  /** The request that made the change (X-Request-Id), to match it with the logs. */
  @Column({ name: 'request_id', type: 'text', nullable: true })
  requestId: string | null;

  /** Small facts about the change (e.g. the new version, answers discarded). */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  details: Record<string, unknown>;
}

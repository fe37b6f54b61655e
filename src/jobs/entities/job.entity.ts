import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { WorkspaceEntity } from '../../workspaces/entities/workspace.entity';

/**
 * A long tool call run in the background (migration 1796000650000): working, then completed
 * (result), failed (error: the tool's refusal) or cancelled. Kept here so any instance answers a poll.
 */
@Entity({ name: 'jobs' })
@Index('IDX_jobs_expires_at', ['expiresAt'])
@Check('jobs_status_check', `"status" IN ('working', 'completed', 'failed', 'cancelled')`)
export class JobEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'jobs_pkey' })
  id: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId: string;

  @Column({ type: 'text' })
  tool: string;

  @Column({ type: 'text', default: 'working' })
  status: string;

  @Column({ name: 'status_message', type: 'text', nullable: true })
  statusMessage: string | null;

  @Column({ type: 'jsonb', nullable: true })
  result: unknown;

  @Column({ type: 'jsonb', nullable: true })
  error: unknown;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'workspace_id', foreignKeyConstraintName: 'jobs_workspace_id_fkey' })
  workspace?: WorkspaceEntity;
}

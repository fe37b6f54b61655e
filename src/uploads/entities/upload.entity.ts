import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { FormEntity } from '../../forms/entities/form.entity';
import { WorkspaceEntity } from '../../workspaces/entities/workspace.entity';

/**
 * A file sent for a file_upload block. `pending` (response_id null) until a response names it;
 * then held by that response (or by a partial response, whose id it keeps on completion: no
 * foreign key, issue 36) and deleted with it. The object lives in FileStorage under
 * objectKey(workspace_id, form_id, id). Every path that deletes responses deletes their uploads.
 */
@Entity({ name: 'uploads' })
@Index('IDX_uploads_pending', ['createdAt'], { where: 'response_id IS NULL' })
@Index('IDX_uploads_response', ['responseId'], { where: 'response_id IS NOT NULL' })
@Index('IDX_uploads_form', ['formId'])
@Index('IDX_uploads_pending_form', ['formId'], { where: 'response_id IS NULL' })
@Index('IDX_uploads_pending_client', ['clientHash'], { where: 'response_id IS NULL AND client_hash IS NOT NULL' })
export class UploadEntity {
  /** `upl_` + 22 base62 characters. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_uploads' })
  id: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId: string;

  @Column({ name: 'form_id', type: 'uuid' })
  formId: string;

  @Column({ name: 'block_id', type: 'text' })
  blockId: string;

  /** The filename as cleaned (cleanFilename): safe for a page, a header and a CSV cell. */
  @Column({ type: 'text' })
  name: string;

  /** The declared type (checked against the bytes when a response names the upload). */
  @Column({ name: 'content_type', type: 'text' })
  contentType: string;

  /** The declared size in bytes (the stored object must have exactly this size). */
  @Column({ type: 'bigint' })
  size: string;

  /** The stored bytes' size, when they came through the service (else NULL: checked on the object). */
  @Column({ name: 'stored_size', type: 'bigint', nullable: true })
  storedSize: string | null;

  /** What the type check found wrong in the bytes that came through the service (NULL: nothing, or not seen). */
  @Column({ name: 'type_problem', type: 'text', nullable: true })
  typeProblem: string | null;

  @Column({ name: 'response_id', type: 'uuid', nullable: true })
  responseId: string | null;

  /** A keyed hash of the client IP that made it on the respondent page (never the IP); NULL over the tools. */
  @Column({ name: 'client_hash', type: 'bytea', nullable: true })
  clientHash: Buffer | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'workspace_id' })
  workspace?: WorkspaceEntity;

  @ManyToOne(() => FormEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'form_id' })
  form?: FormEntity;
}

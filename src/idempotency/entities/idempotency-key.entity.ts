import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One Idempotency-Key of one credential for one tool: the fingerprint of the first request's body
 * and, once the tool has run, the answer to replay. A row whose response_status is null is a run
 * in progress (lock_token and locked_until say whose, and until when). Kept 24 hours.
 */
@Entity({ name: 'idempotency_keys' })
@Index('IDX_idempotency_keys_created_at', ['createdAt'])
@Index('IDX_idempotency_keys_workspace_id', ['workspaceId'])
@Index('IDX_idempotency_keys_form_public_id', ['formPublicId'])
@Index('IDX_idempotency_keys_response_id', ['responseId'])
export class IdempotencyKeyEntity {
  /** The credential the key belongs to: an API token, or an OAuth grant (Principal.credentialKey). */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_idempotency_keys' })
  scope: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_idempotency_keys' })
  tool: string;

  @PrimaryColumn({
    name: 'idempotency_key',
    type: 'varchar',
    length: 255,
    primaryKeyConstraintName: 'PK_idempotency_keys',
  })
  idempotencyKey: string;

  /** SHA-256 of the canonical JSON of the arguments. */
  @Column({ type: 'bytea' })
  fingerprint: Buffer;

  @Column({ name: 'response_status', type: 'smallint', nullable: true })
  responseStatus: number | null;

  @Column({ name: 'response_headers', type: 'jsonb', nullable: true })
  responseHeaders: Record<string, string> | null;

  /** The JSON body exactly as first sent (text, not jsonb, so a replay is byte for byte the same). */
  @Column({ name: 'response_body', type: 'text', nullable: true })
  responseBody: string | null;

  @Column({ name: 'lock_token', type: 'uuid', nullable: true })
  lockToken: string | null;

  @Column({ name: 'locked_until', type: 'timestamptz', nullable: true })
  lockedUntil: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  /** The workspace the credential acts on: a deletion there forgets its read answers. */
  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId: string;

  @Column({ name: 'read_only', type: 'boolean', default: false })
  readOnly: boolean;

  /** The form the call named (publicId argument or result): its deletion rewrites this answer. */
  @Column({ name: 'form_public_id', type: 'text', nullable: true })
  formPublicId: string | null;

  /** The response the call named (responseId argument or the created response's id). */
  @Column({ name: 'response_id', type: 'text', nullable: true })
  responseId: string | null;
}

import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * What oidc-provider persists through its adapter (clients, sessions, interactions, codes, access
 * and refresh tokens, grants), one row per object, so every instance sees the same state and
 * tokens survive restarts.
 */
@Entity({ name: 'oauth_models' })
@Index('IDX_oauth_models_grant', ['grantId'])
@Index('IDX_oauth_models_uid', ['uid'])
@Index('IDX_oauth_models_expires', ['expiresAt'])
export class OAuthModelEntity {
  /** The model name: AccessToken, RefreshToken, AuthorizationCode, Client, Session, Interaction, Grant... */
  @PrimaryColumn({ type: 'text' })
  model: string;

  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ type: 'jsonb' })
  payload: Record<string, unknown>;

  @Column({ name: 'grant_id', type: 'text', nullable: true })
  grantId: string | null;

  @Column({ name: 'user_code', type: 'text', nullable: true })
  userCode: string | null;

  @Column({ type: 'text', nullable: true })
  uid: string | null;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'consumed_at', type: 'timestamptz', nullable: true })
  consumedAt: Date | null;
}

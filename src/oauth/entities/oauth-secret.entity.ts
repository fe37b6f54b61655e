import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/**
 * Keys every instance must share (the token signing key set, the cookie signing keys): made by the
 * first instance that needs them, read by the others.
 */
@Entity({ name: 'oauth_secrets' })
export class OAuthSecretEntity {
  @PrimaryColumn({ type: 'text' })
  name: string;

  @Column({ type: 'jsonb' })
  value: unknown;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

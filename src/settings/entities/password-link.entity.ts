import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A one-time link to set a password (Formwork sends no email: an admin passes it on). */
@Entity({ name: 'password_links' })
export class PasswordLinkEntity {
  /** SHA-256 (hex) of the secret in the link. */
  @PrimaryColumn({ name: 'token_hash', type: 'text' })
  tokenHash: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'used_at', type: 'timestamptz', nullable: true })
  usedAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}

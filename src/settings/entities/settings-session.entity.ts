import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * A signed-in person in the browser (settings and the OAuth sign-in). The cookie holds a random
 * secret; only its SHA-256 is stored, so a read of this table signs nobody in. In PostgreSQL, so
 * any instance serves any page and a sign-out is felt everywhere at once.
 */
@Entity({ name: 'settings_sessions' })
@Index('IDX_settings_sessions_user', ['userId'])
export class SettingsSessionEntity {
  /** SHA-256 (hex) of the cookie's secret. */
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  /** The CSRF token of every form of this session. */
  @Column({ type: 'text' })
  csrf: string;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'last_seen_at', type: 'timestamptz', default: () => 'now()' })
  lastSeenAt: Date;
}

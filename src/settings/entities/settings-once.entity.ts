import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Things that may happen once: a flash (a secret shown on the next page only, deleted as it is
 * read) or a form nonce (a re-submitted form finds its nonce used and creates nothing).
 */
@Entity({ name: 'settings_once' })
export class SettingsOnceEntity {
  /** "flash:<random>" or "nonce:<random>". */
  @PrimaryColumn({ type: 'text' })
  key: string;

  /** The session a flash belongs to (no other session can read it). */
  @Column({ name: 'session_id', type: 'text', nullable: true })
  sessionId: string | null;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  payload: Record<string, unknown>;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}

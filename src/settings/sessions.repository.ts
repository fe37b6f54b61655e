/** The SQL of settings_sessions, settings_once and password_links (SessionsRepository). */
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { SettingsSessionEntity } from './entities/settings-session.entity';

/** A live session as read with its person's email, and whether its last-seen time is over a minute old. */
export type SessionRow = Pick<SettingsSessionEntity, 'id' | 'userId' | 'csrf'> & {
  email: string;
  mustChangePassword: boolean;
  stale: boolean;
};

/** The SQL of the tables settings_sessions, settings_once and password_links. */
@Injectable()
export class SessionsRepository {
  /** Deletes expired sessions, old flashes and nonces, and links expired for a day. */
  async purge(
    manager: EntityManager,
    limits: { idleMinutes: number; absoluteHours: number; onceRetentionHours: number },
  ): Promise<void> {
    await manager.query(
      `DELETE FROM settings_sessions WHERE last_seen_at < now() - make_interval(mins => $1) OR created_at < now() - make_interval(hours => $2)`,
      [limits.idleMinutes, limits.absoluteHours],
    );
    await manager.query(`DELETE FROM settings_once WHERE created_at < now() - make_interval(hours => $1)`, [
      limits.onceRetentionHours,
    ]);
    await manager.query(`DELETE FROM password_links WHERE expires_at < now() - interval '1 day'`);
  }

  async insertSession(manager: EntityManager, session: Pick<SettingsSessionEntity, 'id' | 'userId' | 'csrf'>) {
    await manager.query('INSERT INTO settings_sessions (id, user_id, csrf) VALUES ($1, $2, $3)', [
      session.id,
      session.userId,
      session.csrf,
    ]);
  }

  async deleteSession(manager: EntityManager, id: string): Promise<void> {
    await manager.query('DELETE FROM settings_sessions WHERE id = $1', [id]);
  }

  /** The session with this id, unless idle or older than the limits. */
  async findLiveSession(
    manager: EntityManager,
    id: string,
    limits: { idleMinutes: number; absoluteHours: number },
  ): Promise<SessionRow | undefined> {
    const [row] = await manager.query(
      `SELECT s.id, s.user_id AS "userId", s.csrf, u.email, u.password_must_change AS "mustChangePassword",
              s.last_seen_at < now() - interval '1 minute' AS stale
         FROM settings_sessions s JOIN users u ON u.id = s.user_id
        WHERE s.id = $1 AND s.last_seen_at > now() - make_interval(mins => $2) AND s.created_at > now() - make_interval(hours => $3)`,
      [id, limits.idleMinutes, limits.absoluteHours],
    );
    return row;
  }

  async touchSession(manager: EntityManager, id: string): Promise<void> {
    await manager.query('UPDATE settings_sessions SET last_seen_at = now() WHERE id = $1', [id]);
  }

  /** Every settings session of the person, and their sessions of the authorization server (its sign-in). */
  async deleteSessionsOf(manager: EntityManager, userId: string): Promise<void> {
    await manager.query('DELETE FROM settings_sessions WHERE user_id = $1', [userId]);
    await manager.query(`DELETE FROM oauth_models WHERE model = 'Session' AND payload->>'accountId' = $1`, [userId]);
  }

  /** Sets the value kept under `key` for the session (replacing an earlier one). */
  async putOnce(manager: EntityManager, key: string, sessionId: string, payload: Record<string, unknown>) {
    await manager.query(
      `INSERT INTO settings_once (key, session_id, payload) VALUES ($1, $2, $3::jsonb)
       ON CONFLICT (key) DO UPDATE SET payload = EXCLUDED.payload, created_at = now()`,
      [key, sessionId, JSON.stringify(payload)],
    );
  }

  /** Reads the value kept under `key` and deletes it, in one statement. */
  async takeOnce(manager: EntityManager, key: string): Promise<Record<string, unknown> | undefined> {
    // (TypeORM answers an UPDATE or DELETE with [rows, count]; an INSERT with its rows.)
    const [rows] = (await manager.query('DELETE FROM settings_once WHERE key = $1 RETURNING payload', [key])) as [
      Array<{ payload: Record<string, unknown> }>,
      number,
    ];
    return rows[0]?.payload;
  }

  /** Inserts `key` unless it exists; whether it was inserted. */
  async insertOnceKey(manager: EntityManager, key: string): Promise<boolean> {
    const rows: unknown[] = await manager.query(
      `INSERT INTO settings_once (key) VALUES ($1) ON CONFLICT (key) DO NOTHING RETURNING key`,
      [key],
    );
    return rows.length === 1;
  }

  /** Replaces the person's set-password links by this one, issued by `workspaceId`'s admin (null: the operator). */
  async replacePasswordLink(
    tx: EntityManager,
    link: { userId: string; tokenHash: string; hours: number; workspaceId: string | null },
  ): Promise<void> {
    await tx.query('DELETE FROM password_links WHERE user_id = $1', [link.userId]);
    await tx.query(
      `INSERT INTO password_links (token_hash, user_id, workspace_id, expires_at) VALUES ($1, $2, $3, now() + make_interval(hours => $4))`,
      [link.tokenHash, link.userId, link.workspaceId, link.hours],
    );
  }

  /** The person a live, unused link is for. */
  async findLinkUser(
    manager: EntityManager,
    tokenHash: string,
  ): Promise<{ userId: string; email: string } | undefined> {
    const [row] = await manager.query(
      `SELECT l.user_id AS "userId", u.email FROM password_links l JOIN users u ON u.id = l.user_id
        WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > now()`,
      [tokenHash],
    );
    return row;
  }

  /** Marks a live link used; its person and the workspace that issued it, or undefined when it was not live. */
  async useLink(
    manager: EntityManager,
    tokenHash: string,
  ): Promise<{ userId: string; workspaceId: string | null } | undefined> {
    const [rows] = (await manager.query(
      `UPDATE password_links SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
       RETURNING user_id AS "userId", workspace_id AS "workspaceId"`,
      [tokenHash],
    )) as [Array<{ userId: string; workspaceId: string | null }>, number];
    return rows[0];
  }
}

import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { DataSource } from 'typeorm';

/** A session ends after this long without a page (idle) ... */
export const SESSION_IDLE_MINUTES = 120;
/** ... and this long after its sign-in, however busy (absolute). */
export const SESSION_ABSOLUTE_HOURS = 12;
/** A set-password link works once, for this long. */
export const PASSWORD_LINK_HOURS = 24;
/** Flashes and form nonces older than this are deleted (a flash is read on the very next page). */
const ONCE_RETENTION_HOURS = 24;
const PURGE_EVERY_MS = 10 * 60_000;

export const SESSION_COOKIE = 'fw_session';

export interface Session {
  id: string;
  userId: string;
  email: string;
  csrf: string;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const secret = () => randomBytes(32).toString('base64url');

/**
 * Browser sessions, flashes, form nonces and set-password links, all in PostgreSQL: any instance
 * serves any page, and deleting a row (sign-out, a used link) is felt on every instance at once.
 */
@Injectable()
export class SessionsService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Sessions');
  private timer?: NodeJS.Timeout;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  onModuleInit() {
    this.timer = setInterval(
      () => void this.purge().catch((err: Error) => this.logger.warn(`purge failed: ${err.message}`)),
      PURGE_EVERY_MS,
    );
    this.timer.unref();
  }

  onModuleDestroy() {
    clearInterval(this.timer);
  }

  async purge(): Promise<void> {
    await this.db.query(
      `DELETE FROM settings_sessions WHERE last_seen_at < now() - make_interval(mins => $1) OR created_at < now() - make_interval(hours => $2)`,
      [SESSION_IDLE_MINUTES, SESSION_ABSOLUTE_HOURS],
    );
    await this.db.query(`DELETE FROM settings_once WHERE created_at < now() - make_interval(hours => $1)`, [
      ONCE_RETENTION_HOURS,
    ]);
    await this.db.query(`DELETE FROM password_links WHERE expires_at < now() - interval '1 day'`);
  }

  /**
   * Signs a person in: a new session with a new id (the one the browser had before, if any, is
   * deleted: the id is rotated at sign-in). Returns the cookie's value.
   */
  async start(userId: string, previousCookie?: string): Promise<string> {
    if (previousCookie) await this.db.query('DELETE FROM settings_sessions WHERE id = $1', [sha256(previousCookie)]);
    const cookie = secret();
    await this.db.query('INSERT INTO settings_sessions (id, user_id, csrf) VALUES ($1, $2, $3)', [
      sha256(cookie),
      userId,
      secret(),
    ]);
    return cookie;
  }

  /** The live session behind a cookie; seeing it moves its idle limit (at most once a minute). */
  async find(cookie: string | undefined): Promise<Session | undefined> {
    if (!cookie || cookie.length > 100) return undefined;
    const [row] = await this.db.query(
      `SELECT s.id, s.user_id, s.csrf, u.email, s.last_seen_at < now() - interval '1 minute' AS stale
         FROM settings_sessions s JOIN users u ON u.id = s.user_id
        WHERE s.id = $1 AND s.last_seen_at > now() - make_interval(mins => $2) AND s.created_at > now() - make_interval(hours => $3)`,
      [sha256(cookie), SESSION_IDLE_MINUTES, SESSION_ABSOLUTE_HOURS],
    );
    if (!row) return undefined;
    if (row.stale) await this.db.query('UPDATE settings_sessions SET last_seen_at = now() WHERE id = $1', [row.id]);
    return { id: row.id, userId: row.user_id, email: row.email, csrf: row.csrf };
  }

  /**
   * Signs a person out everywhere: every settings session of theirs and every session of the
   * authorization server (its sign-in), on every instance at once.
   */
  async endAll(userId: string): Promise<void> {
    await this.db.query('DELETE FROM settings_sessions WHERE user_id = $1', [userId]);
    await this.db.query(`DELETE FROM oauth_models WHERE model = 'Session' AND payload->>'accountId' = $1`, [userId]);
  }

  csrfValid(session: Session, given: unknown): boolean {
    if (typeof given !== 'string') return false;
    const a = Buffer.from(session.csrf);
    const b = Buffer.from(given);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** Keeps a value for the session's next page only (a token's secret, a set-password link). */
  async flash(session: Session, kind: string, payload: Record<string, unknown>): Promise<void> {
    await this.db.query(
      `INSERT INTO settings_once (key, session_id, payload) VALUES ($1, $2, $3::jsonb)
       ON CONFLICT (key) DO UPDATE SET payload = EXCLUDED.payload, created_at = now()`,
      [`flash:${session.id}:${kind}`, session.id, JSON.stringify(payload)],
    );
  }

  /** Reads a flash and deletes it in one statement: a reload or another instance finds nothing. */
  async takeFlash(session: Session, kind: string): Promise<Record<string, unknown> | undefined> {
    const [rows] = (await this.db.query('DELETE FROM settings_once WHERE key = $1 RETURNING payload', [
      `flash:${session.id}:${kind}`,
    ])) as [Array<{ payload: Record<string, unknown> }>, number];
    return rows[0]?.payload;
  }

  /** A fresh nonce for a form that creates something. */
  nonce(): string {
    return secret();
  }

  /** Marks a form's nonce used; false when it was used before (the form was sent twice). */
  async useNonce(nonce: unknown): Promise<boolean> {
    if (typeof nonce !== 'string' || nonce.length < 20 || nonce.length > 100) return false;
    // (TypeORM answers an INSERT with its rows; an UPDATE or DELETE with [rows, count].)
    const rows: unknown[] = await this.db.query(
      `INSERT INTO settings_once (key) VALUES ($1) ON CONFLICT (key) DO NOTHING RETURNING key`,
      [`nonce:${nonce}`],
    );
    return rows.length === 1;
  }

  /** A new one-time set-password link's secret for a person (earlier unused links stop working). */
  async passwordLink(userId: string): Promise<string> {
    const token = secret();
    await this.db.transaction(async (tx) => {
      await tx.query('DELETE FROM password_links WHERE user_id = $1', [userId]);
      await tx.query(
        `INSERT INTO password_links (token_hash, user_id, expires_at) VALUES ($1, $2, now() + make_interval(hours => $3))`,
        [sha256(token), userId, PASSWORD_LINK_HOURS],
      );
    });
    return token;
  }

  /** The person a live, unused link is for (without using it). */
  async linkUser(token: string): Promise<{ userId: string; email: string } | undefined> {
    if (token.length > 100) return undefined;
    const [row] = await this.db.query(
      `SELECT l.user_id, u.email FROM password_links l JOIN users u ON u.id = l.user_id WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > now()`,
      [sha256(token)],
    );
    return row ? { userId: row.user_id, email: row.email } : undefined;
  }

  /** Uses a link (once: a second use, here or on another instance, finds it used). */
  async useLink(token: string): Promise<string | undefined> {
    const [rows] = (await this.db.query(
      `UPDATE password_links SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now() RETURNING user_id`,
      [sha256(token)],
    )) as [Array<{ user_id: string }>, number];
    return rows[0]?.user_id;
  }
}

/** One cookie of a Cookie header. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** A Set-Cookie value: HttpOnly, SameSite=Lax, Secure when the service is served over https. */
export function cookieHeader(
  name: string,
  value: string,
  opts: { secure: boolean; maxAgeSeconds?: number; path?: string },
): string {
  const parts = [`${name}=${value}`, `Path=${opts.path ?? '/'}`, 'HttpOnly', 'SameSite=Lax'];
  if (opts.maxAgeSeconds !== undefined) parts.push(`Max-Age=${opts.maxAgeSeconds}`);
  if (opts.secure) parts.push('Secure');
  return parts.join('; ');
}

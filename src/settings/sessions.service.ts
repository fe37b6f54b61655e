import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { DataSource } from 'typeorm';
import { currentManager, inTransaction } from '../database/transaction';
import { SessionsRepository } from './sessions.repository';

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
  /** The person signed in with a password that works once: nothing but choosing a new one until then. */
  mustChangePassword: boolean;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const secret = () => randomBytes(32).toString('base64url');

/**
 * Browser sessions, flashes, form nonces and set-password links, all in PostgreSQL: any instance
 * serves any page, and deleting a row (sign-out, a used link) is felt on every instance at once.
 * The SQL is in SessionsRepository.
 */
@Injectable()
export class SessionsService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Sessions');
  private timer?: NodeJS.Timeout;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: SessionsRepository,
  ) {}

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
    await this.repo.purge(currentManager(this.db), {
      idleMinutes: SESSION_IDLE_MINUTES,
      absoluteHours: SESSION_ABSOLUTE_HOURS,
      onceRetentionHours: ONCE_RETENTION_HOURS,
    });
  }

  /**
   * Signs a person in: a new session with a new id (the one the browser had before, if any, is
   * deleted: the id is rotated at sign-in). Returns the cookie's value.
   */
  async start(userId: string, previousCookie?: string): Promise<string> {
    if (previousCookie) await this.repo.deleteSession(currentManager(this.db), sha256(previousCookie));
    const cookie = secret();
    await this.repo.insertSession(currentManager(this.db), { id: sha256(cookie), userId, csrf: secret() });
    return cookie;
  }

  /** The live session behind a cookie; seeing it moves its idle limit (at most once a minute). */
  async find(cookie: string | undefined): Promise<Session | undefined> {
    if (!cookie || cookie.length > 100) return undefined;
    const row = await this.repo.findLiveSession(currentManager(this.db), sha256(cookie), {
      idleMinutes: SESSION_IDLE_MINUTES,
      absoluteHours: SESSION_ABSOLUTE_HOURS,
    });
    if (!row) return undefined;
    if (row.stale) await this.repo.touchSession(currentManager(this.db), row.id);
    return {
      id: row.id,
      userId: row.userId,
      email: row.email,
      csrf: row.csrf,
      mustChangePassword: row.mustChangePassword,
    };
  }

  /**
   * Signs a person out everywhere: every settings session of theirs and every session of the
   * authorization server (its sign-in), on every instance at once.
   */
  async endAll(userId: string): Promise<void> {
    await this.repo.deleteSessionsOf(currentManager(this.db), userId);
  }

  csrfValid(session: Session, given: unknown): boolean {
    if (typeof given !== 'string') return false;
    const a = Buffer.from(session.csrf);
    const b = Buffer.from(given);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** Keeps a value for the session's next page only (a token's secret, a set-password link). */
  async flash(session: Session, kind: string, payload: Record<string, unknown>): Promise<void> {
    await this.repo.putOnce(currentManager(this.db), `flash:${session.id}:${kind}`, session.id, payload);
  }

  /** Reads a flash and deletes it in one statement: a reload or another instance finds nothing. */
  async takeFlash(session: Session, kind: string): Promise<Record<string, unknown> | undefined> {
    return this.repo.takeOnce(currentManager(this.db), `flash:${session.id}:${kind}`);
  }

  /** A fresh nonce for a form that creates something. */
  nonce(): string {
    return secret();
  }

  /** Marks a form's nonce used; false when it was used before (the form was sent twice). */
  async useNonce(nonce: unknown): Promise<boolean> {
    if (typeof nonce !== 'string' || nonce.length < 20 || nonce.length > 100) return false;
    return this.repo.insertOnceKey(currentManager(this.db), `nonce:${nonce}`);
  }

  /**
   * A new one-time set-password link's secret for a person (earlier unused links stop working).
   * `workspaceId`: the workspace whose admin is shown the link, to which the password set with it
   * is bound; null only for the operator (the CLI). Whether an admin may be shown one at all is
   * SettingsService's rule (PASSWORD_BINDING). Joins the caller's transaction when one is open.
   */
  async passwordLink(userId: string, workspaceId: string | null): Promise<string> {
    const token = secret();
    await inTransaction(this.db, (tx) =>
      this.repo.replacePasswordLink(tx, {
        userId,
        tokenHash: sha256(token),
        hours: PASSWORD_LINK_HOURS,
        workspaceId,
      }),
    );
    return token;
  }

  /** The person a live, unused link is for (without using it). */
  async linkUser(token: string): Promise<{ userId: string; email: string } | undefined> {
    if (token.length > 100) return undefined;
    return this.repo.findLinkUser(currentManager(this.db), sha256(token));
  }

  /**
   * Uses a link (once: a second use, here or on another instance, finds it used): its person and
   * the workspace that issued it (null: the operator), which the password set with it is bound to.
   */
  async useLink(token: string): Promise<{ userId: string; workspaceId: string | null } | undefined> {
    return this.repo.useLink(currentManager(this.db), sha256(token));
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

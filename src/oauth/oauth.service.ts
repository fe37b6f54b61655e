/** Sign-in for the authorization server (passwords, lock-out after failures), grants, and the purge of expired rows. */
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiError } from '../common/errors/api-error';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { sharedSecret } from './shared-secret';
import { hashPassword, MIN_PASSWORD_LENGTH, verifyPassword } from './passwords';

/** Sign-in locks after this many failures in a row, for LOCK_MINUTES after the last one. */
export const MAX_FAILED_LOGINS = 5;
export const LOCK_MINUTES = 15;

/** A sign-in failure row is deleted this long after the last failure (its lock window is long over by then). */
export const FAILURE_RETENTION_HOURS = 1;
const PURGE_EVERY_MS = 10 * 60_000;
const PURGE_BATCH = 1_000;
const PURGE_MAX_BATCHES = 20;
const PURGE_SQL = [
  `DELETE FROM oauth_models WHERE ctid = ANY (ARRAY(
     SELECT ctid FROM oauth_models WHERE expires_at < now() - interval '1 hour' LIMIT ${PURGE_BATCH}))`,
  `DELETE FROM login_failures WHERE ctid = ANY (ARRAY(
     SELECT ctid FROM login_failures WHERE last_failure_at < now() - interval '${FAILURE_RETENTION_HOURS} hours' LIMIT ${PURGE_BATCH}))`,
];

export type SignInResult =
  { ok: true; userId: string } | { ok: false; reason: 'wrong' } | { ok: false; reason: 'locked'; minutes: number };

export interface GrantView {
  id: string;
  clientId: string;
  clientName: string | null;
  userEmail: string;
  workspace: string;
  scopes: string[];
  createdAt: string;
  revokedAt: string | null;
}

@Injectable()
export class OAuthService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('OAuth');
  private csrfKey?: Buffer;
  private purgeTimer?: NodeJS.Timeout;
  private purging?: Promise<unknown>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly workspaces: WorkspacesService,
  ) {}

  onModuleInit() {
    // Once at start, then every PURGE_EVERY_MS, on every instance (the deletes are idempotent).
    const run = () => {
      this.purging ??= this.purge()
        .then((n) => n > 0 && this.logger.debug(`purged ${n} expired OAuth records and old sign-in failures`))
        .catch((err: Error) => this.logger.warn(`purge failed: ${err.message}`))
        .finally(() => (this.purging = undefined));
    };
    run();
    this.purgeTimer = setInterval(run, PURGE_EVERY_MS);
    this.purgeTimer.unref();
  }

  async onModuleDestroy() {
    clearInterval(this.purgeTimer);
    await this.purging; // before the connection pool closes
  }

  /**
   * Deletes what no longer counts, in batches of PURGE_BATCH rows: expired codes, sessions, tokens
   * and unused clients (the adapter never serves them; this keeps the table small), and sign-in
   * failures whose lock window is long over (one row per email typed, known or not, so this table
   * would otherwise grow with every unknown email tried). Resolves with the number of rows deleted.
   */
  async purge(): Promise<number> {
    let deleted = 0;
    for (const sql of PURGE_SQL) {
      for (let i = 0; i < PURGE_MAX_BATCHES; i++) {
        const [, count] = (await this.db.query(sql)) as [unknown, number];
        deleted += count;
        if (count < PURGE_BATCH) break;
      }
    }
    return deleted;
  }

  /**
   * Email and password, with a lock after repeated failures. Each attempt is counted as a failure
   * before the password is checked, under a row lock, so parallel guesses cannot slip past the
   * limit; a success clears the count. Unknown emails are counted and locked alike, and cost the
   * same hashing time, so neither reveals whether an account exists.
   */
  async signIn(email: string, password: string): Promise<SignInResult> {
    const normalized = email.trim().toLowerCase();
    const admitted = await this.db.transaction(async (tx) => {
      // One statement creates or locks the row, so a purge between two statements cannot lose it.
      const [row] = await tx.query(
        `INSERT INTO login_failures (email, failures, last_failure_at) VALUES ($1, 0, now())
         ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email RETURNING failures, last_failure_at`,
        [normalized],
      );
      const windowEnds = new Date(row.last_failure_at).getTime() + LOCK_MINUTES * 60_000;
      const fresh = windowEnds <= Date.now();
      if (!fresh && row.failures >= MAX_FAILED_LOGINS) return { locked: Math.ceil((windowEnds - Date.now()) / 60_000) };
      await tx.query(`UPDATE login_failures SET failures = $2, last_failure_at = now() WHERE email = $1`, [
        normalized,
        fresh ? 1 : row.failures + 1,
      ]);
      return { locked: 0 };
    });
    if (admitted.locked) return { ok: false, reason: 'locked', minutes: admitted.locked };
    const [user] = await this.db.query(`SELECT id, password_hash FROM users WHERE email = $1`, [normalized]);
    const ok = await verifyPassword(password, user?.password_hash ?? null);
    if (!user || !ok) return { ok: false, reason: 'wrong' };
    await this.db.query('DELETE FROM login_failures WHERE email = $1', [normalized]);
    return { ok: true, userId: user.id };
  }

  async setPassword(email: string, password: string): Promise<{ userId: string; email: string }> {
    if (password.length < MIN_PASSWORD_LENGTH) {
      throw new ApiError('invalid_arguments', {
        message: `The password is too short: at least ${MIN_PASSWORD_LENGTH} characters.`,
        hint: 'Use a longer passphrase.',
        details: [{ path: '--password-stdin', message: `must be at least ${MIN_PASSWORD_LENGTH} characters` }],
      });
    }
    const user = await this.workspaces.findUserByEmail(email);
    if (!user)
      throw new ApiError('not_found', {
        message: `No user with the email "${email}".`,
        hint: '`member add` or `workspace create` makes one.',
      });
    await this.db.query('UPDATE users SET password_hash = $2 WHERE id = $1', [user.id, await hashPassword(password)]);
    await this.db.query('DELETE FROM login_failures WHERE email = $1', [user.email]);
    return { userId: user.id, email: user.email };
  }

  /** The workspaces a person may connect an app to, with their role in each. */
  async workspacesOf(userId: string): Promise<Array<{ id: string; slug: string; name: string; role: string }>> {
    return this.db.query(
      `SELECT w.id, w.slug, w.name, m.role FROM memberships m JOIN workspaces w ON w.id = m.workspace_id WHERE m.user_id = $1 ORDER BY w.name, w.slug`,
      [userId],
    );
  }

  /**
   * Binds a grant to the workspace the person chose. A later consent on the same grant (more
   * scopes, same workspace) updates its scopes; it never moves a grant to another workspace nor
   * brings a revoked one back (the interaction starts a new grant for those).
   */
  async recordGrant(grant: {
    grantId: string;
    workspaceId: string;
    userId: string;
    clientId: string;
    clientName: string | null;
    scopes: string[];
  }) {
    await this.db.query(
      `INSERT INTO oauth_grants (grant_id, workspace_id, user_id, client_id, client_name, scopes) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (grant_id) DO UPDATE SET scopes = EXCLUDED.scopes
        WHERE oauth_grants.workspace_id = EXCLUDED.workspace_id AND oauth_grants.revoked_at IS NULL`,
      [grant.grantId, grant.workspaceId, grant.userId, grant.clientId, grant.clientName, grant.scopes],
    );
  }

  /** Whether an existing grant may be extended by a consent for this workspace. */
  async grantUsableFor(grantId: string, workspaceId: string): Promise<boolean> {
    const [row] = await this.db.query('SELECT workspace_id, revoked_at FROM oauth_grants WHERE grant_id = $1', [
      grantId,
    ]);
    return !!row && row.workspace_id === workspaceId && !row.revoked_at;
  }

  async listGrants(workspaceSlug: string): Promise<GrantView[]> {
    const workspace = await this.workspaces.requireBySlug(workspaceSlug);
    const rows = await this.db.query(
      `SELECT g.grant_id, g.client_id, g.client_name, u.email, g.scopes, g.created_at, g.revoked_at
         FROM oauth_grants g JOIN users u ON u.id = g.user_id WHERE g.workspace_id = $1 ORDER BY g.created_at`,
      [workspace.id],
    );
    return rows.map((r: Record<string, never>) => ({
      id: r.grant_id,
      clientId: r.client_id,
      clientName: r.client_name,
      userEmail: r.email,
      workspace: workspace.slug,
      scopes: r.scopes,
      createdAt: (r.created_at as Date).toISOString(),
      revokedAt: r.revoked_at ? (r.revoked_at as Date).toISOString() : null,
    }));
  }

  /** Disconnects an app: every token of the grant is deleted; instances refuse them within 5 s. */
  async revokeGrant(grantId: string): Promise<{ id: string; revoked: true }> {
    const [grant] = await this.db.query('SELECT grant_id FROM oauth_grants WHERE grant_id = $1', [grantId]);
    if (!grant)
      throw new ApiError('not_found', {
        message: `No connected app with the grant id "${grantId}".`,
        hint: '`grant list --workspace S` shows them.',
      });
    await this.db.transaction(async (tx) => {
      // Its tokens, codes and sessions' references, and the authorization server's own grant record
      // (left behind, a later authorization would skip consent and get dead tokens).
      await tx.query(`DELETE FROM oauth_models WHERE grant_id = $1 OR (model = 'Grant' AND id = $1)`, [grantId]);
      await tx.query('UPDATE oauth_grants SET revoked_at = COALESCE(revoked_at, now()) WHERE grant_id = $1', [grantId]);
    });
    return { id: grantId, revoked: true };
  }

  /** CSRF token of a sign-in interaction: an HMAC of its id (the interaction itself is bound to a cookie). */
  async csrfFor(uid: string): Promise<string> {
    return createHmac('sha256', await this.key())
      .update(`csrf:${uid}`)
      .digest('base64url');
  }

  async csrfValid(uid: string, token: unknown): Promise<boolean> {
    if (typeof token !== 'string' || token.length === 0) return false;
    const expected = Buffer.from(await this.csrfFor(uid));
    const given = Buffer.from(token);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  private async key(): Promise<Buffer> {
    this.csrfKey ??= Buffer.from(
      await sharedSecret(this.db, 'csrf-key', () => randomBytes(32).toString('base64url')),
      'base64url',
    );
    return this.csrfKey;
  }
}

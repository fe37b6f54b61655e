/** Sign-in for the authorization server (passwords, lock-out after failures), grants, and the purge of expired rows. */
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { ApiError } from '../common/errors/api-error';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { inBatches } from '../database/in-batches';
import { currentManager, inTransaction } from '../database/transaction';
import { AuditService } from '../audit/audit.service';
import { OAuthProviderRef } from './oauth-provider';
import { OAuthRepository, PURGE_BATCH } from './oauth.repository';
import { sharedSecret } from './shared-secret';
import { hashPassword, MIN_PASSWORD_LENGTH, verifyPassword } from './passwords';

/** Sign-in locks after this many failures in a row, for LOCK_MINUTES after the last one. */
export const MAX_FAILED_LOGINS = 5;
export const LOCK_MINUTES = 15;

/** A sign-in failure row is deleted this long after the last failure (its lock window is long over by then). */
export const FAILURE_RETENTION_HOURS = 1;
const PURGE_EVERY_MS = 10 * 60_000;

export type SignInResult =
  | { ok: true; userId: string; mustChange: boolean }
  | { ok: false; reason: 'wrong' }
  | { ok: false; reason: 'locked'; minutes: number };

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

/**
 * The rules of the OAuth server around oidc-provider: sign-in (with its lock after failures),
 * passwords, grants bound to a workspace and their revocation, the interaction's CSRF token, and
 * the purge of what expired. The SQL is in OAuthRepository.
 */
@Injectable()
export class OAuthService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('OAuth');
  private csrfKey?: Buffer;
  private purgeTimer?: NodeJS.Timeout;
  private purging?: Promise<unknown>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: OAuthRepository,
    private readonly workspaces: WorkspacesService,
    private readonly audit: AuditService,
    private readonly providerRef: OAuthProviderRef,
  ) {}

  onModuleInit() {
    // oidc-provider revokes a whole grant by itself (a revoked refresh token, a reused one): its
    // workspace's audit log records that too. The event comes once per revocation, after it.
    this.providerRef.onMount((provider) =>
      provider.on('grant.revoked', (_ctx: unknown, grantId: string) => {
        this.recordRevokedByServer(grantId).catch((err: Error) =>
          this.logger.warn(`could not record the revocation of a grant in the audit log: ${err.message}`),
        );
      }),
    );
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
    const models = await inBatches(() => this.repo.purgeExpiredModels(currentManager(this.db)), PURGE_BATCH);
    const failures = await inBatches(
      () => this.repo.purgeOldFailures(currentManager(this.db), FAILURE_RETENTION_HOURS),
      PURGE_BATCH,
    );
    return models + failures;
  }

  /**
   * Email and password, with a lock after repeated failures. Each attempt is counted as a failure
   * before the password is checked, under a row lock, so parallel guesses cannot slip past the
   * limit; a success clears the count. Unknown emails are counted and locked alike, and cost the
   * same hashing time, so neither reveals whether an account exists.
   */
  async signIn(email: string, password: string): Promise<SignInResult> {
    const normalized = email.trim().toLowerCase();
    const admitted = await inTransaction(this.db, async (tx) => {
      const row = await this.repo.lockFailures(tx, normalized);
      const windowEnds = new Date(row.lastFailureAt).getTime() + LOCK_MINUTES * 60_000;
      const fresh = windowEnds <= Date.now();
      if (!fresh && row.failures >= MAX_FAILED_LOGINS) return { locked: Math.ceil((windowEnds - Date.now()) / 60_000) };
      await this.repo.setFailures(tx, normalized, fresh ? 1 : row.failures + 1);
      return { locked: 0 };
    });
    if (admitted.locked) return { ok: false, reason: 'locked', minutes: admitted.locked };
    const user = await this.repo.findUserByEmail(currentManager(this.db), normalized);
    const ok = await verifyPassword(password, user?.passwordHash ?? null);
    if (!user || !ok) return { ok: false, reason: 'wrong' };
    await this.repo.clearFailures(currentManager(this.db), normalized);
    return { ok: true, userId: user.id, mustChange: user.passwordMustChange };
  }

  /**
   * Sets a person's password. `boundTo` says who may know it (see PASSWORD_BINDING in
   * src/settings/settings.service.ts): a workspace's id when it is set through a link that
   * workspace's admin was shown (the password then acts only there); null when the operator sets
   * it (CLI, or a link the CLI printed), which clears a binding; 'unchanged' (the default) when the
   * person changes their own password, which keeps it: whoever set the first one may know the
   * account, so only the operator lifts a binding. `mustChange`: the password works for one
   * sign-in, which asks for a new one (the demo owner's printed password); any other new password
   * clears that.
   */
  async setPassword(
    email: string,
    password: string,
    boundTo: string | null | 'unchanged' = 'unchanged',
    mustChange = false,
  ): Promise<{ userId: string; email: string }> {
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
    await this.repo.setPasswordHash(
      currentManager(this.db),
      user.id,
      await hashPassword(password),
      boundTo,
      mustChange,
    );
    await this.repo.clearFailures(currentManager(this.db), user.email);
    return { userId: user.id, email: user.email };
  }

  /**
   * The workspaces a person may connect an app to (and, on the settings pages, open), with their
   * role in each: never one other than the workspace their password is bound to (PASSWORD_BINDING).
   */
  async workspacesOf(userId: string): Promise<Array<{ id: string; slug: string; name: string; role: string }>> {
    return this.repo.workspacesOf(currentManager(this.db), userId);
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
    // The consent and its audit record (app.connect: who, which app, which scopes; the workspace is
    // the record's) commit together, every query on the transaction's own connection.
    await inTransaction(this.db, async (tx) => {
      if (!(await this.repo.upsertGrant(tx, grant))) return;
      const who = await this.repo.grantForAudit(tx, grant.grantId);
      await this.audit.recordSession(tx, grant.workspaceId, grant.userId, 'app.connect', grant.grantId, {
        app: grant.clientName ?? grant.clientId,
        clientId: grant.clientId,
        person: who?.email ?? null,
        scopes: grant.scopes,
      });
    });
  }

  /**
   * Records, in its workspace's audit log, a grant the authorization server revoked by itself: the
   * app revoked its refresh token (RFC 7009), or a spent refresh token came back (reuse detection).
   * The actor is the app, on behalf of its person. (A disconnect on the settings pages is recorded
   * there, as app.disconnect; one by the operator's `grant revoke` in revokeGrant.)
   */
  async recordRevokedByServer(grantId: string): Promise<void> {
    await inTransaction(this.db, (tx) =>
      this.recordRevoke(
        tx,
        grantId,
        { actorKind: 'oauth', actorId: grantId },
        'authorization server (token revocation or refresh token reuse)',
      ),
    );
  }

  private async recordRevoke(
    tx: EntityManager,
    grantId: string,
    actor: { actorKind: string; actorId: string },
    by: string,
  ): Promise<void> {
    const grant = await this.repo.grantForAudit(tx, grantId);
    if (!grant) return;
    await this.audit.recordAs(tx, {
      workspaceId: grant.workspaceId,
      action: 'app.revoke',
      subjectId: grantId,
      ...actor,
      actorUserId: grant.userId,
      details: {
        app: grant.clientName ?? grant.clientId,
        clientId: grant.clientId,
        person: grant.email,
        scopes: grant.scopes,
        by,
      },
    });
  }

  /** Whether an existing grant may be extended by a consent for this workspace. */
  async grantUsableFor(grantId: string, workspaceId: string): Promise<boolean> {
    const row = await this.repo.findGrant(currentManager(this.db), grantId);
    return !!row && row.workspaceId === workspaceId && !row.revokedAt;
  }

  async listGrants(workspaceSlug: string): Promise<GrantView[]> {
    const workspace = await this.workspaces.requireBySlug(workspaceSlug);
    const rows = await this.repo.listGrants(currentManager(this.db), workspace.id);
    return rows.map((r) => ({
      id: r.grantId,
      clientId: r.clientId,
      clientName: r.clientName,
      userEmail: r.email,
      workspace: workspace.slug,
      scopes: r.scopes,
      createdAt: r.createdAt.toISOString(),
      revokedAt: r.revokedAt?.toISOString() ?? null,
    }));
  }

  /**
   * Disconnects an app: every token of the grant is deleted; instances refuse them within 5 s.
   * Recorded in the same transaction: by `record` (the settings pages' app.disconnect), or else as
   * the operator's app.revoke (the CLI's `grant revoke`).
   */
  async revokeGrant(
    grantId: string,
    record?: (tx: EntityManager) => Promise<void>,
  ): Promise<{ id: string; revoked: true }> {
    const grant = await this.repo.findGrant(currentManager(this.db), grantId);
    if (!grant)
      throw new ApiError('not_found', {
        message: `No connected app with the grant id "${grantId}".`,
        hint: '`grant list --workspace S` shows them.',
      });
    await inTransaction(this.db, async (tx) => {
      // Recorded before the revoke, while the grant's row still names its app and person.
      if (record) await record(tx);
      else await this.recordRevoke(tx, grantId, { actorKind: 'operator', actorId: 'cli' }, 'operator (command line)');
      await this.repo.revokeGrant(tx, grantId);
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

import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { isRole, Plan, Role, roleAtLeast } from '../common/access/roles';
import { AuditService } from '../audit/audit.service';
import { currentManager, inTransaction } from '../database/transaction';
import { OAuthService } from '../oauth/oauth.service';
import { TokensService } from '../tokens/tokens.service';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { Session, SessionsService } from './sessions.service';
import { MemberView, PasswordStanding, SettingsRepository } from './settings.repository';

/** A page's refusal: rendered as an HTML page with this status (and headers, such as a 429's Retry-After). */
export class PageError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 429,
    readonly title: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const notFound = () => new PageError(404, 'Not found', 'There is nothing here, or you have no access to it.');

export interface Access {
  session: Session;
  workspace: { id: string; slug: string; name: string; plan: Plan; embedOrigins: string[] };
  role: Role;
}

export type { AuditLogRow, MemberView } from './settings.repository';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * PASSWORD_BINDING: who may be shown a set-password link, and where a password set with one acts.
 *
 * People are global and may belong to several workspaces, and Formwork sends no email, so the
 * admin who is shown a link can use it themselves: a link is as good as choosing the password.
 * Left unchecked, an admin of workspace A could add the owner of workspace B to A, take a link,
 * set the owner's password and act as them in B; or pre-set the password of an email before B
 * invites it. Hence:
 * 1. A workspace's admin is shown a link only for a person who is the workspace's alone: a member
 *    of no other workspace, with no password yet (or one set through this workspace's own link,
 *    which its admins may know already: resetting it gives them nothing new). For anyone else the
 *    link is refused (newLink) or not made (addMember): they sign in with their own password, and
 *    only the operator sets one (`user set-password`, which also signs them out everywhere).
 * 2. A password set through a link is bound to the workspace whose admin was shown it
 *    (password_links.workspace_id, then users.password_workspace_id), and acts only there: the
 *    settings pages (SettingsRepository.findAccess), the workspace choice of the OAuth consent page
 *    (OAuthRepository.workspacesOf) and OAuth access tokens (findAccessToken) ignore the person's
 *    other memberships. This holds whatever the order of events (a link used after another
 *    workspace added the person, a member added by the CLI, a race between two admins), so 1 is
 *    about telling people early, and 2 is what keeps them safe.
 * 3. A settings page does not add a person whose password is bound to another workspace (the
 *    operator's `member add` does, with a warning). The person changing their own password keeps
 *    the binding (whoever set the first one may still know the account); the operator's
 *    `user set-password` and links the CLI prints (no workspace) set an unbound password.
 * 4. Deleting a workspace clears the passwords bound to it and signs those people out (a trigger,
 *    migration 1796000020000), rather than leaving an unbound password its admins may know.
 */
function mayBeShownLink(s: PasswordStanding, workspaceId: string): boolean {
  return s.otherWorkspaces === 0 && (!s.hasPassword || s.passwordWorkspaceId === workspaceId);
}

/** A password set through another workspace's link (PASSWORD_BINDING, 3). */
function boundElsewhere(s: PasswordStanding, workspaceId: string): boolean {
  return s.hasPassword && s.passwordWorkspaceId !== null && s.passwordWorkspaceId !== workspaceId;
}

/** What adding a member on the settings page did. */
export type AddMemberResult =
  | { outcome: 'already_member' }
  | { outcome: 'refused'; reason: string }
  | { outcome: 'added'; email: string; link: string; noLink?: undefined }
  | { outcome: 'added'; email: string; link?: undefined; noLink: 'has_password' | 'not_alone' };

/**
 * What the settings pages do, each action checked here against the person's role in the chosen
 * workspace (never trusting what the page offered), and every change recorded in the audit log.
 * An id that is not the workspace's is "not found", whether it exists elsewhere or not.
 */
@Injectable()
export class SettingsService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: SettingsRepository,
    private readonly auditTrail: AuditService,
    private readonly workspaces: WorkspacesService,
    private readonly tokens: TokensService,
    private readonly oauth: OAuthService,
    private readonly sessions: SessionsService,
  ) {}

  /** The person's role in a workspace: 404 when not a member (no existence leak), 403 below `minimum`. */
  async access(session: Session, slug: string, minimum: Role = 'viewer'): Promise<Access> {
    if (!/^[a-z0-9-]{1,64}$/.test(slug)) throw notFound();
    const row = await this.repo.findAccess(currentManager(this.db), slug, session.userId);
    if (!row || !isRole(row.role)) throw notFound();
    if (!roleAtLeast(row.role, minimum)) {
      throw new PageError(
        403,
        'Not allowed',
        `This page is for a workspace ${minimum}${minimum === 'owner' ? '' : ' or above'}; you are ${row.role} in ${row.name}.`,
      );
    }
    return {
      session,
      role: row.role,
      workspace: { id: row.id, slug: row.slug, name: row.name, plan: row.plan, embedOrigins: row.embedOrigins },
    };
  }

  async workspacesOf(userId: string) {
    return this.oauth.workspacesOf(userId);
  }

  /** Records a settings action in the workspace's audit log, as done by the signed-in person. */
  async audit(
    a: Access,
    action: string,
    subjectId: string,
    details: Record<string, unknown> = {},
    manager: EntityManager = currentManager(this.db),
  ): Promise<void> {
    await this.auditTrail.recordSession(manager, a.workspace.id, a.session.userId, action, subjectId, details);
  }

  // --- tokens -------------------------------------------------------------------------------------

  async listTokens(a: Access) {
    return this.repo.listTokens(currentManager(this.db), a.workspace.id);
  }

  async findToken(a: Access, id: string) {
    if (!UUID.test(id)) throw notFound();
    const row = await this.repo.findToken(currentManager(this.db), a.workspace.id, id);
    if (!row) throw notFound();
    return row;
  }

  async createToken(a: Access, input: { name: string; role: Role; scopes: string[]; expiresAt?: Date }) {
    // The token and its audit record commit together, or neither does.
    return inTransaction(this.db, async (tx) => {
      const created = await this.tokens.create(
        {
          workspaceSlug: a.workspace.slug,
          name: input.name,
          role: input.role,
          scopes: input.scopes as never,
          expiresAt: input.expiresAt,
          creatorUserId: a.session.userId,
        },
        tx,
      );
      await this.audit(
        a,
        'token.create',
        created.view.id,
        { name: input.name, role: input.role, scopes: input.scopes },
        tx,
      );
      return created;
    });
  }

  async revokeToken(a: Access, id: string) {
    const token = await this.findToken(a, id);
    await inTransaction(this.db, async (tx) => {
      await this.tokens.revoke(token.id, tx);
      await this.audit(a, 'token.revoke', token.id, { name: token.name }, tx);
    });
  }

  // --- members ------------------------------------------------------------------------------------

  async listMembers(a: Access): Promise<MemberView[]> {
    return this.repo.listMembers(currentManager(this.db), a.workspace.id);
  }

  async findMember(a: Access, userId: string): Promise<MemberView> {
    if (!UUID.test(userId)) throw notFound();
    const member = (await this.listMembers(a)).find((m) => m.userId === userId);
    if (!member) throw notFound();
    return member;
  }

  /** Which roles this person may hand out: up to their own; only an owner names an owner. */
  grantable(a: Access): Role[] {
    return (['viewer', 'editor', 'admin', 'owner'] as Role[]).filter((r) => roleAtLeast(a.role, r));
  }

  /**
   * Adds a member. A person who is the workspace's alone (PASSWORD_BINDING) gets a one-time
   * set-password link (returned, shown once); anyone else is added without one, and the page says
   * why. A person whose password another workspace's link set is not added at all.
   */
  async addMember(a: Access, email: string, role: Role): Promise<AddMemberResult> {
    this.mayGrant(a, role);
    return inTransaction(this.db, async (tx) => {
      const before = await this.repo.passwordStanding(tx, a.workspace.id, { email: email.trim().toLowerCase() });
      if (before?.member) return { outcome: 'already_member' };
      if (before && boundElsewhere(before, a.workspace.id)) {
        return {
          outcome: 'refused',
          reason:
            `${before.email}'s password was set through a link from another workspace's admin, who may know it. ` +
            'An operator can confirm the account with `user set-password` (the command line) before it joins this workspace.',
        };
      }
      const { user } = await this.workspaces.addMember(a.workspace.slug, email, role); // joins this transaction
      await this.audit(a, 'member.add', user.id, { email: user.email, role }, tx);
      const standing = (await this.repo.passwordStanding(tx, a.workspace.id, { userId: user.id }))!;
      if (standing.hasPassword) return { outcome: 'added', email: user.email, noLink: 'has_password' };
      if (!mayBeShownLink(standing, a.workspace.id))
        return { outcome: 'added', email: user.email, noLink: 'not_alone' };
      return { outcome: 'added', email: user.email, link: await this.sessions.passwordLink(user.id, a.workspace.id) };
    });
  }

  async changeRole(a: Access, userId: string, role: Role): Promise<void> {
    const member = await this.findMember(a, userId);
    this.mayGrant(a, role);
    this.mayChange(a, member);
    await inTransaction(this.db, async (tx) => {
      if (member.role === 'owner' && role !== 'owner') await this.notLastOwner(a, tx);
      await this.repo.setRole(tx, a.workspace.id, userId, role);
      await this.audit(a, 'member.role', userId, { email: member.email, from: member.role, to: role }, tx);
    });
  }

  async removeMember(a: Access, userId: string): Promise<void> {
    const member = await this.findMember(a, userId);
    this.mayChange(a, member);
    await inTransaction(this.db, async (tx) => {
      if (member.role === 'owner') await this.notLastOwner(a, tx);
      await this.repo.removeMembership(tx, a.workspace.id, userId);
      await this.audit(a, 'member.remove', userId, { email: member.email }, tx);
    });
  }

  /** A new set-password link for a member, only for one who is the workspace's alone (PASSWORD_BINDING). */
  async newLink(a: Access, userId: string): Promise<{ email: string; link: string }> {
    const member = await this.findMember(a, userId);
    this.mayChange(a, member);
    return inTransaction(this.db, async (tx) => {
      const standing = await this.repo.passwordStanding(tx, a.workspace.id, { userId });
      if (!standing?.member) throw notFound();
      if (!mayBeShownLink(standing, a.workspace.id)) {
        throw new PageError(
          403,
          'No link for this person',
          standing.otherWorkspaces > 0
            ? `${member.email} also belongs to another workspace, so an admin here cannot set their password: whoever sets it could act as them there. ` +
                'They sign in with their own password; an operator can set one with `user set-password` (the command line).'
            : `${member.email} already has a password of their own, so an admin here cannot reset it. ` +
                'They sign in with it; if it is lost, an operator can set a new one with `user set-password` (the command line).',
        );
      }
      const link = await this.sessions.passwordLink(userId, a.workspace.id); // joins this transaction
      await this.audit(a, 'member.password_link', userId, { email: member.email }, tx);
      return { email: member.email, link };
    });
  }

  private mayGrant(a: Access, role: Role) {
    if (!roleAtLeast(a.role, role))
      throw new PageError(403, 'Not allowed', `Only an owner can grant the ${role} role.`);
  }

  private mayChange(a: Access, member: MemberView) {
    if (member.role === 'owner' && a.role !== 'owner')
      throw new PageError(403, 'Not allowed', 'Only an owner can change or remove an owner.');
  }

  /** Locks the owners' rows, so two owners demoting each other at once cannot leave none. */
  private async notLastOwner(a: Access, tx: EntityManager) {
    if ((await this.repo.lockOwners(tx, a.workspace.id)) <= 1)
      throw new PageError(
        403,
        'Not allowed',
        'The last owner can be neither demoted nor removed: make someone else an owner first.',
      );
  }

  // --- connected apps -----------------------------------------------------------------------------

  /** The apps a person connected here; for an owner or admin, every app connected to the workspace. */
  async listApps(a: Access) {
    const all = roleAtLeast(a.role, 'admin');
    return this.repo.listApps(currentManager(this.db), a.workspace.id, all ? undefined : a.session.userId);
  }

  async disconnect(a: Access, grantId: string): Promise<void> {
    if (grantId.length > 200) throw notFound();
    const app = (await this.listApps(a)).find((g) => g.grant_id === grantId);
    if (!app) throw notFound();
    // The disconnect and its audit record commit together.
    await this.oauth.revokeGrant(grantId, (tx) =>
      this.audit(a, 'app.disconnect', grantId, { app: app.client_name ?? app.client_id, person: app.email }, tx),
    );
  }

  // --- audit log ----------------------------------------------------------------------------------

  async auditLog(a: Access, filter: { actor?: string; action?: string; page: number }, pageSize = 50) {
    const { rows, actors, actions } = await this.repo.auditLog(currentManager(this.db), a.workspace.id, {
      ...filter,
      limit: pageSize + 1,
      offset: (filter.page - 1) * pageSize,
    });
    return {
      rows: rows.slice(0, pageSize),
      more: rows.length > pageSize,
      actors,
      actions,
    };
  }

  // --- plan and embedding -------------------------------------------------------------------------

  async setPlan(a: Access, plan: Plan): Promise<void> {
    if (plan === a.workspace.plan) return;
    await inTransaction(this.db, async (tx) => {
      await this.repo.setPlan(tx, a.workspace.id, plan);
      await this.audit(a, 'workspace.plan', a.workspace.slug, { from: a.workspace.plan, to: plan }, tx);
    });
  }

  /** Throws ApiError invalid_arguments (with details) for a bad origin; nothing changes then. */
  async setEmbedOrigins(a: Access, origins: string[]): Promise<void> {
    const saved = await this.workspaces.setEmbedOrigins(a.workspace.slug, origins);
    await this.audit(a, 'workspace.embed_origins', a.workspace.slug, { origins: saved.embedOrigins });
  }
}

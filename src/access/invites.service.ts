/**
 * Invitations (issue 47, item 4): single-use links /f/{publicId}?invite=<secret>. A secret is 192
 * random bits, shown once (create_invites) and stored as its SHA-256 only. An invite fixes its
 * hidden values and takes one response: the response is stored and the invite marked answered in
 * ONE transaction, which holds the invite's row (answer(): a conditional UPDATE), so two
 * submissions of one invite at once store one response; the other finds it answered (409
 * invite_used). On a form whose access is "invite", answers come only with an invite.
 */
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash, randomBytes } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../common/access/principal';
import { ApiError, ErrorDetail, pointerSegment } from '../common/errors/api-error';
import { uuidv7 } from '../common/ids';
import { APP_CONFIG, AppConfig } from '../config/config';
import { currentManager, inTransaction } from '../database/transaction';
import { FormRecord, FormsService } from '../forms/forms.service';
import { InviteRow, InvitesRepository } from './invites.repository';

export type { InviteRow } from './invites.repository';

export type InviteState = 'unused' | 'started' | 'completed' | 'expired' | 'revoked';

/** What an invite link carries after ?invite= (anything else is not looked up). */
const SECRET = /^inv_[A-Za-z0-9_-]{32}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const hashOf = (secret: string) => createHash('sha256').update(secret).digest();

export function inviteState(i: InviteRow, now = new Date()): InviteState {
  if (i.completedAt) return 'completed';
  if (i.revokedAt) return 'revoked';
  if (i.expiresAt && i.expiresAt.getTime() <= now.getTime()) return 'expired';
  return i.responseId ? 'started' : 'unused';
}

/** Why an invite takes no answer now, or undefined. */
function refusalOf(i: InviteRow): ApiError | undefined {
  const state = inviteState(i);
  if (state === 'completed') return new ApiError('invite_used');
  if (state === 'revoked') return new ApiError('invite_revoked');
  if (state === 'expired')
    return new ApiError('invite_expired', { message: `This invitation expired at ${i.expiresAt!.toISOString()}.` });
  return undefined;
}

export interface NewInvites {
  count?: number;
  invites?: Array<{ hidden?: Record<string, string>; email?: string }>;
  expiresAt?: string;
}

@Injectable()
export class InvitesService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: InvitesRepository,
    private readonly forms: FormsService,
    private readonly audit: AuditService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  // ---- The tools ----

  /** create_invites: the new invites with their links, which hold the secrets (shown only here). */
  async create(actor: Principal, publicId: string, input: NewInvites) {
    const form = await this.forms.get(actor.workspace.id, publicId);
    const wanted: NonNullable<NewInvites['invites']> =
      input.invites ?? Array.from({ length: input.count ?? 0 }, () => ({}));
    const expiresAt = input.expiresAt === undefined ? null : new Date(input.expiresAt);
    const details: ErrorDetail[] = [];
    if ((input.count === undefined) === (input.invites === undefined))
      details.push({ path: '/count', message: 'give count or invites (one of them)' });
    if (expiresAt && expiresAt.getTime() <= Date.now())
      details.push({ path: '/expiresAt', message: `must be in the future (it is ${expiresAt.toISOString()})` });
    const declared = new Set(form.hiddenFields ?? []);
    wanted.forEach((w, n) => {
      for (const name of Object.keys(w.hidden ?? {}))
        if (!declared.has(name))
          details.push({
            path: `/invites/${n}/hidden/${pointerSegment(name)}`,
            message: `is not a hidden field of this form (it declares: ${[...declared].join(', ') || 'none'})`,
          });
    });
    if (details.length)
      throw new ApiError('invalid_arguments', {
        message: 'Some invitations are not valid.',
        hint: "Give count (1-1000) or invites [{ hidden, email }]; hidden names are the form's hiddenFields (update_form adds them).",
        details,
      });
    const made = wanted.map((w) => ({
      id: uuidv7(),
      secret: `inv_${randomBytes(24).toString('base64url')}`,
      hidden: w.hidden ?? {},
      email: w.email ?? null,
    }));
    return inTransaction(this.db, async (tx) => {
      await this.repo.insertMany(
        tx,
        form.id,
        made.map((m) => ({ ...m, hash: hashOf(m.secret) })),
        expiresAt,
      );
      await this.audit.record(tx, actor, 'invites.create', form.publicId, { count: made.length });
      return {
        expiresAt: expiresAt?.toISOString() ?? null,
        invites: made.map((m) => ({
          id: m.id,
          url: `${this.config.publicUrl}/f/${form.publicId}?invite=${m.secret}`,
        })),
      };
    });
  }

  /** list_invites: a page of the form's invites, oldest first, each with its state. */
  async list(workspaceId: string, publicId: string, limit: number, offset: number) {
    const form = await this.forms.get(workspaceId, publicId);
    const { total, rows } = await this.repo.page(currentManager(this.db), form.id, limit, offset);
    const now = new Date();
    return {
      total,
      invites: rows.map((i) => ({
        id: i.id,
        state: inviteState(i, now),
        email: i.email,
        hidden: i.hidden,
        createdAt: i.createdAt.toISOString(),
        expiresAt: i.expiresAt?.toISOString() ?? null,
        completedAt: i.completedAt?.toISOString() ?? null,
        responseId: i.responseId,
      })),
    };
  }

  /** revoke_invites: ends the given invites (answered or revoked ones stay as they are); which it revoked. */
  async revoke(actor: Principal, publicId: string, ids: string[]) {
    const form = await this.forms.get(actor.workspace.id, publicId);
    return inTransaction(this.db, async (tx) => {
      const wanted = [...new Set(ids)];
      const known = wanted.every((id) => UUID.test(id)) ? await this.repo.existing(tx, form.id, wanted) : new Set();
      const unknown = wanted.filter((id) => !known.has(id));
      if (unknown.length)
        throw new ApiError('not_found', {
          message: `No invitation ${unknown.slice(0, 5).join(', ')} on form ${publicId}; nothing was revoked.`,
          hint: 'list_invites shows the ids of this form’s invitations.',
          details: unknown
            .slice(0, 20)
            .map((id) => ({ path: `/ids/${ids.indexOf(id)}`, message: 'is not an invitation of this form' })),
        });
      const revoked = await this.repo.revoke(tx, form.id, wanted);
      await this.audit.record(tx, actor, 'invites.revoke', form.publicId, { count: revoked.length });
      return { revoked, unchanged: wanted.filter((id) => !revoked.includes(id)) };
    });
  }

  // ---- Submissions (the tools' create_response, the page's JSON and walk) ----

  /**
   * The invite of a link's secret, if it takes an answer to `form` now; else its refusal (another
   * form's or tampered: invite_invalid; expired, revoked, answered). Reads only.
   */
  async bySecret(form: FormRecord, secret: unknown, m = currentManager(this.db)): Promise<InviteRow> {
    if (secret === undefined) throw new ApiError('invite_required');
    const found =
      typeof secret === 'string' && SECRET.test(secret) ? await this.repo.findByHash(m, hashOf(secret)) : undefined;
    if (!found || found.formId !== form.id) throw new ApiError('invite_invalid');
    const why = refusalOf(found);
    if (why) throw why;
    return found;
  }

  /**
   * The walk's invite check on every page post: `inviteId` (from the signed page state) must take an
   * answer now; without one, only a public form goes on. The refusal, or undefined.
   */
  async walkRefusal(form: FormRecord, inviteId: string | undefined): Promise<ApiError | undefined> {
    if (!inviteId) return form.access === 'invite' ? new ApiError('invite_required') : undefined;
    const found = UUID.test(inviteId)
      ? await this.repo.findById(currentManager(this.db), form.id, inviteId)
      : undefined;
    return found ? refusalOf(found) : new ApiError('invite_invalid');
  }

  /** The open invite whose walk saved this partial: a resumed walk goes on with it. */
  async ofPartial(form: FormRecord, responseId: string): Promise<InviteRow | undefined> {
    const found = await this.repo.findByResponse(currentManager(this.db), form.id, responseId);
    return found && !refusalOf(found) ? found : undefined;
  }

  /** The invite's walk saved its first partial: the invite reads as started. */
  async started(inviteId: string, responseId: string): Promise<void> {
    await this.repo.start(currentManager(this.db), inviteId, responseId);
  }

  /**
   * The submission of `secret` (create_response's invite, the page's JSON): in one transaction,
   * the invite is held and checked, `store` stores the response with the invite's hidden values,
   * and the invite is marked answered by it.
   */
  submitWith<T extends { id: string }>(
    form: FormRecord,
    secret: unknown,
    hidden: Record<string, string> | undefined,
    store: (hidden: Record<string, string>) => Promise<T>,
  ): Promise<T> {
    return inTransaction(this.db, async (tx) => {
      const found =
        typeof secret === 'string' && SECRET.test(secret)
          ? await this.repo.findByHash(tx, hashOf(secret), true)
          : undefined;
      if (!found || found.formId !== form.id) throw new ApiError('invite_invalid');
      const why = refusalOf(found);
      if (why) throw why;
      const stored = await store(fixedHidden(hidden, found.hidden));
      await this.answered(tx, found.id, stored.id);
      return stored;
    });
  }

  /**
   * Marks the invite answered by `responseId`, in the caller's transaction (that of the response):
   * a second answer, or an invite revoked or expired meanwhile, refuses the transaction.
   */
  async answered(tx: EntityManager, inviteId: string, responseId: string): Promise<void> {
    if (await this.repo.answer(tx, inviteId, responseId)) return;
    const found = await this.repo.findById(tx, null, inviteId);
    throw (found && refusalOf(found)) ?? new ApiError('invite_invalid');
  }

  /** A partial completing (the page, update_response): the invite it started is answered by it. */
  async completing(tx: EntityManager, formId: string, responseId: string): Promise<void> {
    const found = await this.repo.findByResponse(tx, formId, responseId);
    if (found) await this.answered(tx, found.id, responseId);
  }
}

/**
 * The hidden values of a submission with an invite: the invite's, which the respondent cannot
 * change (400 at the value sent otherwise), and any others it sends.
 */
export function fixedHidden(
  given: Record<string, string> | undefined,
  fixed: Record<string, string>,
): Record<string, string> {
  const changed = Object.keys(fixed).filter((k) => given && Object.hasOwn(given, k) && given[k] !== fixed[k]);
  if (changed.length)
    throw new ApiError('invalid_arguments', {
      message: 'An invitation fixes these hidden values; they cannot be changed.',
      hint: 'Leave them out of hidden: the invitation supplies them.',
      details: changed.map((k) => ({ path: `/hidden/${pointerSegment(k)}`, message: `is fixed by the invitation` })),
    });
  return { ...given, ...fixed };
}

/**
 * Partial responses (issue 36): answers saved before a response is completed.
 *
 * CONTRACT for the respondent page (helper "partial-page"; keep these signatures stable):
 * - save(form, { resumeSecret?, answers, hidden, pagesReached, lastPage, ip? })
 *     `form` is the FormRecord the controller read (FormsService.getPublic). `answers` are in the
 *     format ResponsesService.submit takes (answersFromFormPost / route().answers: by block id,
 *     choices by id or label); `hidden` the state's hidden values; `pagesReached` the pages walked
 *     (PageState.s: '' for the first page, else the page_break id); `lastPage` the page to resume
 *     on. Without resumeSecret (or with one naming no partial of this form: expired, tampered)
 *     a new partial is made and a new secret returned (32 random bytes, base64url, 43 characters;
 *     only its SHA-256 is stored); with a good one, that partial is updated and the same secret
 *     returned. Answers are validated as create_response validates them (types, sizes, logic along
 *     the path: answers to blocks the path does not show are dropped, as on submission), except
 *     that `required` is not enforced: a partial may lack answers to any page, reached or not.
 *     Throws ApiError: 400 invalid_arguments (details per answer, worded for people), 409
 *     response_completed (the secret's response was completed), 409 partial_responses_off (the
 *     form's setting is off), 409 form_not_accepting_responses (not published).
 * - resume(formId, resumeSecret) -> ResumeLookup: the partial (answers as stored: choice ids,
 *     answers to blocks the form no longer has dropped), { kind: 'completed' } (nothing of the
 *     answers), { kind: 'moved' } (the link was opened in another browser, see moveResume: its
 *     answers continue there; nothing of them), or { kind: 'unknown' } (malformed, unknown,
 *     another form's, expired).
 * - moveResume(formId, resumeSecret) -> a new secret for the same partial (the old one then
 *     resumes as 'moved'), or undefined when the secret names no open partial.
 * - complete(form, { resumeSecret, answers, hidden }) -> ResponseView, as submit returns: the full
 *     create_response validation (required included), then the response is stored with the
 *     partial's id, startedAt and lastPage, and the partial deleted, in one transaction; its
 *     response.created webhook fires then. The same errors as save (an unknown secret: 404
 *     not_found, start again), plus what submit throws.
 * - ResponsesService-side numbers for the results pages: countsByStatus(formId), funnel(form).
 */
import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash, randomBytes } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../common/access/principal';
import { ApiError } from '../common/errors/api-error';
import { ERROR_CATALOG } from '../common/errors/error-catalog';
import { uuidv7 } from '../common/ids';
import { SpamResponses, SpamRow } from '../access/spam/spam-responses';
import { APP_CONFIG, AppConfig } from '../config/config';
import { currentManager, inTransaction } from '../database/transaction';
import { AnswerWording, Block } from '../forms/blocks';
import { CheckedResponse, validateResponse } from '../forms/form-logic';
import { FormRecord, FormsService } from '../forms/forms.service';
import { UploadsService } from '../uploads/uploads.service';
import { AccessService } from '../access/access.service';
import { InvitesService } from '../access/invites.service';
import { WebhookOutbox } from '../webhooks/webhook-outbox.service';
import { eventBody, newEventId } from '../webhooks/events';
import { PartialResponsesRepository, PartialRow } from './partial-responses.repository';
import { FunnelStep, pageKeys } from './pages';

export type { FunnelStep } from './pages';
import {
  keyedAsSent,
  notAccepting,
  notFoundResponse,
  partialViewer,
  ResponsesService,
  ResponseView,
  validated,
} from './responses.service';

export interface PartialSnapshot {
  responseId: string;
  formId: string;
  /** Stored answers (choice ids etc.), as the response model keeps them. */
  answers: Record<string, unknown>;
  hidden: Record<string, string>;
  pagesReached: string[];
  lastPage: string;
  startedAt: Date;
  updatedAt: Date;
}

export type ResumeLookup =
  | { kind: 'partial'; partial: PartialSnapshot }
  /** The secret's response was completed: show "already submitted", nothing of the answers. */
  | { kind: 'completed'; responseId: string }
  /**
   * The secret was replaced when its link was opened in another browser (moveResume): its answers
   * go on under another secret (the partial `responseId`), nothing of them is shown here.
   */
  | { kind: 'moved'; responseId: string }
  /** A bad, expired, other form's or tampered secret. */
  | { kind: 'unknown' };

/** A partial as the tools show it: a response with status "partial" (see ResponsesService's views). */
export type PartialView = ResponseView;

/** A resume secret: 32 random bytes, base64url. */
const SECRET = /^[A-Za-z0-9_-]{43}$/;
const hashOf = (secret: string) => createHash('sha256').update(secret).digest();

const SWEEP_EVERY_MS = 10 * 60_000;
const SWEEP_BATCH = 500;

/** The blocks with required off (a partial may lack any answer), kept per blocks array. */
const looseBlocks = new WeakMap<Block[], Block[]>();
function loose(blocks: Block[]): Block[] {
  let l = looseBlocks.get(blocks);
  if (!l) {
    l = blocks.map((b) => (b.required ? { ...b, required: false } : b));
    looseBlocks.set(blocks, l);
  }
  return l;
}

/** Validates a partial's answers: every check of a submission but `required`. */
export function checkPartial(
  form: FormRecord,
  answers: Record<string, unknown>,
  hidden: Record<string, unknown> | undefined,
  source: 'api' | 'web',
): CheckedResponse {
  const wording: AnswerWording = source === 'web' ? 'person' : 'api';
  const checked = validateResponse(
    { blocks: loose(form.blocks), hiddenFields: form.hiddenFields ?? [], compute: form.compute },
    answers,
    hidden,
    { wording, source },
  );
  return validated(checked, wording);
}

export function responseCompleted(responseId: string): ApiError {
  return new ApiError('response_completed', {
    message: `The response "${responseId}" is completed; its answers no longer change.`,
    hint: 'delete_response removes it; create_response stores a new one.',
  });
}

function partialsOff(publicId: string): ApiError {
  return new ApiError('partial_responses_off', {
    message: `The form "${publicId}" does not save partial responses.`,
    hint: 'Turn it on with update_form { "partialResponses": true } (the respondent page then says answers are saved as people go).',
  });
}

@Injectable()
export class PartialResponsesService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('PartialResponses');
  private timer?: NodeJS.Timeout;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: PartialResponsesRepository,
    private readonly forms: FormsService,
    private readonly responses: ResponsesService,
    private readonly uploads: UploadsService,
    private readonly webhooks: WebhookOutbox,
    private readonly audit: AuditService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly access: AccessService,
    private readonly invites: InvitesService,
    private readonly spamKept: SpamResponses,
  ) {}

  onModuleInit() {
    this.timer = setInterval(
      () => void this.sweep().catch((err: Error) => this.logger.warn(`sweep failed: ${err.message}`)),
      SWEEP_EVERY_MS,
    );
    this.timer.unref();
  }

  onModuleDestroy() {
    clearInterval(this.timer);
  }

  // ---- The respondent page (see the contract above) ----

  async save(
    form: FormRecord,
    input: {
      resumeSecret?: string;
      answers: Record<string, unknown>;
      hidden: Record<string, string>;
      pagesReached: string[];
      lastPage: string;
      ip?: string;
      /** The page's client (a keyed hash of its IP): a new partial is bounded per client and per form. */
      client?: Buffer;
    },
  ): Promise<{ responseId: string; resumeSecret: string }> {
    if (!form.partialResponses) throw partialsOff(form.publicId);
    const why = this.access.whyClosed(form, new Date(), 'person');
    if (why) throw why;
    if (form.status !== 'published') throw notAccepting(form.status);
    const keys = new Set(pageKeys(form.blocks));
    const reached = [...new Set(input.pagesReached)].filter((k) => keys.has(k));
    const lastPage = keys.has(input.lastPage)
      ? input.lastPage
      : (reached[reached.length - 1] ?? pageKeys(form.blocks)[0]);
    const given = input.resumeSecret !== undefined && SECRET.test(input.resumeSecret) ? input.resumeSecret : undefined;
    const checked = await this.checkedOrReached(form, input, given, reached);
    /** A new partial under a new secret (none given, or the given one names nothing this save may change). */
    const startPartial = async (m: EntityManager) => {
      if (input.client) await this.withinBounds(m, form.id, input.client);
      const resumeSecret = randomBytes(32).toString('base64url');
      const reachedSoFar = reached.length ? reached : [lastPage];
      const hash = hashOf(resumeSecret);
      const row = await this.insert(m, form, checked, reachedSoFar, lastPage, 'web', hash, input.client);
      return { responseId: row.id, resumeSecret };
    };
    if (!namesFiles(form, checked.answers)) {
      // Without files: one statement each (the save with its counts and its event), no transaction.
      const m = currentManager(this.db);
      if (given) {
        const at = new Date();
        const view = partialViewer(form)({
          id: '',
          formId: form.id,
          answers: checked.answers,
          hidden: checked.hidden,
          pagesReached: reached,
          lastPage,
          source: 'web',
          resumeHash: null,
          startedAt: at,
          updatedAt: at,
        });
        const { id: _id, startedAt: _started, ...rest } = view;
        const row = await this.repo.saveByResume(
          m,
          {
            formId: form.id,
            hash: hashOf(given),
            answers: checked.answers,
            hidden: checked.hidden,
            reached,
            lastPage,
            variables: checked.outcome?.variables,
          },
          at,
          {
            workspaceId: form.workspaceId,
            id: newEventId(),
            form: JSON.stringify({ publicId: form.publicId, title: form.title }),
            response: JSON.stringify(rest),
          },
          new Date(at.getTime() - this.config.partialResponseRetentionDays * 86_400_000),
        );
        if (row) return { responseId: row.id, resumeSecret: given };
        const found = await this.repo.findByResume(m, form.id, hashOf(given));
        if (found.completedId) throw responseCompleted(found.completedId);
      }
      return startPartial(m);
    }
    return inTransaction(this.db, async (tx) => {
      if (given) {
        const found = await this.repo.findByResume(tx, form.id, hashOf(given), true);
        if (found.completedId) throw responseCompleted(found.completedId);
        if (found.partial && !this.expired(found.partial)) {
          await this.change(tx, form, found.partial, checked, reached, lastPage);
          return { responseId: found.partial.id, resumeSecret: given };
        }
      }
      return startPartial(tx);
    });
  }

  /**
   * A page save's answers checked; when they are refused, the partial of `given` (if any) still
   * counts on the pages the person reached (issue 45: the funnel counted them on the page before),
   * its answers unchanged, and the refusal is thrown.
   */
  private async checkedOrReached(
    form: FormRecord,
    input: { answers: Record<string, unknown>; hidden: Record<string, string> },
    given: string | undefined,
    reached: string[],
  ): Promise<CheckedResponse> {
    try {
      return checkPartial(form, input.answers, input.hidden, 'web');
    } catch (err) {
      if (given && err instanceof ApiError && err.code === 'invalid_arguments')
        await this.repo.reachPages(
          currentManager(this.db),
          { formId: form.id, hash: hashOf(given), reached },
          new Date(Date.now() - this.config.partialResponseRetentionDays * 86_400_000),
        );
      throw err;
    }
  }

  async resume(formId: string, resumeSecret: string): Promise<ResumeLookup> {
    if (typeof resumeSecret !== 'string' || !SECRET.test(resumeSecret)) return { kind: 'unknown' };
    const found = await this.repo.findByResume(currentManager(this.db), formId, hashOf(resumeSecret));
    if (found.completedId) return { kind: 'completed', responseId: found.completedId };
    if (!found.partial) {
      const moved = await this.repo.moved(currentManager(this.db), formId, hashOf(resumeSecret));
      if (moved?.completed) return { kind: 'completed', responseId: moved.responseId };
      if (moved?.open) return { kind: 'moved', responseId: moved.responseId };
      return { kind: 'unknown' };
    }
    if (this.expired(found.partial)) return { kind: 'unknown' };
    const p = found.partial;
    // Answers to blocks the form no longer has are dropped (the page validates the rest again).
    const ids = new Set(await this.repo.blockIds(currentManager(this.db), formId));
    const answers = Object.fromEntries(Object.entries(p.answers).filter(([k]) => ids.has(k)));
    return {
      kind: 'partial',
      partial: {
        responseId: p.id,
        formId: p.formId,
        answers,
        hidden: p.hidden,
        pagesReached: p.pagesReached,
        lastPage: p.lastPage,
        startedAt: p.startedAt,
        updatedAt: p.updatedAt,
      },
    };
  }

  /**
   * Link fixation (issue 45, 6.1): a resume link opened in a browser that does not hold its
   * secret gets the partial under a new secret (only its hash stored), and the old secret's hash
   * is kept to say "moved" (or, once submitted, "already submitted"), never to open the answers.
   * So whoever sent the link, or saw it, cannot read what the person enters after opening it.
   * The new secret, or undefined when this one names no open partial (any more).
   */
  async moveResume(
    formId: string,
    resumeSecret: string,
  ): Promise<{ resumeSecret: string; responseId: string } | undefined> {
    if (typeof resumeSecret !== 'string' || !SECRET.test(resumeSecret)) return undefined;
    const next = randomBytes(32).toString('base64url');
    const fresh = new Date(Date.now() - this.config.partialResponseRetentionDays * 86_400_000);
    const id = await this.repo.moveResume(currentManager(this.db), formId, hashOf(resumeSecret), hashOf(next), fresh);
    return id ? { resumeSecret: next, responseId: id } : undefined;
  }

  async complete(
    form: FormRecord,
    input: { resumeSecret: string; answers: Record<string, unknown>; hidden: Record<string, string> },
  ): Promise<ResponseView> {
    if (!SECRET.test(input.resumeSecret ?? '')) throw notFoundPartial();
    return inTransaction(this.db, async (tx) => {
      const locked = await this.forms.getPublic(form.publicId, tx, 'SHARE');
      const why = this.access.whyClosed(locked, new Date(), 'person');
      if (why) throw why;
      if (locked.status !== 'published')
        throw (await this.access.whyFull(locked, 'person')) ?? notAccepting(locked.status);
      const found = await this.repo.findByResume(tx, locked.id, hashOf(input.resumeSecret), true);
      if (found.completedId) throw responseCompleted(found.completedId);
      // An expired partial (not swept yet) is as unknown as it is to resume.
      if (!found.partial || this.expired(found.partial)) throw notFoundPartial();
      return this.finish(tx, locked, found.partial, input.answers, input.hidden, { source: 'web', published: true });
    });
  }

  // ---- The tools ----

  /** create_response { partial: true }: a partial made over the tools (no resume secret). */
  async createAs(
    actor: Principal,
    publicId: string,
    answers: Record<string, unknown>,
    hidden?: Record<string, string>,
  ): Promise<PartialView> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.forms.lock(tx, actor.workspace.id, publicId, 'SHARE');
      if (!form.partialResponses) throw partialsOff(publicId);
      const why = this.access.whyClosed(form);
      if (why) throw why;
      const checked = checkPartial(form, answers, hidden, 'api');
      const reached = reachedBy(form, checked);
      const row = await this.insert(tx, form, checked, reached, reached[reached.length - 1], 'api', null);
      await this.audit.record(tx, actor, 'response.create', row.id, { form: publicId, partial: true });
      return keyedAsSent(form.blocks, answers)(partialViewer(form)(row));
    });
  }

  /**
   * update_response: changes a partial's answers (and hidden values, when given): only the answers
   * sent change, null clears one, the others stay as stored (issue 45: it replaced them all); the
   * result is checked as a whole against the form as it is now. With `complete`, completes it (the
   * full validation of create_response; its refusal says which answers are stored and which are
   * missing). A completed response: 409.
   */
  async updateAs(
    actor: Principal,
    publicId: string,
    responseId: string,
    input: { answers: Record<string, unknown>; hidden?: Record<string, string>; complete?: boolean },
  ): Promise<ResponseView> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.forms.lock(tx, actor.workspace.id, publicId, 'SHARE');
      // Its schedule (issue 47): a partial is not changed nor completed outside it.
      const why = this.access.whyClosed(form);
      if (why) throw why;
      const row = UUID.test(responseId) ? await this.repo.find(tx, form.id, responseId, true) : undefined;
      if (!row) {
        const spam = UUID.test(responseId) ? await this.spamKept.find(tx, form.id, responseId) : undefined;
        if (spam) return this.restoreSpam(tx, actor, form, spam, input, publicId);
        if (UUID.test(responseId) && (await this.responses.exists(tx, form.id, responseId)))
          throw responseCompleted(responseId);
        throw notFoundResponse(publicId, responseId);
      }
      const hidden = input.hidden ?? row.hidden;
      const answers = mergedAnswers(form, row.answers, input.answers);
      if (input.complete) {
        try {
          const how = { source: 'api' as const, actor, sent: input.answers };
          return await this.finish(tx, form, row, answers, hidden, how, publicId);
        } catch (err) {
          throw withStoredAndMissing(err, form, answers);
        }
      }
      const checked = checkPartial(form, answers, hidden, 'api');
      const reached = reachedBy(form, checked);
      const changed = await this.change(tx, form, row, checked, reached, reached[reached.length - 1]);
      await this.audit.record(tx, actor, 'response.update', row.id, { form: publicId });
      return keyedAsSent(form.blocks, input.answers)(partialViewer(form)(changed));
    });
  }

  /**
   * update_response on a post judged as spam (issue 47): with complete, it becomes a response
   * with its id (the answers sent merged in, validated in full, as a completion is): from then on
   * it counts everywhere and its response.created event is sent. Without complete, refused: a spam
   * post has nothing to save in between.
   */
  private async restoreSpam(
    tx: EntityManager,
    actor: Principal,
    form: FormRecord,
    spam: SpamRow,
    input: { answers: Record<string, unknown>; hidden?: Record<string, string>; complete?: boolean },
    publicId: string,
  ): Promise<ResponseView> {
    if (!input.complete)
      throw new ApiError('invalid_arguments', {
        message: 'This response was judged as spam: update_response restores it with complete: true.',
        hint: 'Send complete: true (with any answers to change) to keep it as a completed response, or delete_response.',
        details: [{ path: '/complete', message: 'must be true to restore a spam response' }],
      });
    const answers = mergedAnswers(form, spam.answers, input.answers);
    const hidden = input.hidden ?? spam.hidden;
    let checked: CheckedResponse;
    try {
      checked = validated(validateResponse(form, answers, hidden, { wording: 'api', source: 'web' }), 'api');
    } catch (err) {
      throw withStoredAndMissing(err, form, answers);
    }
    await this.spamKept.remove(tx, form.id, spam.id);
    const view = await this.responses.insertChecked(
      tx,
      form,
      checked,
      { source: 'web', actor, publicId, sent: input.answers },
      { id: spam.id, startedAt: spam.receivedAt, lastPage: '', resumeHash: null },
    );
    if (!view) throw new Error(`form ${form.id} changed under its lock`);
    await this.responses.attachFiles(tx, form, view.id, answers, checked.answers);
    return view;
  }

  /**
   * Deletes partials not updated for PARTIAL_RESPONSE_RETENTION_DAYS (with their uploads), in
   * batches of SWEEP_BATCH, each its own short transaction that skips rows a save holds: a sweep
   * never waits for a submission nor holds one up. Returns how many went.
   */
  async sweep(now = new Date()): Promise<number> {
    const before = new Date(now.getTime() - this.config.partialResponseRetentionDays * 86_400_000);
    let total = 0;
    for (;;) {
      const n = await inTransaction(this.db, async (tx) => {
        const rows = await this.repo.expired(tx, before, SWEEP_BATCH);
        const byForm = new Map<string, string[]>();
        for (const r of rows) byForm.set(r.formId, [...(byForm.get(r.formId) ?? []), r.id]);
        // Their answers leave the delivery log (response.partial_saved) as a deleted response's do.
        for (const r of rows) await this.webhooks.forgetAnswers(tx, r.workspaceId, { responseId: r.id });
        for (const [formId, ids] of byForm) {
          await this.uploads.deleteForResponses(tx, ids);
          await this.repo.delete(tx, formId, ids);
        }
        return rows.length;
      });
      total += n;
      if (n < SWEEP_BATCH) {
        // The old links' moves are kept as long as a partial not updated.
        await this.repo.forgetMoves(currentManager(this.db), before);
        return total;
      }
    }
  }

  /** { completed, partial } of a form (for the results pages): see ResponsesService.countsByStatus. */
  countsByStatus(formId: string): Promise<{ completed: number; partial: number }> {
    return this.responses.countsByStatus(formId);
  }

  /** The drop-off per page (for the results pages): see ResponsesService.funnel. */
  funnel(form: FormRecord): Promise<FunnelStep[]> {
    return this.responses.funnel(form);
  }

  // ---- Internals ----

  private expired(p: PartialRow): boolean {
    return Date.now() - p.updatedAt.getTime() > this.config.partialResponseRetentionDays * 86_400_000;
  }

  /**
   * The respondent page's bound on open partials (issue 45, 6.6): per client (its keyed IP hash,
   * every form) and per form (config anonymousLimits), counted in the database. Past one: 429
   * pending_limit_reached, nothing stored.
   */
  private async withinBounds(m: EntityManager, formId: string, client: Buffer): Promise<void> {
    const limits = this.config.anonymousLimits;
    const open = await this.repo.openTotals(m, formId, client);
    const over =
      open.client + 1 > limits.partialsPerIp
        ? 'from your network'
        : open.form + 1 > limits.partialsPerForm
          ? 'for this form'
          : undefined;
    if (over)
      throw new ApiError('pending_limit_reached', {
        message: `Too many answers are in progress ${over}: these answers were not saved for later.`,
        hint: 'Submit or finish answers in progress, or try again later.',
      });
  }

  private async insert(
    tx: EntityManager,
    form: FormRecord,
    checked: CheckedResponse,
    reached: string[],
    lastPage: string,
    source: 'api' | 'web',
    resumeHash: Buffer | null,
    clientHash?: Buffer,
  ): Promise<PartialRow> {
    const at = new Date();
    const p = {
      id: uuidv7(),
      formId: form.id,
      answers: checked.answers,
      hidden: checked.hidden,
      pagesReached: reached,
      lastPage,
      source,
      resumeHash,
    };
    // Its response.partial_saved event, written by the insert itself (for subscribed endpoints only).
    const body = eventBody(
      'response.partial_saved',
      {
        form: { publicId: form.publicId, title: form.title },
        response: { ...partialViewer(form)({ ...p, startedAt: at, updatedAt: at }), pagesReached: reached },
      },
      { at },
    );
    const row = await this.repo.insert(tx, { ...p, clientHash, variables: checked.outcome?.variables }, at, {
      workspaceId: form.workspaceId,
      id: newEventId(),
      body,
    });
    if (namesFiles(form, checked.answers)) await this.holdFiles(tx, form, row.id, checked.answers);
    return row;
  }

  /** Updates a locked partial: its answers, pages reached (they only grow) and last page. */
  private async change(
    tx: EntityManager,
    form: FormRecord,
    row: PartialRow,
    checked: CheckedResponse,
    reached: string[],
    lastPage: string,
  ): Promise<PartialRow> {
    const known = new Set(row.pagesReached);
    const added = reached.filter((p) => !known.has(p));
    const changed = await this.repo.update(
      tx,
      {
        ...row,
        answers: checked.answers,
        hidden: checked.hidden,
        pagesReached: [...row.pagesReached, ...added],
        lastPage,
        variables: checked.outcome?.variables,
      },
      added,
    );
    await this.holdFiles(tx, form, row.id, checked.answers);
    if (added.length) await this.partialSaved(tx, form, changed, added);
    return changed;
  }

  /** Completes a locked partial: validated in full, stored as a response with its id, the partial deleted. */
  private async finish(
    tx: EntityManager,
    form: FormRecord,
    row: PartialRow,
    answers: Record<string, unknown>,
    hidden: Record<string, string>,
    how: { source: 'api' | 'web'; actor?: Principal; published?: boolean; sent?: Record<string, unknown> },
    publicId = form.publicId,
  ): Promise<ResponseView> {
    const wording: AnswerWording = how.source === 'web' ? 'person' : 'api';
    const checked = validated(validateResponse(form, answers, hidden, { wording, source: how.source }), wording);
    // The invitation whose walk saved it (issue 47) is answered by it, or refuses it.
    await this.invites.completing(tx, form.id, row.id);
    // Its uploads leave the partial first (a file kept is taken again, checked, by the response).
    await this.repo.releaseUploads(tx, row.id);
    await this.repo.delete(tx, form.id, [row.id]);
    const view = await this.responses.insertChecked(
      tx,
      form,
      checked,
      { ...how, publicId },
      {
        id: row.id,
        startedAt: row.startedAt,
        lastPage: row.lastPage,
        resumeHash: row.resumeHash,
      },
    );
    if (!view) throw new Error(`form ${form.id} changed under its lock`);
    await this.responses.attachFiles(tx, form, view.id, answers, checked.answers);
    return view;
  }

  /** The partial's file answers: uploads it names are checked and held by it; ones it no longer names are let go. */
  private async holdFiles(tx: EntityManager, form: FormRecord, id: string, answers: Record<string, unknown>) {
    await this.repo.releaseUploads(tx, id);
    await this.responses.attachFiles(tx, form, id, answers, answers);
  }

  /** response.partial_saved, for the endpoints subscribed to it by name: once per page newly reached. */
  private async partialSaved(tx: EntityManager, form: FormRecord, row: PartialRow, added: string[]) {
    if (!added.length) return;
    await this.webhooks.emit(tx, form.workspaceId, 'response.partial_saved', async () => ({
      form: { publicId: form.publicId, title: form.title },
      response: { ...partialViewer(form)(row), pagesReached: row.pagesReached },
    }));
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function notFoundPartial(): ApiError {
  return new ApiError('not_found', {
    message: 'No answers in progress with this link.',
    hint: 'Links to answers in progress expire when unused; start the form again.',
  });
}

/**
 * A partial's stored answers (by block id; those to blocks the form no longer has left out) with
 * the answers sent (by id or ref) over them: a block sent replaces its stored answer, null clears it.
 */
export function mergedAnswers(
  form: FormRecord,
  stored: Record<string, unknown>,
  sent: Record<string, unknown>,
): Record<string, unknown> {
  const byRef = new Map(form.blocks.filter((b) => b.ref).map((b) => [b.ref!, b.id]));
  const ids = new Set(form.blocks.map((b) => b.id));
  const merged: Record<string, unknown> = Object.fromEntries(Object.entries(stored).filter(([k]) => ids.has(k)));
  for (const [key, value] of Object.entries(sent)) {
    const id = ids.has(key) ? key : (byRef.get(key) ?? key);
    delete merged[id];
    if (value !== null) merged[key] = value;
  }
  return merged;
}

/**
 * update_response's refusal to complete, with which answers are stored and which are missing (by
 * ref, else id) in its hint: an agent that sent only the new answers sees what the partial holds.
 */
function withStoredAndMissing(err: unknown, form: FormRecord, answers: Record<string, unknown>): unknown {
  if (!(err instanceof ApiError) || err.code !== 'invalid_arguments' || !err.details?.length) return err;
  const name = new Map(form.blocks.map((b) => [b.id, b.ref ?? b.id]));
  const idOf = new Map(
    form.blocks.flatMap((b) => (b.ref ? [[b.ref, b.id] as const, [b.id, b.id] as const] : [[b.id, b.id] as const])),
  );
  const id = (k: string) => idOf.get(k) ?? k;
  const held = new Set(Object.keys(answers).map(id));
  const stored = form.blocks.filter((b) => held.has(b.id)).map((b) => b.ref ?? b.id); // in the form's order
  const missing = err.details
    .map((d) => /^\/answers\/([^/]+)$/.exec(d.path)?.[1])
    .filter((k): k is string => k !== undefined && !held.has(id(k)))
    .map((k) => name.get(id(k)) ?? k);
  if (!missing.length) return err;
  // A hint of its own (a rule that hides an answer sent) is kept; the catalog's says nothing more.
  const own = err.hint !== ERROR_CATALOG.invalid_arguments.hint ? err.hint : undefined;
  return new ApiError('invalid_arguments', {
    message: err.message,
    hint: `${own ? `${own} ` : ''}Stored: ${stored.join(', ') || 'none'}. Missing: ${missing.join(', ')}. Send only the missing answers: the stored ones are kept.`,
    details: err.details,
  });
}

/** Whether the answers name files (their uploads are then checked and held in a transaction). */
function namesFiles(form: FormRecord, answers: Record<string, unknown>): boolean {
  return form.blocks.some((b) => b.type === 'file_upload' && Object.hasOwn(answers, b.id));
}

/** The pages a tools' partial reached: those on its path up to the last one its answers reach (the first at least). */
function reachedBy(form: FormRecord, checked: CheckedResponse): string[] {
  const keys = pageKeys(form.blocks);
  const shown = checked.shown ? new Set(checked.shown) : undefined;
  const onPath = keys.filter((k) => k === '' || !shown || shown.has(k));
  let page = keys[0];
  let last = 0;
  for (const b of form.blocks) {
    if (b.type === 'page_break') page = b.id;
    else if (Object.hasOwn(checked.answers, b.id)) last = Math.max(last, onPath.indexOf(page));
  }
  return onPath.slice(0, last + 1);
}

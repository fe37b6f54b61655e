import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../common/access/principal';
import { ApiError, ErrorDetail } from '../common/errors/api-error';
import { APP_CONFIG, AppConfig } from '../config/config';
import { newBlockId, newChoiceId, newFormPublicId } from '../common/ids';
import { currentManager, inTransaction } from '../database/transaction';
import { servedAsIs } from '../common/http/served-as-is';
import { IdempotencyService } from '../idempotency/idempotency.service';
import { AnswerLossCandidate, computeLossCandidates, describeLoss, lossCandidates } from './answer-loss';
import { Block, BlockInput } from './blocks';
import {
  blocksView,
  checkHiddenFields,
  checkHiddenStillNamed,
  ComputeInput,
  formVariables,
  normalizeForm,
} from './form-logic';
import { maxScore, isQuiz } from './compute';
import { FormAccess, FormStatus, ReceiptSetting } from './entities/form.entity';
import { checkReceipt, storedReceipt } from './receipt';
import { FormAnswers } from './form-answers';
import { formWarnings } from './form-warnings';
import { FormVersionReads } from './form-version-reads';
import { FormListItem, FormRecord, FormsRepository } from './forms.repository';
import { UploadsService } from '../uploads/uploads.service';
import { WebhookOutbox } from '../webhooks/webhook-outbox.service';
import { checkSchedule, closedBySchedule, timeOf } from './schedule';
import { checkQuotas, invalidQuotas } from './limits';
import {
  canonicalTag,
  checkLanguages,
  checkTranslation,
  pruneTranslations,
  textKeys,
  translate,
} from './translations/translations';

export interface FormInput {
  title: string;
  description?: string | null;
  blocks?: BlockInput[];
  /** Names of the form's hidden fields (issue 25). */
  hiddenFields?: string[];
  /** Save answers as partial responses as people go (issue 36). */
  partialResponses?: boolean;
  /** Variables, endings, thank-you texts (issue 46). */
  variables?: ComputeInput['variables'];
  endings?: ComputeInput['endings'];
  thankYou?: ComputeInput['thankYou'];
  /** The schedule (issue 47): ISO 8601 times; null or omitted: none. */
  opensAt?: string | null;
  closesAt?: string | null;
  /** Who may answer (issue 47): 'public' (default) or 'invite'. */
  access?: FormAccess;
  /** The cap and quotas (issue 47): null or omitted: none. */
  maxResponses?: number | null;
  quotas?: QuotaInput[];
  /** The page's spam defence (issue 47); omitted: auto (create), kept (update). */
  spamProtection?: 'off' | 'auto' | 'always';
  /** The receipt to the respondent (issue 48); null or omitted: none. */
  receipt?: ReceiptSetting | null;
  /** Its languages (issue 51): BCP 47 tags, the first the default. */
  languages?: string[];
  /** Check only (create_form's dryRun): see FormsService.createDryRun. */
  dryRun?: boolean;
}

/** A quota as sent: `when` by id or ref (see forms/limits.ts). */
export type QuotaInput = { name: string; limit: number; when: unknown; onFull?: string };

export interface FormUpdate {
  publicId: string;
  /** The version the caller read; a stale one is refused with 409 version_conflict. */
  ifVersion?: number;
  /** The older name of ifVersion. */
  version?: number;
  /** Check only: the form as it would be stored, warnings and the answer-loss report; nothing stored. */
  dryRun?: boolean;
  title?: string;
  description?: string | null;
  /** The whole new block list; a block (or choice) keeps its answers by keeping its id. */
  blocks?: BlockInput[];
  /** The whole new list of hidden fields; omitted: kept. */
  hiddenFields?: string[];
  partialResponses?: boolean;
  /** The schedule (issue 47): omitted: kept; null: cleared. */
  opensAt?: string | null;
  closesAt?: string | null;
  /** Omitted: kept. */
  access?: FormAccess;
  /** The cap and quotas (issue 47): omitted: kept; null / []: cleared. */
  maxResponses?: number | null;
  quotas?: QuotaInput[];
  /** With a cap below the responses stored: keep it, and the form closes now. */
  closeNow?: boolean;
  /** The page's spam defence (issue 47); omitted: auto (create), kept (update). */
  spamProtection?: 'off' | 'auto' | 'always';
  /** The receipt to the respondent (issue 48): omitted: kept; null: none. */
  receipt?: ReceiptSetting | null;
  acceptAnswerLoss?: boolean;
  /** The whole new list of languages (issue 51); omitted: kept. Translations of languages left out are dropped. */
  languages?: string[];
  /** Each omitted: kept (issue 46). */
  variables?: ComputeInput['variables'];
  endings?: ComputeInput['endings'];
  thankYou?: ComputeInput['thankYou'];
}

export type { FormRecord } from './forms.repository';

/** Forms an instance keeps for submissions (see FormsService.recent). */
const RECENT_FORMS = 1000;

export function notFoundForm(publicId: string): ApiError {
  return new ApiError('not_found', {
    message: `No form with the publicId "${publicId}" in this workspace.`,
    hint: 'list_forms shows the forms of the workspace this credential acts on.',
  });
}

/**
 * The rules of forms: reading (with a cache of recent reads for submissions), creating, editing
 * (versions, answer loss), publishing, closing and deleting, each write with its audit record and
 * webhook event in one transaction. The SQL is in FormsRepository; answers are reached through
 * FormAnswers.
 */
@Injectable()
export class FormsService {
  /** The forms this instance read last, by publicId, most recent last (see recent()). */
  private readonly recentForms = new Map<string, FormRecord>();
  /** get_form's answers, by form id, with the version each is of, most recent last (see getView()). */
  private readonly formViews = new Map<string, { version: number; view: Record<string, unknown>; until?: number }>();

  /**
   * Closes a form its closesAt has passed, with its event (issue 47): set by the AccessService,
   * which builds on forms/, so that get_form stores the close it shows.
   */
  dueCloser?: (formId: string) => Promise<unknown>;

  /**
   * Writes a form's limit counters after a change of its cap, quotas or blocks, in the changing
   * transaction (issue 47): set by the AccessService, which counts them (and refuses a cap sent
   * below the responses stored unless `closeNow`).
   */
  limitsKeeper?: (tx: EntityManager, form: FormRecord, how: { closeNow: boolean; capSent: boolean }) => Promise<void>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: FormsRepository,
    private readonly versions: FormVersionReads,
    private readonly answers: FormAnswers,
    private readonly audit: AuditService,
    private readonly idempotency: IdempotencyService,
    private readonly webhooks: WebhookOutbox,
    private readonly uploads: UploadsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** A form as the tools answer it: formView with its share link, `url` (PUBLIC_URL/f/{publicId}). */
  view(f: FormRecord, withBlocks: true): Record<string, unknown> & { blocks: unknown[] };
  view(f: FormRecord, withBlocks?: false): Record<string, unknown>;
  view(f: FormRecord, withBlocks = false) {
    return formView(f, withBlocks as true, this.config.publicUrl);
  }

  /** A form of the workspace, or 404 (another workspace's form is not found either). */
  async get(
    workspaceId: string,
    publicId: string,
    manager: EntityManager = currentManager(this.db),
    lock?: 'UPDATE' | 'SHARE',
  ): Promise<FormRecord> {
    const form = await this.repo.find(manager, { workspaceId, publicId }, lock);
    if (!form) throw notFoundForm(publicId);
    return this.remember(form, manager, lock);
  }

  /**
   * get_form's answer: the form's view with its blocks (view()), made once per version and served
   * as it is (its JSON made once too: servedAsIs) while the form stays at that version. Every change
   * of a form bumps its version in the transaction that makes it (edits, publish, close), so a
   * committed version's view never changes; each call reads the row's id and version, fresh (with
   * the calls waiting at the same time: FormVersionReads), so an edit on any instance shows at
   * once. Inside a transaction the form is read and viewed in full.
   */
  async getView(workspaceId: string, publicId: string): Promise<Record<string, unknown>> {
    const manager = currentManager(this.db);
    if (manager.queryRunner) return this.view(await this.get(workspaceId, publicId, manager), true);
    const current = await this.versions.read({ workspaceId, publicId });
    if (!current) throw notFoundForm(publicId);
    const kept = this.formViews.get(current.id);
    // A published form's view lasts until its closesAt: from then on it reads as closed (issue 47).
    if (kept?.version === current.version && !(kept.until! <= Date.now())) return kept.view;
    let form = await this.get(workspaceId, publicId, manager);
    if (form.closeDue && this.dueCloser) {
      await this.dueCloser(form.id);
      form = await this.get(workspaceId, publicId, manager);
    }
    const view = servedAsIs(this.view(form, true));
    const until = form.status === 'published' ? form.closesAt?.getTime() : undefined;
    this.formViews.delete(form.id);
    this.formViews.set(form.id, { version: form.version, view, until });
    if (this.formViews.size > RECENT_FORMS) this.formViews.delete(this.formViews.keys().next().value!);
    return view;
  }

  /** A form by its public id alone, for the respondent page (no credential, so no workspace). */
  async getPublic(
    publicId: string,
    manager: EntityManager = currentManager(this.db),
    lock?: 'SHARE',
  ): Promise<FormRecord> {
    const form = await this.repo.find(manager, { publicId }, lock);
    if (!form)
      throw new ApiError('not_found', { message: `No form "${publicId}".`, hint: 'Check the link you were given.' });
    return this.remember(form, manager, lock);
  }

  /**
   * The form as this instance last read it, if it did lately: submissions validate against it and
   * store only if the form is still at that version under its lock (ResponsesRepository.insertMany), so an
   * outdated copy costs them a second try (reading the form), never a wrong answer.
   */
  recent(publicId: string): FormRecord | undefined {
    const form = this.recentForms.get(publicId);
    if (form) {
      this.recentForms.delete(publicId);
      this.recentForms.set(publicId, form);
    }
    return form;
  }

  /**
   * Keeps a form read as committed: outside a transaction, or share-locked (only submissions and
   * deletes of responses share-lock, and they do not change the form). A form read in the
   * transaction that changes it is not kept: that transaction may still roll back, and another
   * change then commit the same version with other blocks.
   */
  private remember(form: FormRecord, manager: EntityManager, lock?: 'UPDATE' | 'SHARE'): FormRecord {
    if (manager.queryRunner && lock !== 'SHARE') return form; // read inside a transaction
    this.recentForms.delete(form.publicId);
    this.recentForms.set(form.publicId, form);
    if (this.recentForms.size > RECENT_FORMS) this.recentForms.delete(this.recentForms.keys().next().value!);
    return form;
  }

  async list(
    workspaceId: string,
    opts: { limit: number; offset: number; status?: FormStatus },
  ): Promise<{ total: number; forms: FormListItem[] }> {
    return this.repo.list(currentManager(this.db), workspaceId, opts);
  }

  /**
   * Creates a form with its blocks (validated; details name each bad block and field); `createdAt`
   * backdates it (the demo's history), else it is created now.
   */
  async create(workspaceId: string, input: FormInput, manager?: EntityManager, createdAt?: Date): Promise<FormRecord> {
    const { hiddenFields, checked, schedule, quotas, languages } = checkNewForm(input);
    const form = {
      title: input.title,
      description: input.description ?? null,
      hiddenFields,
      compute: checked.compute,
      blocks: checked.blocks,
      ...schedule,
      ...newFormSettings(input, quotas),
      languages,
      translations: {},
    };
    const run = (tx: EntityManager) => this.insertForm(tx, workspaceId, form, createdAt);
    return manager ? run(manager) : inTransaction(this.db, run);
  }

  /** Stores a new form, checked, with its blocks and settings, in `tx`; the form as read back. */
  private async insertForm(
    tx: EntityManager,
    workspaceId: string,
    form: Pick<
      FormRecord,
      | 'title'
      | 'description'
      | 'hiddenFields'
      | 'compute'
      | 'blocks'
      | 'partialResponses'
      | 'opensAt'
      | 'closesAt'
      | 'access'
      | 'spamProtection'
      | 'maxResponses'
      | 'quotas'
      | 'receipt'
      | 'languages'
      | 'translations'
    >,
    createdAt?: Date,
  ): Promise<FormRecord> {
    const publicId = newFormPublicId();
    const { title, description, hiddenFields, compute } = form;
    const id = await this.repo.insert(
      tx,
      { publicId, workspaceId, title, description, hiddenFields, compute },
      createdAt,
    );
    await this.repo.insertBlocks(tx, id, form.blocks);
    if (form.partialResponses) await this.repo.setPartialResponses(tx, id, true);
    if (form.opensAt || form.closesAt) await this.repo.setSchedule(tx, id, form.opensAt, form.closesAt);
    if (form.access === 'invite') await this.repo.setAccess(tx, id, 'invite');
    if (form.spamProtection !== 'auto') await this.repo.setSpamProtection(tx, id, form.spamProtection);
    if (form.receipt) await this.repo.setReceipt(tx, id, form.receipt);
    // Translations naming what the new form has not (a copy's blocks have new ids) are left out.
    if (form.languages?.length)
      await this.repo.setTranslations(tx, id, form.languages, pruneTranslations(form).translations);
    await this.answers.formCreated(tx, id);
    if (form.maxResponses != null || form.quotas?.length) {
      await this.repo.setLimits(tx, id, form.maxResponses, form.quotas);
      await this.limitsKeeper?.(tx, await this.get(workspaceId, publicId, tx), { closeNow: false, capSent: true });
    }
    return this.get(workspaceId, publicId, tx);
  }

  /**
   * duplicate_form: a draft copy of a form, its blocks, logic and settings (hidden fields, partial
   * responses, variables, endings, thank-you texts) with new ids for the form, its blocks and
   * choices, its rules pointing to the copies; not its schedule, responses or files.
   */
  async duplicateAs(actor: Principal, publicId: string, title?: string): Promise<FormRecord> {
    return inTransaction(this.db, async (tx) => {
      const source = await this.get(actor.workspace.id, publicId, tx);
      const { blocks, compute, quotas } = withNewIds(source.blocks, source.compute, source.quotas);
      const form = await this.insertForm(tx, actor.workspace.id, {
        ...source,
        title: title ?? `${source.title} (copy)`,
        blocks,
        compute,
        quotas,
        opensAt: null,
        closesAt: null,
      });
      await this.audit.record(tx, actor, 'form.create', form.publicId, {
        version: form.version,
        duplicateOf: publicId,
      });
      await this.webhooks.emit(tx, actor.workspace.id, 'form.created', this.view(form, true));
      return form;
    });
  }

  /**
   * create_form's dry run: the form as create would store it (its publicId and ids are made anew
   * by the real call), its warnings; the same 400 for what create refuses. Nothing is written.
   */
  createDryRun(workspaceId: string, input: FormInput): DryRunView {
    const { hiddenFields, checked, schedule, quotas, languages } = checkNewForm(input);
    const now = new Date();
    const form: FormRecord = {
      id: '',
      publicId: newFormPublicId(),
      workspaceId,
      title: input.title,
      description: input.description ?? null,
      status: 'draft',
      hiddenFields,
      version: 1,
      createdAt: now,
      updatedAt: now,
      publishedAt: null,
      closedAt: null,
      ...schedule,
      ...newFormSettings(input, quotas),
      compute: checked.compute,
      blocks: checked.blocks,
      languages,
      translations: {},
    };
    return this.dryRunView(form, []);
  }

  private dryRunView(form: FormRecord, answerLoss: ErrorDetail[]): DryRunView {
    return { ...this.view(form, true), dryRun: { warnings: formWarnings(form.blocks, form.compute), answerLoss } };
  }

  /** create_form: the form and its audit record in one transaction. */
  async createAs(actor: Principal, input: FormInput): Promise<FormRecord> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.create(actor.workspace.id, input, tx);
      await this.audit.record(tx, actor, 'form.create', form.publicId, { version: form.version });
      await this.webhooks.emit(tx, actor.workspace.id, 'form.created', this.view(form, true));
      return form;
    });
  }

  /**
   * update_form. The form row is locked for the transaction, so concurrent edits are serialised
   * and a second edit sent with the version both callers read gets 409 version_conflict. An update
   * that changes nothing (the form would read the same) stores nothing and keeps the version. A dry
   * run answers the form as it would be stored, with its warnings and the answers it would discard,
   * and writes nothing.
   */
  update(actor: Principal, input: FormUpdate & { dryRun: true }): Promise<DryRunView>;
  update(actor: Principal, input: FormUpdate): Promise<FormRecord>;
  async update(actor: Principal, input: FormUpdate): Promise<FormRecord | DryRunView> {
    return inTransaction(this.db, async (tx) => {
      const form = input.dryRun
        ? await this.get(actor.workspace.id, input.publicId, tx)
        : await this.lock(tx, actor.workspace.id, input.publicId);
      const expected = input.ifVersion ?? input.version;
      if (expected !== undefined && expected !== form.version) {
        throw new ApiError('version_conflict', {
          message: `The form is at version ${form.version}; this update was made from version ${expected}.`,
          hint: 'Read the form again with get_form, apply your change to it, and send its version as ifVersion.',
          details: [
            {
              path: input.ifVersion !== undefined ? '/ifVersion' : '/version',
              message: `the form is at version ${form.version}`,
            },
          ],
        });
      }
      const plan = await this.planUpdate(tx, form, input);
      if (input.dryRun) {
        const answerLoss = plan.losses.map(({ candidate, answers }) => ({
          path: candidate.path,
          message: describeLoss(candidate, answers),
        }));
        return this.dryRunView({ ...plan.next, version: form.version + (plan.changed ? 1 : 0) }, answerLoss);
      }
      if (!plan.changed) return form;
      const discarded = await this.handleAnswerLoss(tx, form, plan.losses, input.acceptAnswerLoss === true);
      const next = plan.next;
      if (plan.blocksChanged) {
        await this.repo.replaceBlocks(tx, form.id, next.blocks);
        await this.repo.setCompute(tx, form.id, next.compute);
      }
      await this.repo.updateContent(tx, form.id, next.title, next.description, next.hiddenFields);
      if (input.partialResponses !== undefined)
        await this.repo.setPartialResponses(tx, form.id, input.partialResponses);
      if (input.opensAt !== undefined || input.closesAt !== undefined)
        await this.repo.setSchedule(tx, form.id, next.opensAt, next.closesAt);
      if (input.access !== undefined) await this.repo.setAccess(tx, form.id, input.access);
      await this.updateLimits(tx, form, input);
      if (input.spamProtection) await this.repo.setSpamProtection(tx, form.id, input.spamProtection);
      if (input.receipt !== undefined) await this.repo.setReceipt(tx, form.id, next.receipt);
      if (input.languages !== undefined || plan.blocksChanged)
        await this.repo.setTranslations(tx, form.id, next.languages, next.translations);
      await this.audit.record(tx, actor, 'form.update', form.publicId, {
        version: form.version + 1,
        ...(discarded ? { answersDiscarded: discarded } : {}),
      });
      const updated = await this.get(actor.workspace.id, form.publicId, tx);
      await this.webhooks.emit(tx, actor.workspace.id, 'form.updated', this.view(updated, true));
      return updated;
    });
  }

  /**
   * The cap and quotas of an update (issue 47): those sent, else the form's, checked against the
   * form as updated (a quota naming a block the update removes is refused at its path); the
   * counters are written again when they or the blocks changed.
   */
  private async updateLimits(tx: EntityManager, before: FormRecord, input: FormUpdate): Promise<void> {
    const limitsSent = input.maxResponses !== undefined || input.quotas !== undefined;
    // New blocks change what the quotas count (answers discarded), not the cap.
    if (!limitsSent && !input.closeNow && !(input.blocks && before.quotas?.length)) return;
    const form = await this.get(before.workspaceId, before.publicId, tx);
    const maxResponses = input.maxResponses !== undefined ? input.maxResponses : form.maxResponses;
    const sent = input.quotas ?? form.quotas ?? [];
    const checked = checkQuotas(form, sent);
    if (checked.details.length) throw invalidQuotas(checked.details);
    if (limitsSent) await this.repo.setLimits(tx, form.id, maxResponses, checked.quotas);
    await this.limitsKeeper?.(
      tx,
      { ...form, maxResponses, quotas: checked.quotas },
      {
        closeNow: input.closeNow === true,
        capSent: input.maxResponses != null,
      },
    );
  }

  /**
   * What an update would make of the form, checked (400 invalid_arguments with every detail, as
   * before any write), with the answers it would discard counted: the form as it would read, and
   * whether that differs from the form as it reads now.
   */
  private async planUpdate(
    tx: EntityManager,
    form: FormRecord,
    input: FormUpdate,
  ): Promise<{ next: FormRecord; changed: boolean; blocksChanged: boolean; losses: AnswerLoss[] }> {
    const schedule = {
      opensAt: timeOf(input.opensAt) === undefined ? form.opensAt : timeOf(input.opensAt)!,
      closesAt: timeOf(input.closesAt) === undefined ? form.closesAt : timeOf(input.closesAt)!,
    };
    const scheduleDetails = checkSchedule(schedule, {
      opensAt: input.opensAt !== undefined,
      closesAt: input.closesAt !== undefined,
    });
    if (scheduleDetails.length) throw invalidForm(scheduleDetails);
    const hiddenFields = input.hiddenFields ?? form.hiddenFields;
    const langs = input.languages ? checkLanguages(input.languages) : { languages: form.languages ?? [], details: [] };
    const hiddenDetails = [...(input.hiddenFields ? checkHiddenFields(input.hiddenFields) : []), ...langs.details];
    // Variables, endings and thank-you texts sent replace the form's (issue 46); the blocks are
    // checked again against them (the stored blocks when none are sent).
    const computeChanged = input.variables !== undefined || input.endings !== undefined || input.thankYou !== undefined;
    const compute = computeInput({
      variables: input.variables ?? form.compute?.variables,
      endings: input.endings ?? form.compute?.endings,
      thankYou: input.thankYou ?? form.compute?.thankYou,
    });
    const blocksInput = input.blocks ?? (computeChanged ? (form.blocks as BlockInput[]) : undefined);
    let next: FormRecord = {
      ...form,
      title: input.title ?? form.title,
      description: input.description !== undefined ? input.description : form.description,
      hiddenFields,
      partialResponses: input.partialResponses ?? form.partialResponses,
      ...schedule,
      access: input.access ?? form.access,
      spamProtection: input.spamProtection ?? form.spamProtection,
      maxResponses: input.maxResponses !== undefined ? input.maxResponses : form.maxResponses,
      receipt: input.receipt !== undefined ? storedReceipt(input.receipt) : form.receipt,
      languages: langs.languages,
    };
    let losses: AnswerLoss[] = [];
    // The rules are checked before any answer loss: acceptAnswerLoss does not lift a broken rule.
    if (blocksInput) {
      const normalized = normalizeForm(blocksInput, form.blocks, hiddenFields, form.hiddenFields, '/blocks', compute);
      const details = [...hiddenDetails, ...normalized.details];
      if (details.length) throw invalidForm(details);
      next = { ...next, blocks: normalized.blocks, compute: normalized.compute };
      losses = await this.countLosses(tx, form, [
        ...lossCandidates(form.blocks, next.blocks),
        // Variables and endings stored responses hold (issue 46).
        ...computeLossCandidates(
          { variables: formVariables(form).map((v) => v.name), compute: form.compute },
          {
            variables: formVariables({ blocks: next.blocks, compute: normalized.compute }).map((v) => v.name),
            compute: normalized.compute,
          },
        ),
      ]);
    } else {
      const details = [
        ...hiddenDetails,
        ...(input.hiddenFields ? checkHiddenStillNamed(form.blocks, hiddenFields) : []),
      ];
      if (details.length) throw invalidForm(details);
    }
    // A receipt sent, or blocks changed under a stored one, must still name an email block (issue 48).
    if (input.receipt !== undefined || blocksInput) {
      const details = checkReceipt(input.receipt !== undefined ? input.receipt : next.receipt, next.blocks);
      if (details.length) throw invalidForm(details);
    }
    // Quotas sent, or blocks changed under stored ones, are checked against the form as it would be (issue 47).
    if (input.quotas !== undefined || (blocksInput && form.quotas?.length)) {
      const limits = checkQuotas(next, input.quotas ?? form.quotas ?? []);
      if (limits.details.length) throw invalidQuotas(limits.details);
    }
    // Translations that name a language, block or choice the form no longer has are dropped (issue 51).
    next = { ...next, translations: pruneTranslations(next).translations };
    const reads = (f: FormRecord) => canonicalJson({ ...this.view(f, true), version: 0, updatedAt: '' });
    const blocksChanged =
      blocksInput !== undefined && reads({ ...form, blocks: next.blocks, compute: next.compute }) !== reads(form);
    const limitsSent = input.quotas !== undefined || input.closeNow === true;
    return { next, changed: blocksChanged || limitsSent || reads(next) !== reads(form), blocksChanged, losses };
  }

  /** The answers each candidate change would discard (those that discard none left out). */
  private async countLosses(
    tx: EntityManager,
    form: FormRecord,
    candidates: AnswerLossCandidate[],
  ): Promise<AnswerLoss[]> {
    const losses: AnswerLoss[] = [];
    for (const c of candidates) {
      const n = await this.answers.countLost(tx, form.id, c);
      if (n > 0) losses.push({ candidate: c, answers: n });
    }
    return losses;
  }

  /** publish_form (also reopens a closed form) and close_form. Doing it twice changes nothing. */
  async transition(actor: Principal, publicId: string, to: 'published' | 'closed'): Promise<FormRecord> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.lock(tx, actor.workspace.id, publicId);
      if (form.status === to) return form;
      if (to === 'published' && !form.blocks.some((b) => b.type !== 'statement')) {
        throw new ApiError('tool_error', {
          message: 'A form needs at least one block that takes an answer before it can be published.',
          hint: 'Add blocks with update_form, then publish.',
        });
      }
      if (to === 'published' && closedBySchedule(form, new Date())) {
        throw new ApiError('tool_error', {
          message: `This form's closesAt (${form.closesAt!.toISOString()}) has passed: published, it would be closed at once.`,
          hint: 'Set a later closesAt, or null, with update_form, then publish it.',
        });
      }
      if (to === 'closed' && form.status === 'draft') {
        throw new ApiError('tool_error', {
          message: 'This form is a draft: it was never published, so there is nothing to close.',
          hint: 'Publish it with publish_form, or delete it with delete_form.',
        });
      }
      await this.setStatus(form.id, to, tx);
      await this.audit.record(tx, actor, to === 'published' ? 'form.publish' : 'form.close', publicId, {
        from: form.status,
        version: form.version + 1,
      });
      const changed = await this.get(actor.workspace.id, publicId, tx);
      await this.webhooks.emit(
        tx,
        actor.workspace.id,
        to === 'published' ? 'form.published' : 'form.closed',
        // A close by hand; the schedule's closes say "schedule" (AccessService).
        to === 'published' ? this.view(changed, true) : { ...this.view(changed, true), reason: 'manual' },
      );
      return changed;
    });
  }

  /**
   * delete_form: the form, its blocks and its responses (cascade), in one transaction, with the
   * stored Idempotency-Key answers that showed any of it.
   */
  async remove(
    actor: Principal,
    publicId: string,
  ): Promise<{ publicId: string; deleted: true; responsesDeleted: number }> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.lock(tx, actor.workspace.id, publicId);
      const n = await this.answers.count(tx, form.id);
      // The answers of its responses leave the delivery log too (read before the form row goes).
      await this.webhooks.forgetAnswers(tx, actor.workspace.id, { formPublicId: publicId });
      // Its files too: the rows now, the objects once this commits.
      await this.uploads.deleteForForm(tx, form.id);
      await this.repo.delete(tx, form.id);
      await this.idempotency.forgetDeleted(tx, { workspaceId: actor.workspace.id, formPublicId: publicId });
      await this.audit.record(tx, actor, 'form.delete', publicId, { title: form.title, responsesDeleted: n });
      // One event for the form, none for its responses; the form as it was before the deletion.
      await this.webhooks.emit(tx, actor.workspace.id, 'form.deleted', this.view(form, true));
      return { publicId, deleted: true as const, responsesDeleted: n };
    });
  }

  /** The form, its row locked until the transaction ends (404 when it is not the workspace's). */
  /**
   * set_translation (issue 51): replaces one of the form's languages' texts by `texts` in one
   * write (a new version); the answer says which text keys still fall back to the default language.
   */
  async setTranslation(
    actor: Principal,
    input: { publicId: string; language: string; texts: Record<string, string>; ifVersion?: number },
  ): Promise<{ version: number; missingTexts: string[] }> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.lock(tx, actor.workspace.id, input.publicId);
      if (input.ifVersion !== undefined && input.ifVersion !== form.version)
        throw new ApiError('version_conflict', {
          message: `The form is at version ${form.version}; this change was made from version ${input.ifVersion}.`,
          hint: 'Read the form again with get_form and send its version as ifVersion.',
          details: [{ path: '/ifVersion', message: `the form is at version ${form.version}` }],
        });
      const details = checkTranslation(form, input.language, input.texts);
      if (details.length) throw invalidTranslation(form, details);
      const language = canonicalTag(input.language)!;
      const translations = { ...form.translations, [language]: { ...input.texts } };
      await this.repo.setTranslations(tx, form.id, form.languages, translations);
      await this.repo.bumpVersion(tx, form.id);
      await this.audit.record(tx, actor, 'form.update', form.publicId, { version: form.version + 1, language });
      const updated = await this.get(actor.workspace.id, form.publicId, tx);
      await this.webhooks.emit(tx, actor.workspace.id, 'form.updated', this.view(updated, true));
      return {
        version: updated.version,
        missingTexts: translate(updated, language).missing,
      };
    });
  }

  /** get_form with a language (issue 51): the form's texts in it, and the keys that fell back to the default. */
  async getViewIn(workspaceId: string, publicId: string, language: string): Promise<Record<string, unknown>> {
    const form = await this.get(workspaceId, publicId);
    const tag = canonicalTag(language);
    const languages = form.languages ?? [];
    if (!tag || !languages.includes(tag))
      throw new ApiError('invalid_arguments', {
        message: `The form has no language ${language}.`,
        hint: languages.length
          ? `Its languages: ${languages.join(', ')}.`
          : 'The form has one language; update_form sets languages.',
        details: [{ path: '/language', message: `must be one of the form's languages` }],
      });
    const { form: translated, missing } = translate(form, tag);
    return { ...this.view(translated, true), language: tag, missingTexts: missing };
  }

  lock(
    tx: EntityManager,
    workspaceId: string,
    publicId: string,
    mode: 'UPDATE' | 'SHARE' = 'UPDATE',
  ): Promise<FormRecord> {
    return this.get(workspaceId, publicId, tx, mode);
  }

  /**
   * Refuses an edit that would discard answers (400 tool_error) unless the caller accepted the
   * loss; when accepted, removes those answers (and exactly them from the aggregates) so what is
   * stored matches the form.
   */
  private async handleAnswerLoss(
    tx: EntityManager,
    form: FormRecord,
    losses: AnswerLoss[],
    accepted: boolean,
  ): Promise<number> {
    if (losses.length === 0) return 0;
    if (!accepted) {
      const details: ErrorDetail[] = losses.map(({ candidate, answers }) => ({
        path: candidate.path,
        message: describeLoss(candidate, answers),
      }));
      throw new ApiError('tool_error', {
        message: `This change would discard existing answers: ${details.map((d) => d.message).join('; ')}.`,
        hint: 'Keep the ids of blocks and choices whose answers you want to keep (renaming is fine), or send acceptAnswerLoss: true to discard those answers.',
        details,
      });
    }
    for (const { candidate } of losses) await this.answers.discard(tx, form.id, candidate);
    return losses.reduce((sum, l) => sum + l.answers, 0);
  }

  /**
   * Closes published forms whose closesAt passed (the one `formId` names, or up to `limit`), in
   * `tx`: the forms this transaction closed, as read after (the caller emits their events). See
   * FormsRepository.closeDue: a form is closed by one transaction, however many try.
   */
  async closeDue(tx: EntityManager, limit: number, formId?: string): Promise<FormRecord[]> {
    const rows = await this.repo.closeDue(tx, limit, formId);
    const closed: FormRecord[] = [];
    for (const r of rows) closed.push(await this.get(r.workspaceId, r.publicId, tx));
    return closed;
  }

  /** Sets a form's status without the rules of publish_form and close_form (the demo's seeding, at `at` when given). */
  async setStatus(
    formId: string,
    status: FormStatus,
    manager: EntityManager = currentManager(this.db),
    at?: Date,
  ): Promise<void> {
    await this.repo.setStatus(manager, formId, status, at);
  }
}

/**
 * A form in the API's shape (blocks included when asked); with `publicUrl`, its share link `url`
 * (the tools' view: FormsService.view; webhook events carry the form without it).
 */
export function formView(
  f: FormRecord,
  withBlocks: true,
  publicUrl?: string,
): Record<string, unknown> & { blocks: unknown[] };
export function formView(f: FormRecord, withBlocks?: false, publicUrl?: string): Record<string, unknown>;
export function formView(f: FormRecord, withBlocks = false, publicUrl?: string) {
  const view: Record<string, unknown> = {
    publicId: f.publicId,
    title: f.title,
    description: f.description,
    status: f.status,
    version: f.version,
    createdAt: f.createdAt.toISOString(),
    updatedAt: f.updatedAt.toISOString(),
    publishedAt: f.publishedAt?.toISOString() ?? null,
    closedAt: f.closedAt?.toISOString() ?? null,
  };
  if (publicUrl !== undefined) view.url = `${publicUrl}/f/${f.publicId}`;
  if (withBlocks) {
    // Only forms that have hidden fields show the list, so other forms read as they always did.
    if (f.hiddenFields?.length) view.hiddenFields = f.hiddenFields;
    // Shown either way (issue 45): false says it is off, where leaving it out said nothing.
    view.partialResponses = f.partialResponses === true;
    // The schedule (issue 47), shown either way: null says there is none.
    view.opensAt = f.opensAt?.toISOString() ?? null;
    view.closesAt = f.closesAt?.toISOString() ?? null;
    view.access = f.access ?? 'public';
    // The cap, shown either way (null: none); quotas on forms that have them (counts: summarize_responses).
    view.maxResponses = f.maxResponses ?? null;
    if (f.quotas?.length) view.quotas = f.quotas;
    view.spamProtection = f.spamProtection ?? 'auto';
    if (f.receipt) view.receipt = f.receipt;
    // Forms in several languages (issue 51): only those show their list.
    if (f.languages?.length) view.languages = f.languages;
    view.blocks = blocksView(f.blocks);
    // Forms that compute (issue 46): only those that do show these, so other forms read as they did.
    if (f.compute?.variables) view.variables = f.compute.variables;
    if (f.compute?.endings) view.endings = f.compute.endings;
    if (f.compute?.thankYou) view.thankYou = f.compute.thankYou;
    if (isQuiz(f.blocks)) view.maxScore = maxScore(f.blocks);
  }
  return view;
}

/** The computing settings of a create or update, as normalizeForm takes them. */
function computeInput(input: ComputeInput): ComputeInput {
  return { variables: input.variables, endings: input.endings, thankYou: input.thankYou };
}

/** 400 invalid_arguments for a form whose blocks, rules or hidden fields do not hold. */
/** 400 invalid_arguments for set_translation, with the form's languages and text keys in the hint. */
function invalidTranslation(form: FormRecord, details: ErrorDetail[]): ApiError {
  const keys = [...textKeys(form).keys()];
  const hint =
    details[0].path === '/language'
      ? `The form's languages: ${(form.languages ?? []).join(', ') || 'none (update_form sets languages)'}; the first is the default, whose texts are the form's own.`
      : `Valid keys: ${keys.slice(0, 60).join(', ')}${keys.length > 60 ? `, and ${keys.length - 60} more (get_form lists the blocks and choices)` : ''}.`;
  return new ApiError('invalid_arguments', {
    message: 'The translation does not fit the form.',
    hint,
    details,
  });
}

function invalidForm(details: ErrorDetail[]): ApiError {
  const rules = details.some((d) =>
    /\/(showIf|jumps|calculate|points|correct)(\/|$)|^\/(hiddenFields|variables|endings|thankYou)/.test(d.path),
  );
  // A setting on a type that does not take it (min on a rating, say): the first detail's "where it belongs".
  const setting = details.map((d) => /^is not a setting of \w+ blocks: (.+)$/.exec(d.message)?.[1]).find(Boolean);
  const redirect = details.some((d) => d.path.endsWith('/redirectUrl'));
  const hint = redirect
    ? 'A redirectUrl is an absolute http(s) URL; recall ({{ref}}, {{hidden:x}}, {{variable:x}}) may appear only after its host: in the path, query or fragment.'
    : rules
      ? 'Each detail points at the rule (showIf, jumps, calculate) or field to fix. A condition names only blocks before it (by ref or id), hidden fields the form declares and variables after a block that changes them; a jump goes to a later page_break, "end" or "ending:REF".'
      : setting && `${setting[0].toUpperCase()}${setting.slice(1)}.`;
  return new ApiError('invalid_arguments', {
    message: rules ? 'Some blocks or rules are not valid.' : 'Some blocks are not valid.',
    ...(hint ? { hint } : {}),
    details,
  });
}

/** A change that would discard answers, and how many. */
interface AnswerLoss {
  candidate: AnswerLossCandidate;
  answers: number;
}

/** A dry run's answer: the form as it would be stored, with what the author should know. */
export type DryRunView = Record<string, unknown> & {
  dryRun: { warnings: ErrorDetail[]; answerLoss: ErrorDetail[] };
};

/** A new form's settings as sent, the defaults filled in (create_form, and its dry run). */
function newFormSettings(input: FormInput, quotas: NonNullable<FormRecord['quotas']>) {
  return {
    partialResponses: input.partialResponses === true,
    access: input.access ?? 'public',
    spamProtection: input.spamProtection ?? 'auto',
    maxResponses: input.maxResponses ?? null,
    quotas: quotas.length ? quotas : null,
    receipt: storedReceipt(input.receipt),
  };
}

/** A new form's settings checked (400 invalid_arguments with every detail). */
function checkNewForm(input: FormInput) {
  const hiddenFields = input.hiddenFields ?? [];
  const checked = normalizeForm(input.blocks ?? [], [], hiddenFields, [], '/blocks', computeInput(input));
  const schedule = { opensAt: timeOf(input.opensAt) ?? null, closesAt: timeOf(input.closesAt) ?? null };
  const limits = checkQuotas({ blocks: checked.blocks, hiddenFields, compute: checked.compute }, input.quotas ?? []);
  const langs = checkLanguages(input.languages ?? []);
  const details = [
    ...checkHiddenFields(hiddenFields),
    ...checked.details,
    ...checkSchedule(schedule),
    ...(checked.details.length ? [] : checkReceipt(input.receipt, checked.blocks)),
    ...langs.details,
  ];
  if (details.length) throw invalidForm(details);
  if (limits.details.length) throw invalidQuotas(limits.details);
  return { hiddenFields, checked, schedule, quotas: limits.quotas, languages: langs.languages };
}

/** JSON with object keys sorted, so that two values read the same whatever order their keys came in. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/**
 * A form's blocks and compute settings with a new id for each block and choice, everywhere it
 * appears (rules name blocks, jumps pages, points and correct answers choices, all by id). Ids
 * are random tokens, so each quoted occurrence in the JSON is that id.
 */
function withNewIds(
  blocks: Block[],
  compute: FormRecord['compute'],
  quotas: FormRecord['quotas'],
): Pick<FormRecord, 'blocks' | 'compute' | 'quotas'> {
  const ids = new Map<string, string>();
  for (const b of blocks) {
    ids.set(b.id, newBlockId());
    for (const c of b.choices ?? []) ids.set(c.id, newChoiceId());
  }
  const json = JSON.stringify({ blocks, compute, quotas }).replace(/"([bc]_[A-Za-z0-9]+)"/g, (quoted, id: string) =>
    ids.has(id) ? `"${ids.get(id)}"` : quoted,
  );
  return JSON.parse(json) as Pick<FormRecord, 'blocks' | 'compute' | 'quotas'>;
}

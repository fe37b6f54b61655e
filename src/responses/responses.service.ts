import { Injectable, Logger } from '@nestjs/common';
import { currentTraceparent } from '../observability/tracing';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../common/access/principal';
import { uuidv7 } from '../common/ids';
import { ApiError } from '../common/errors/api-error';
import { allowLongStatements } from '../database/long-statements';
import { currentManager, inTransaction, openTransaction, outsideTransaction } from '../database/transaction';
import { IdempotencyService } from '../idempotency/idempotency.service';
import {
  AnswerWording,
  answersViewer,
  Block,
  CHOICE_TYPES,
  NUMERIC_TYPES,
  SCALE_TYPES,
  takesAnswer,
} from '../forms/blocks';
import { ENDING_VARIABLE, isBlockLeaf, isHiddenLeaf, isVariableLeaf } from '../forms/conditions';
import {
  CheckedResponse,
  computeOutcome,
  computes,
  formVariables,
  hasLogic,
  validateResponse,
} from '../forms/form-logic';
import { FormRecord, FormsService, notFoundForm } from '../forms/forms.service';
import {
  ENDING_KEY,
  medianSeconds,
  ResponseStatsRepository,
  SECONDS_KEY,
  SummaryRow,
  variableKey,
} from '../summaries/response-stats.repository';
import { InsertedResponse, NewResponse, ResponseRow, ResponsesRepository } from './responses.repository';
import { answerFacts, CAP } from '../forms/limits';
import { ResponseInsertBatcher } from './response-insert-batcher';
import { blockProblem, UploadDescription, UploadsService } from '../uploads/uploads.service';
import { FileAnswers } from '../files/file-answers.service';
import { fileKeys, namedUploads, showFiles } from '../files/file-answers';
import type { FileReader } from '../files/file-links';
import { ResponseSequencer } from './response-sequencer';
import { NeedsClaimTransaction, StatementClaim, statementClaim } from '../idempotency/statement-claim';
import { responseRefusal } from './response-refusal';
import { LongReads } from './long-reads';
import { countedValues, FormSummary, summarizeComputed, summaryFromStats } from '../summaries/summarize';
import {
  checkResponseFilter,
  isFiltered,
  ResponseFilter,
  responseFilterSql,
  ResponseSegment,
  segmentOf,
  withoutJit,
} from './response-filter';
import { newEventId, responseCreatedBody } from '../webhooks/events';
import { AccessService, LimitCounts } from '../access/access.service';
import { InvitesService } from '../access/invites.service';
import { SpamResponses } from '../access/spam/spam-responses';
import { WebhookOutbox } from '../webhooks/webhook-outbox.service';
import {
  ALL_PAGES,
  ALL_SOURCE,
  PARTIAL_SOURCE,
  PartialResponsesRepository,
  PartialRow,
} from './partial-responses.repository';
import { FunnelStep, pageKeys } from './pages';

/**
 * A submission's invitation (issue 47): `invite`, its secret (claimed with the response); or
 * `invited`, the caller claims it in the same transaction (the page's walk).
 */
export interface Invited {
  invite?: string;
  invited?: boolean;
}

/** Which responses a read covers (issue 36). */
export type ResponseStatus = 'completed' | 'partial' | 'all';

export interface ResponseView {
  id: string;
  /** Null on a partial response (issue 36). */
  submittedAt: string | null;
  answers: Record<string, unknown>;
  /** Hidden values, on responses of forms that declare hidden fields (or that carry some). */
  hidden?: Record<string, string>;
  /** Every view carries these (issue 45): 'partial' until completed (a spam one, issue 47: none). */
  status?: 'partial' | 'completed';
  /** When it started (its first save; submittedAt for a response that never was a partial), last changed, the last page it reached. */
  startedAt?: string;
  updatedAt?: string;
  lastPage?: string;
  /** On forms that compute (issue 46): its variables and the ending it reached. */
  variables?: Record<string, number | string>;
  ending?: string | null;
}

/**
 * Stands for the submission's own time in a view built before its insert (startedAt and updatedAt
 * of a response that never was a partial): jsonAroundSubmittedAt writes it raw, a character
 * JSON.stringify never writes, and the insert statement puts submittedAt's text in its place.
 */
export const AT_SUBMISSION = '\u0001';

/** How read tools key answers: by block id (default) or by ref (a block without a ref stays under its id). */
export type AnswersBy = 'id' | 'ref';

/** How long one statement of a filtered read may take (see filteredRead). */
export const FILTERED_READ_MS = 60_000;

/**
 * Times a segment's first build begins again when its row is dropped under its scan, before it
 * scans under the form's sequencer lock (see segmentSummary).
 */
export const SEGMENT_BUILD_ATTEMPTS = 3;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The rules of responses: listing in seq order, reading, submitting (validated against the form,
 * in one statement when it can), deleting, and summaries from the maintained aggregates. The SQL is
 * in ResponsesRepository and ResponseStatsRepository.
 */
@Injectable()
export class ResponsesService {
  private readonly logger = new Logger('Responses');

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly repo: ResponsesRepository,
    private readonly stats: ResponseStatsRepository,
    private readonly forms: FormsService,
    private readonly audit: AuditService,
    private readonly idempotency: IdempotencyService,
    private readonly webhooks: WebhookOutbox,
    private readonly sequencer: ResponseSequencer,
    private readonly longReads: LongReads,
    private readonly inserts: ResponseInsertBatcher,
    private readonly uploads: UploadsService,
    private readonly files: FileAnswers,
    private readonly partials: PartialResponsesRepository,
    private readonly access: AccessService,
    private readonly invites: InvitesService,
    private readonly spamKept: SpamResponses,
  ) {}

  /** Whether the form has a completed response with this id. */
  async exists(m: EntityManager, formId: string, responseId: string): Promise<boolean> {
    return (await this.repo.findOne(m, formId, responseId)) !== undefined;
  }

  /** Checks the uploads `answers` name (as the caller keyed them; `stored`: as validated) and holds them for responseId. */
  async attachFiles(
    tx: EntityManager,
    form: FormRecord,
    responseId: string,
    answers: Record<string, unknown>,
    stored: Record<string, unknown>,
  ): Promise<void> {
    const files = namedFiles(form.blocks, answers, stored);
    if (files.length)
      await this.uploads.attach(tx, {
        workspaceId: form.workspaceId,
        formId: form.id,
        blocks: form.blocks,
        responseId,
        files,
      });
  }

  /**
   * A page of a form's responses in seq order, which is (submittedAt, arrival) order (see
   * response-stats.repository.ts). Responses committed before this call that still wait for their seq are
   * sequenced first, and the page is read after that: new responses only ever append, so a walk
   * from offset 0 to total sees every response committed before it began exactly once. The total
   * is the maintained count, and an offset deep into a big form is reached by summing the bucket
   * counts (a few hundred small rows per million responses) and walking at most one bucket, not by
   * skipping offset rows.
   */
  async list(
    workspaceId: string,
    publicId: string,
    opts: {
      limit: number;
      offset: number;
      order: 'oldest' | 'newest';
      filter?: ResponseFilter;
      answersBy?: AnswersBy;
      /** Who reads: file answers get download links bound to it. */
      reader?: FileReader;
      /** completed (default), partial, or all: completed then partial (issue 36); spam (issue 47). */
      status?: ResponseStatus | 'spam';
    },
  ): Promise<{ total: number; responses: ResponseView[] }> {
    const form = await this.forms.get(workspaceId, publicId);
    const filter = checkResponseFilter(form, opts.filter ?? {});
    if (opts.status === 'spam') return this.listSpam(form, filter, opts);
    if (opts.status && opts.status !== 'completed') return this.listWithPartials(workspaceId, form, filter, opts);
    // Without `where`, the page covers the part of the order between the first response since
    // `since` and the first since `until`, both found through the buckets.
    const position = () =>
      this.repo
        .pagePosition(currentManager(this.db), form.id, filter.since ?? null, filter.until ?? null)
        .then((row) => {
          if (!row) throw notFoundForm(publicId); // deleted meanwhile
          return row;
        });
    let at = await position();
    if (at.waiting) {
      // Responses committed before this call wait for their seq: give it, then count again.
      await this.sequencer.settle(form.id);
      at = await position();
    }
    const view = responseViewer(form, opts.answersBy);
    // Positions in oldest-first order; newest-first reads the mirrored range and reverses it.
    const range = (total: number) => {
      const count = Math.min(opts.limit, Math.max(0, total - opts.offset));
      if (count === 0) return undefined;
      return { start: opts.order === 'newest' ? total - opts.offset - count : opts.offset, count };
    };
    const page = async (rows: ResponseRow[]) => {
      const views = (opts.order === 'newest' ? rows.reverse() : rows).map(view);
      if (opts.reader) await this.files.show(views, form, opts.answersBy, opts.reader);
      return views;
    };
    if (filter.where) {
      // Sequenced responses that match, in seq order: the order only grows at its end, so a walk
      // stays exact under a filter too.
      const params: unknown[] = [form.id]; // $1: the form
      const sql = responseFilterSql(form, filter, params, 'r');
      const { total, rows } = await this.filteredRead(workspaceId, async (tx) => {
        const known = countedFilter(form, filter);
        const counted = !known
          ? undefined
          : 'hidden' in known
            ? await this.stats.countHidden(tx, form.id, known.hidden, known.values) // undefined: rows are counted
            : 'compare' in known
              ? await this.stats.countCompared(tx, form.id, known.blockId, known.compare)
              : await this.stats.countAnswers(tx, form.id, known.blockId, known.values);
        const only =
          known && 'compare' in known && counted !== undefined
            ? await this.rangeValues(tx, form.id, known, counted, at.upto - at.skipped, range(counted))
            : undefined;
        return this.repo.filteredPage(tx, { sql, params }, range, counted, only);
      });
      return { total, responses: await page(rows) };
    }
    const { skipped } = at;
    const total = Math.max(0, at.upto - skipped);
    const r = range(total);
    if (!r) return { total, responses: [] };
    const rows = await this.repo.readPage(currentManager(this.db), form.id, skipped + r.start, r.count);
    return { total, responses: await page(rows) };
  }

  /**
   * A range on a number variable (issue 46) read through the variables' GIN index: the values in
   * it that the maintained counts hold (as containments: valuesCompared), when reading its matches
   * that way costs less than walking the form in order until the page is full. The walk reads about
   * `end` x `all` / `total` rows (end: the page's last match in seq order), in order; the index
   * reads the `total` matching rows at random and sorts them, each counted as RANDOM_READ rows of
   * the walk. Undefined (walk) when the range holds more than RANGE_VALUES values, or the page is empty.
   */
  private async rangeValues(
    tx: EntityManager,
    formId: string,
    known: { blockId: string; name: string; compare: { op: 'gt' | 'gte' | 'lt' | 'lte'; value: number } },
    total: number,
    all: number,
    page: { start: number; count: number } | undefined,
  ): Promise<string[] | undefined> {
    if (!page || total * RANDOM_READ * total > (page.start + page.count) * all) return undefined;
    return this.stats.valuesCompared(tx, formId, known.blockId, known.name, known.compare, RANGE_VALUES);
  }

  /**
   * list for status spam (issue 47): the posts judged as spam, in arrival order (submittedAt: when
   * received), no status of their own (they are neither partial nor completed); no filter.
   */
  private async listSpam(
    form: FormRecord,
    filter: ResponseFilter,
    opts: Parameters<ResponsesService['list']>[2],
  ): Promise<{ total: number; responses: ResponseView[] }> {
    if (filter.where || filter.since || filter.until)
      throw new ApiError('invalid_arguments', {
        message: 'status spam lists every post judged as spam; it takes no where, since or until.',
        hint: 'Leave out where, since and until with status spam.',
        details: [{ path: '/status', message: 'spam takes no filter' }],
      });
    const { total, rows } = await this.spamKept.page(currentManager(this.db), form.id, opts);
    const responses = rows.map((r) => ({
      id: r.id,
      submittedAt: r.receivedAt.toISOString(),
      answers: r.answers,
      ...(Object.keys(r.hidden).length ? { hidden: r.hidden } : {}),
    }));
    return { total, responses };
  }

  /**
   * list for status partial or all. Partials are in start (id) order; `all` is the completed
   * responses (in seq order) followed by the partials, so oldest first reads completed then
   * partial, newest first the reverse. total is the sum of both counts; a partial that completes
   * during a walk moves from the partial part to the end of the completed part.
   */
  private async listWithPartials(
    workspaceId: string,
    form: FormRecord,
    filter: ResponseFilter,
    opts: Parameters<ResponsesService['list']>[2],
  ): Promise<{ total: number; responses: ResponseView[] }> {
    const params: unknown[] = [form.id]; // $1: the form
    const sql = responseFilterSql(form, filter, params, 'p');
    const read = <T>(work: (m: EntityManager) => Promise<T>) =>
      isFiltered(filter) ? this.filteredRead(workspaceId, work) : work(currentManager(this.db));
    const partialTotal = isFiltered(filter)
      ? await read((m) => this.partials.count(m, { sql, params }))
      : ((await this.partials.pageCounts(currentManager(this.db), form.id)).get(ALL_PAGES) ?? 0);
    const completed = (offset: number, limit: number) =>
      this.list(workspaceId, form.publicId, { ...opts, status: 'completed', offset, limit });
    const completedTotal = opts.status === 'all' ? (await completed(0, 0)).total : 0;
    const newest = opts.order === 'newest';
    const partialPage = async (offset: number, limit: number) => {
      const count = Math.min(limit, Math.max(0, partialTotal - offset));
      if (count <= 0) return [];
      const start = newest ? partialTotal - offset - count : offset;
      const rows = await read((m) => this.partials.page(m, { sql, params }, start, count));
      const views = (newest ? rows.reverse() : rows).map(partialViewer(form, opts.answersBy));
      if (opts.reader) await this.files.show(views, form, opts.answersBy, opts.reader);
      return views;
    };
    const completedPage = async (offset: number, limit: number) =>
      limit > 0 && offset < completedTotal ? (await completed(offset, limit)).responses : [];
    const out: ResponseView[] = [];
    const [first, firstTotal, second] = newest
      ? [partialPage, partialTotal, completedPage]
      : [completedPage, completedTotal, partialPage];
    out.push(...(await first(opts.offset, opts.limit)));
    out.push(...(await second(Math.max(0, opts.offset - firstTotal), opts.limit - out.length)));
    return { total: completedTotal + partialTotal, responses: out };
  }

  /**
   * A read under `where`: its statements read the form's rows, so on a big form they may take
   * longer than a request's statement timeout (DATABASE_STATEMENT_TIMEOUT_MS); they get
   * FILTERED_READ_MS, in a transaction of their own (SET LOCAL ends with it), and in one of the
   * workspace's long-read slots (429 when its slots are taken: see LongReads).
   */
  private filteredRead<T>(workspaceId: string, work: (tx: EntityManager) => Promise<T>): Promise<T> {
    return this.longReads.run(workspaceId, (db) =>
      inTransaction(db, async (tx) => {
        await allowLongStatements(tx, FILTERED_READ_MS);
        return work(tx);
      }),
    );
  }

  async get(
    workspaceId: string,
    publicId: string,
    responseId: string,
    answersBy?: AnswersBy,
    reader?: FileReader,
  ): Promise<ResponseView> {
    const form = await this.forms.get(workspaceId, publicId);
    const view = await this.read(currentManager(this.db), form, responseId, answersBy);
    if (reader) await this.files.show([view], form, answersBy, reader);
    return view;
  }

  private async read(
    manager: EntityManager,
    form: FormRecord,
    responseId: string,
    answersBy?: AnswersBy,
  ): Promise<ResponseView> {
    const row = UUID.test(responseId) ? await this.repo.findOne(manager, form.id, responseId) : undefined;
    if (row) return responseViewer(form, answersBy)(row);
    const partial = UUID.test(responseId) ? await this.partials.find(manager, form.id, responseId) : undefined;
    if (!partial) throw notFoundResponse(form.publicId, responseId);
    return partialViewer(form, answersBy)(partial);
  }

  /**
   * create_response: validated like every submission and stored with its audit record, in one
   * statement. Works on a form in any state (imports); the respondent page takes published forms only.
   */
  createAs(
    actor: Principal,
    publicId: string,
    answers: Record<string, unknown>,
    hidden?: Record<string, string>,
    invite?: string,
  ): Promise<ResponseView> {
    return this.store(publicId, answers, { source: 'api', actor, invite }, hidden);
  }

  /**
   * A submission from the respondent page (form post or JSON): the same validation as
   * create_response, but only a published form takes it.
   */
  submit(
    publicId: string,
    answers: Record<string, unknown>,
    hidden?: Record<string, string>,
    invite?: Invited,
  ): Promise<ResponseView> {
    return this.store(publicId, answers, { source: 'web', published: true, ...invite }, hidden);
  }

  /**
   * Validates a submission against the form's blocks as of after the form lock, and stores it.
   * The form as this instance last read it is tried first: one statement share-locks the form,
   * checks that it is still at that version and inserts the response (and its audit record), so a
   * concurrent edit of the blocks cannot slip in between. When the form is not known here, has
   * changed, or the answers do not fit it, the form is locked, read again after the lock, and the
   * answers validated against that, in one transaction. Nothing is stored when an answer is refused.
   *
   * Webhooks: the response.created event is written by that same statement (ResponsesRepository.insertMany), one
   * delivery per subscribed endpoint, so it commits with the response or not at all. Its body is
   * the response as get_response shows it right after the insert ({ id, submittedAt, answers }: no
   * position, which the sequencer gives later), labelled from the form version the statement
   * checks; only submittedAt comes from the statement (the database's clock).
   */
  private async store(
    publicId: string,
    answers: Record<string, unknown>,
    how: { source: 'api' | 'web'; actor?: Principal; published?: boolean } & Invited,
    hidden?: Record<string, string>,
  ): Promise<ResponseView> {
    const workspaceId = how.actor?.workspace.id;
    if (how.invite !== undefined) {
      // An invitation's answer (issue 47): claimed with the response, in one transaction.
      const form = workspaceId ? await this.forms.get(workspaceId, publicId) : await this.forms.getPublic(publicId);
      const { invite, ...rest } = how;
      return this.invites.submitWith(form, invite, hidden, (fixed) =>
        this.store(publicId, answers, { ...rest, invited: true }, fixed),
      );
    }
    // A page's answer to an invite-only form comes with its invitation.
    const uninvited = (form: FormRecord) => how.source === 'web' && !how.invited && form.access === 'invite';
    // The respondent page's answers are read by the person filling in the form, not by a program.
    const wording: AnswerWording = how.source === 'web' ? 'person' : 'api';
    const check = (form: FormRecord) => validateResponse(form, answers, hidden, { wording, source: how.source });
    const insert = (m: EntityManager | undefined, form: FormRecord, checked: CheckedResponse, with_: WithInsert = {}) =>
      this.insertChecked(m, form, checked, { ...how, publicId, sent: answers }, undefined, with_);
    const known = this.forms.recent(publicId);
    // A keyed create_response claims its key in the insert statement (see statement-claim.ts).
    const keyed = statementClaim();
    if (
      known &&
      (workspaceId === undefined || known.workspaceId === workspaceId) &&
      (!how.published || known.status === 'published') &&
      this.access.admits(known) &&
      !uninvited(known)
    ) {
      const checked = check(known);
      // Files whose bytes the service checked on arrival are held by the statement; any other case
      // (an id named twice, bytes not seen yet, a problem) takes the transactional path, whose checks say what.
      const uploads = checked.details.length ? undefined : uploadsToHold(known.blocks, answers, checked.answers);
      const response = uploads && (await insert(openTransaction(), known, checked, { claim: keyed, uploads }));
      if (response) return response;
    }
    // The path below locks the form in a transaction: a keyed call claims its key in it first, the usual way.
    if (keyed) throw new NeedsClaimTransaction();
    let refused: FormRecord | undefined;
    return inTransaction(this.db, async (tx) => {
      const form = workspaceId
        ? await this.forms.lock(tx, workspaceId, publicId, 'SHARE')
        : await this.forms.getPublic(publicId, tx, 'SHARE');
      // Its schedule (issue 47): before opensAt or after closesAt, nothing is stored.
      const why = this.access.whyClosed(form, new Date(), how.source === 'web' ? 'person' : 'api');
      if (why) {
        refused = form;
        throw why;
      }
      if (how.published && form.status !== 'published')
        throw (await this.access.whyFull(form, wording)) ?? notAccepting(form.status);
      if (uninvited(form)) throw new ApiError('invite_required');
      const checked = validated(check(form), wording);
      const response = await insert(tx, form, checked);
      // Cannot happen: the form row is locked and was read after the lock.
      if (!response) throw new Error(`form ${form.id} changed under its lock`);
      const files = namedFiles(form.blocks, answers, checked.answers);
      if (files.length)
        await this.uploads.attach(tx, {
          workspaceId: form.workspaceId,
          formId: form.id,
          blocks: form.blocks,
          responseId: response.id,
          files,
        });
      return response;
    }).catch(async (err: unknown) => {
      // A form found past its closesAt is closed now, once the refusing transaction has ended.
      if (refused) await this.access.refusal(refused);
      throw err;
    });
  }

  /**
   * Inserts a validated response (with its audit record and response.created event, one
   * statement): in `m`'s transaction, or batched with other submissions when `m` is undefined.
   * `partial` is the partial response it completes (issue 36): its id, start and page. Undefined
   * when the form changed since it was read, `uploads` could not all be held, or another call holds
   * `claim`'s key (see ResponsesRepository.insertMany). With `claim`, the statement also claims the
   * call's Idempotency-Key and stores the answer returned here. `how.sent`: the answers as the caller
   * keyed them, which the answer's keys follow (keyedAsSent); the event keys them by id.
   */
  async insertChecked(
    m: EntityManager | undefined,
    form: FormRecord,
    checked: CheckedResponse,
    how: {
      publicId: string;
      source: 'api' | 'web';
      actor?: Principal;
      published?: boolean;
      sent?: Record<string, unknown>;
    },
    partial?: { id: string; startedAt: Date; lastPage: string; resumeHash: Buffer | null },
    { claim, uploads }: WithInsert = {},
  ): Promise<ResponseView | undefined> {
    const id = partial?.id ?? uuidv7();
    // The page it is completed on: the last page of its path (issue 45: not the partial's last save).
    const lastPage = lastPageOf(form.blocks, checked.shown);
    const view: ResponseView = {
      ...responseViewer(form)({
        id,
        submittedAt: new Date(0),
        answers: checked.answers,
        hidden: checked.hidden,
        lastPage,
        ...outcomeColumns(checked),
      }),
      startedAt: partial ? partial.startedAt.toISOString() : AT_SUBMISSION,
      updatedAt: AT_SUBMISSION,
    };
    const described = await this.filesDescribed(m ?? currentManager(this.db), form, view.answers);
    // The statement holds files by their bytes; each must also fit its block as it is now (issue
    // 45, item 6.4): one that does not takes the transactional path, whose checks say why.
    if (uploads && !fitBlocks(form.blocks, uploads, described)) return undefined;
    const refs = answeredRefs(form.blocks, checked.answers);
    const answer = how.sent ? keyedAsSent(form.blocks, how.sent)(view) : view;
    const key = claim && { claim, formPublicId: how.publicId, ...jsonAroundSubmittedAt(answer) };
    const response: NewResponse = {
      id,
      form,
      answers: checked.answers,
      hidden: checked.hidden,
      shown: checked.shown,
      ...outcomeColumns(checked),
      source: how.source,
      published: how.published,
      lastPage,
      ...(partial ? { startedAt: partial.startedAt, resumeHash: partial.resumeHash } : {}),
      audit: how.actor && this.audit.recordJson(how.actor, 'response.create', { form: how.publicId }),
      event: {
        id: newEventId(),
        traceparent: currentTraceparent(),
        ...responseCreatedBody(
          form,
          {
            id,
            answers: described,
            ...(refs ? { refs } : {}),
            ...(view.hidden ? { hidden: view.hidden } : {}),
            ...(view.variables ? { variables: view.variables, ending: view.ending } : {}),
          },
          undefined,
          timesJson(view), // as get_response shows them (the statement puts submittedAt in)
        ),
      },
      key,
      uploads,
      limits: this.access.countersOf(form, answerFacts(checked.answers, checked.hidden, checked.outcome?.variables)),
    };
    // Outside a transaction, with the submissions of other requests (see ResponseInsertBatcher).
    const row = m ? (await this.repo.insertMany(m, [response]))[0] : await this.inserts.insert(response);
    if (!row) return undefined;
    // A keyed call its statement refused wrote nothing: it runs again with its key claimed first, as any keyed refusal.
    if (row.full != null && claim) throw new NeedsClaimTransaction();
    this.limitReached(form, row, how.source === 'web' ? 'person' : 'api');
    const submittedAt = row.submittedAt.toISOString();
    if (claim) claim.answer = row.answer; // the text its statement stored with the key
    return atSubmission(answer, submittedAt);
  }

  /**
   * After a store statement (issue 47): a response refused because a counter is full is thrown
   * (409 response_limit_reached / quota_full; its transaction, if any, rolls back: a partial stays
   * one); when the cap is reached, the form is closed once (form.closed, reason "cap"), after this
   * call's answer, outside its transaction.
   */
  private limitReached(form: FormRecord, row: InsertedResponse, wording: 'api' | 'person' = 'api'): void {
    if (row.filled || row.full === CAP)
      void outsideTransaction(() => this.access.closeForCap(form.id)).catch((err: Error) =>
        this.logger.warn(`closing a full form failed: ${err.message}`),
      );
    if (row.full != null) throw this.access.fullError(form, row.full, wording);
  }

  /** Answers (keyed by block id) with each file answer as `[{ uploadId, name, size, contentType }]`, as webhook payloads carry them. */
  private async filesDescribed(
    manager: EntityManager,
    form: FormRecord,
    answers: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    const keys = fileKeys(form.blocks);
    const ids = namedUploads([answers], keys);
    return ids.length ? showFiles(answers, keys, await this.uploads.describe(manager, ids)) : answers;
  }

  async removeAs(actor: Principal, publicId: string, responseId: string): Promise<{ id: string; deleted: true }> {
    return inTransaction(this.db, async (tx) => {
      const form = await this.forms.lock(tx, actor.workspace.id, publicId, 'SHARE');
      if (!UUID.test(responseId)) throw notFoundResponse(publicId, responseId);
      if (await this.spamKept.remove(tx, form.id, responseId)) {
        // A post judged as spam (issue 47): never counted nor sent, so nothing else to undo.
        await this.audit.record(tx, actor, 'response.delete', responseId, { form: publicId, spam: true });
        return { id: responseId, deleted: true as const };
      }
      if (await this.partials.find(tx, form.id, responseId, true)) {
        // A partial (issue 36): its files and answers in the delivery log go with it; no response.deleted.
        await this.webhooks.forgetAnswers(tx, form.workspaceId, { responseId });
        await this.uploads.deleteForResponses(tx, [responseId]);
        await this.partials.delete(tx, form.id, [responseId]);
        await this.audit.record(tx, actor, 'response.delete', responseId, { form: publicId, partial: true });
        return { id: responseId, deleted: true as const };
      }
      // Emitted before the delete, which it reads (only when an endpoint wants it); the transaction makes it one change.
      await this.webhooks.emit(tx, form.workspaceId, 'response.deleted', async () => ({
        form: { publicId, title: form.title },
        response: await this.read(tx, form, responseId).then(async (view) => ({
          ...view,
          answers: await this.filesDescribed(tx, form, view.answers),
        })),
      }));
      // Its answers leave the delivery log too (that event's included: it is sent without them).
      await this.webhooks.forgetAnswers(tx, form.workspaceId, { responseId });
      // Its files, before the row (whose deletion would set them pending); rolled back with a 404.
      await this.uploads.deleteForResponses(tx, [responseId]);
      // Off the cap and quotas it counted toward (issue 47).
      if (form.maxResponses != null || form.quotas?.length) {
        const row = await this.repo.findOne(tx, form.id, responseId);
        if (row) await this.access.uncount(tx, form, row);
      }
      if (!(await this.stats.deleteResponse(tx, form.id, responseId))) throw notFoundResponse(publicId, responseId);
      await this.idempotency.forgetDeleted(tx, { workspaceId: actor.workspace.id, responseId });
      await this.audit.record(tx, actor, 'response.delete', responseId, { form: publicId });
      return { id: responseId, deleted: true as const };
    });
  }

  /**
   * Per-block aggregates from the maintained stats: a handful of index lookups whatever the number
   * of responses (one statement, so one consistent snapshot). Responses committed before this call
   * that still wait for their seq are sequenced (counted) first, so the summary counts every one.
   */
  async summarize(
    workspaceId: string,
    publicId: string,
    filter: ResponseFilter = {},
    status: ResponseStatus = 'completed',
  ): Promise<FormSummary & { publicId: string; funnel?: FunnelStep[] } & Partial<LimitCounts>> {
    const form = await this.forms.get(workspaceId, publicId);
    const checked = checkResponseFilter(form, filter);
    let row = await this.readSummary(form);
    if (row.waiting) {
      await this.sequencer.settle(form.id);
      row = await this.readSummary(form);
    }
    const segment = status === 'completed' ? segmentOf(form, checked) : undefined;
    if (segment) row = await this.segmentSummary(workspaceId, form, segment);
    else if (isFiltered(checked) || status !== 'completed') {
      // Any other filter: the same summary, computed from the sequenced responses that match (counted
      // above: the ones committed before this call); with partials, from those rows too.
      const params: unknown[] = [form.id]; // $1: the form
      const sql = responseFilterSql(form, checked, params, 'r');
      const answerable = form.blocks.filter((b) => takesAnswer(b.type));
      const source = status === 'partial' ? PARTIAL_SOURCE : status === 'all' ? ALL_SOURCE : undefined;
      row = await this.filteredRead(workspaceId, (tx) =>
        this.stats.readFilteredSummary(tx, { sql, params }, answerable, countedValues, source),
      );
    }
    // Drop-off exists only where answers are saved before completion: forms with partialResponses on.
    const funnel = form.partialResponses ? await this.funnel(form) : undefined;
    const stats = new Map(row.stats.map((s) => [s.blockId, s]));
    const total = row.total ?? 0;
    const recorded = row.recorded ?? 0;
    const counts = new Map(row.counts.map((c) => [`${c.blockId}\u0000${c.value}`, Number(c.count)]));
    const ranges = new Map([...row.numeric, ...row.dates].map((r) => [r.blockId, r]));
    // Time to complete (issue 45): computed with the rows when they were read, else from the kept histogram.
    const median =
      row.medianSeconds !== undefined
        ? row.medianSeconds
        : medianSeconds(row.counts.filter((c) => c.blockId === SECONDS_KEY));
    const computed = computes(form) ? await this.summarizeComputed(workspaceId, form, checked, status) : {};
    return {
      publicId,
      ...summaryFromStats(form.blocks, {
        total,
        // Responses without a recorded path were shown every block (see ResponseStatsRepository's shownOf).
        shown:
          hasLogic(form.blocks) || recorded > 0
            ? (id) => Number(stats.get(id)?.shown ?? 0) + total - recorded
            : undefined,
        first: row.first,
        last: row.last,
        medianSeconds: median,
        answered: (id) => Number(stats.get(id)?.answered ?? 0),
        sum: (id) => Number(stats.get(id)?.sum ?? 0),
        count: (id, value) => counts.get(`${id}\u0000${value}`) ?? 0,
        range: (id) => ranges.get(id) ?? { min: null, max: null },
        latest: (id) => stats.get(id)?.latest ?? [],
      }),
      ...(await this.limitCounts(form)),
      ...computed,
      ...(funnel ? { funnel } : {}),
    };
  }

  /** The cap's and each quota's count and limit (issue 47), on forms that have them: not filtered. */
  private async limitCounts(form: FormRecord): Promise<Partial<LimitCounts>> {
    if (form.maxResponses == null && !form.quotas?.length) return {};
    const counts = await this.access.counts(form.id);
    const cap = counts.find((c) => c.name === CAP);
    const quotas = (form.quotas ?? []).map((q) => ({
      name: q.name,
      limit: q.limit,
      count: counts.find((c) => c.name === q.name)?.count ?? 0,
    }));
    return {
      ...(cap ? { cap: { limit: cap.limit, count: cap.count } } : {}),
      ...(quotas.length ? { quotas } : {}),
    };
  }

  /**
   * The summary of what the responses computed (issue 46): unfiltered from the maintained counts
   * (answer_counts, kept by the sequencer with the blocks'), filtered (a segment too) from one scan
   * of the matches, in a filtered read's slot.
   */
  private async summarizeComputed(
    workspaceId: string,
    form: FormRecord,
    checked: ResponseFilter,
    status: ResponseStatus,
  ): Promise<Pick<FormSummary, 'variables' | 'endings'>> {
    const variables = formVariables(form);
    const keys = [...variables.map((v) => variableKey(v.name)), ENDING_KEY];
    const read = async (tx: EntityManager, filter?: { sql: string; params: unknown[]; source?: string }) => {
      const rows = await this.stats.readComputed(tx, form.id, keys, filter);
      const latest = new Map<string, Array<{ value: string; submittedAt: string }>>();
      for (const v of variables.filter((x) => x.type === 'text'))
        latest.set(v.name, await this.stats.latestText(tx, form.id, v.name, filter));
      return summarizeComputed(
        variables,
        form.compute?.endings ?? [],
        { rows: new Map(rows.map((r) => [r.key, r])), latest: (name) => latest.get(name) ?? [] },
        { variable: variableKey, ending: ENDING_KEY },
      );
    };
    if (!isFiltered(checked) && status === 'completed') return read(currentManager(this.db));
    const params: unknown[] = [form.id]; // $1: the form
    const sql = responseFilterSql(form, checked, params, 'r');
    const source = status === 'partial' ? PARTIAL_SOURCE : status === 'all' ? ALL_SOURCE : undefined;
    return this.filteredRead(workspaceId, (tx) => read(tx, { sql, params, source }));
  }

  /**
   * The summary of a segment (one value of a hidden field or of a choice: segmentOf) from its
   * maintained aggregates, made first if the form has none yet (one scan of the matches, as a
   * filtered summary takes, in a long read's slot, on the primary: it writes them). The scan holds
   * no lock (see startSegment): list and summary reads of the form, its deletes and edits go on
   * meanwhile. Its row may be dropped under it (a delete of a match, an edit that discards
   * answers, the cap): it begins again, and after SEGMENT_BUILD_ATTEMPTS scans in one transaction
   * whose first step's lock lasts through the scan (as every build did before), where nothing can
   * drop it.
   */
  private async segmentSummary(workspaceId: string, form: FormRecord, segment: ResponseSegment): Promise<SummaryRow> {
    const answerable = form.blocks.filter((b) => takesAnswer(b.type));
    const kept = await this.stats.readSegmentSummary(currentManager(this.db), form.id, segment, answerable);
    if (kept) return kept;
    const giveBack = this.longReads.take(workspaceId);
    try {
      for (let attempt = 1; attempt <= SEGMENT_BUILD_ATTEMPTS; attempt++) {
        const made = await this.buildSegment(form, segment, answerable, (work) => inTransaction(this.db, work));
        if (made) return made;
      }
      const made = await inTransaction(this.db, (tx) =>
        this.buildSegment(form, segment, answerable, (work) => work(tx)),
      );
      if (!made) throw new Error(`segment of form ${form.id} dropped under its form's sequencer lock`);
      return made;
    } finally {
      giveBack();
    }
  }

  /**
   * Makes a segment: startSegment, scanSegment, finishSegment, each in a transaction that `step`
   * gives (each its own, or one for all), allowed long statements as a filtered read is. Returns
   * its summary, read in the transaction that found it ready or made it so, under the form's
   * sequencer lock (what was just written); undefined when its row was dropped meanwhile.
   */
  private async buildSegment(
    form: FormRecord,
    segment: ResponseSegment,
    answerable: Block[],
    step: <T>(work: (tx: EntityManager) => Promise<T>) => Promise<T>,
  ): Promise<SummaryRow | undefined> {
    const allowed = <T>(work: (tx: EntityManager) => Promise<T>) =>
      step(async (tx) => {
        await allowLongStatements(tx, FILTERED_READ_MS);
        return work(tx);
      });
    const read = (tx: EntityManager) => this.stats.readSegmentSummary(tx, form.id, segment, answerable);
    const begun = await allowed(async (tx) => {
      const build = await this.stats.startSegment(tx, form.id, segment);
      if (!build) throw notFoundForm(form.publicId); // deleted meanwhile (no form to lock)
      return build === 'ready' ? { made: await read(tx) } : { build };
    });
    if ('made' in begun) return begun.made;
    const scan = await allowed(async (tx) => {
      await withoutJit(tx);
      return this.stats.scanSegment(tx, form.id, segment, begun.build, answerable, countedValues);
    });
    return allowed(async (tx) =>
      (await this.stats.finishSegment(tx, form.id, begun.build, scan)) ? read(tx) : undefined,
    );
  }

  /** { completed, partial } of a form: the maintained counts of sequenced responses and of partials (issue 36). */
  async countsByStatus(formId: string): Promise<{ completed: number; partial: number }> {
    const m = currentManager(this.db);
    const [completed, pages] = await Promise.all([this.stats.total(m, formId), this.partials.pageCounts(m, formId)]);
    return { completed, partial: pages.get(ALL_PAGES) ?? 0 };
  }

  /**
   * Per page in form order: how many responses reached it and how many of those completed. The
   * completed side is read from the maintained aggregates (block_stats.shown of each page_break;
   * the total for the first page and on forms without rules), the partial side from
   * partial_page_counts: no scan, whatever the number of responses.
   */
  async funnel(form: FormRecord): Promise<FunnelStep[]> {
    const m = currentManager(this.db);
    const [row, partials] = await Promise.all([this.stats.readShown(m, form.id), this.partials.pageCounts(m, form.id)]);
    const byId = new Map(form.blocks.map((b) => [b.id, b]));
    const recorded = hasLogic(form.blocks) || row.recorded > 0;
    return pageKeys(form.blocks).map((page) => {
      const completed = page === '' || !recorded ? row.total : (row.shown.get(page) ?? 0) + row.total - row.recorded;
      const title = byId.get(page)?.title;
      return { page, ...(title ? { title } : {}), reached: completed + (partials.get(page) ?? 0), completed };
    });
  }

  /** The maintained aggregates of a form in one statement, and whether responses wait for their seq. */
  private async readSummary(form: FormRecord) {
    return this.stats.readSummary(currentManager(this.db), form.id, this.summarized(form));
  }

  /** The blocks whose values a summary counts (choices, yes/no, the scales' distribution), and those it takes ranges of. */
  private summarized(form: FormRecord) {
    const ids = (types: readonly string[]) => form.blocks.filter((b) => types.includes(b.type)).map((b) => b.id);
    return {
      // With the histogram of the times to complete, kept under a key no block has.
      counted: [...ids([...CHOICE_TYPES, 'ranking', 'matrix', 'yes_no', ...SCALE_TYPES]), SECONDS_KEY],
      numeric: ids(NUMERIC_TYPES),
      dates: ids(['date']),
    };
  }

  /**
   * Imports a response into a form (the demo, tests): validated like every submission, with the
   * given time. `form` was read in the caller's transaction `tx`, if any.
   */
  async create(
    form: FormRecord,
    answers: Record<string, unknown>,
    opts: { source: 'api' | 'web' | 'import'; submittedAt?: Date; hidden?: Record<string, string> },
    tx?: EntityManager,
  ): Promise<ResponseView> {
    const checked = validated(validateResponse(form, answers, opts.hidden, { source: opts.source }));
    const files = namedFiles(form.blocks, answers, checked.answers);
    const insert = async (m: EntityManager) => {
      const [row] = await this.repo.insertMany(m, [
        {
          id: uuidv7(),
          form,
          answers: checked.answers,
          hidden: checked.hidden,
          shown: checked.shown,
          ...outcomeColumns(checked),
          source: opts.source,
          submittedAt: opts.submittedAt,
          limits: this.access.countersOf(
            form,
            answerFacts(checked.answers, checked.hidden, checked.outcome?.variables),
          ),
        },
      ]);
      if (!row) throw new Error(`form ${form.id} is gone or changed since it was read`);
      this.limitReached(form, row);
      // Files an import names are checked and held as a submission's are, in its transaction.
      if (files.length)
        await this.uploads.attach(m, {
          workspaceId: form.workspaceId,
          formId: form.id,
          blocks: form.blocks,
          responseId: row.id,
          files,
        });
      return row;
    };
    const row = tx
      ? await insert(tx)
      : files.length
        ? await inTransaction(this.db, insert)
        : await insert(currentManager(this.db));
    return responseViewer(form)({
      ...row,
      answers: checked.answers,
      hidden: checked.hidden,
      ...outcomeColumns(checked),
    });
  }
}

/**
 * A range filter on a number variable read through its index (ResponsesService.rangeValues): what
 * reading one matching row at random costs, in rows read in order; the most values it may name.
 */
const RANDOM_READ = 4;
const RANGE_VALUES = 1000;

/**
 * A filter whose number of matches the maintained counts hold: equals or in, no since/until, on one
 * choice (multiple_choice, dropdown) or yes/no block (answer_counts), or on one hidden field
 * (hidden_counts); on forms that compute (issue 46), on the ending, or a number variable's equals,
 * in, gt, gte, lt or lte (answer_counts). Its total is then read, not counted, and its first pages read only the rows
 * before them. Those counts are kept by the same statement that gives responses their seq, so they
 * count exactly the sequenced responses the page reads.
 */
function countedFilter(
  form: FormRecord,
  filter: ResponseFilter,
):
  | { blockId: string; values: string[] }
  | { hidden: string; values: string[] }
  | { blockId: string; name: string; compare: { op: 'gt' | 'gte' | 'lt' | 'lte'; value: number } }
  | undefined {
  const where = filter.where;
  if (!where || filter.since !== undefined || filter.until !== undefined) return undefined;
  if (isHiddenLeaf(where)) {
    // Hidden values are strings: a number in the filter matches none (as conditionSql's does).
    const strings = (v: unknown[]) => v.filter((x): x is string => typeof x === 'string');
    if (where.op === 'equals' && typeof where.value === 'string')
      return { hidden: where.hidden, values: [where.value] };
    if (where.op === 'in' && Array.isArray(where.value)) return { hidden: where.hidden, values: strings(where.value) };
    return undefined;
  }
  if (isVariableLeaf(where)) {
    // Issue 46: the ending reached, and number variables, are counted per value (computedOf);
    // a number by its JSON text, so only those whose text JavaScript and PostgreSQL agree on.
    const list =
      where.op === 'equals' ? [where.value] : where.op === 'in' && Array.isArray(where.value) ? where.value : [];
    const ending = where.variable === ENDING_VARIABLE;
    const numbers = !ending && formVariables(form).some((v) => v.name === where.variable && v.type === 'number');
    // A range on a number variable: the counts of the values in it (answer_counts' num, by index).
    if (numbers && ['gt', 'gte', 'lt', 'lte'].includes(where.op) && typeof where.value === 'number')
      return {
        blockId: variableKey(where.variable),
        name: where.variable,
        compare: { op: where.op as 'gt' | 'gte' | 'lt' | 'lte', value: where.value },
      };
    const fits = (x: unknown) =>
      ending ? typeof x === 'string' : numbers && typeof x === 'number' && /^-?\d+(\.\d+)?$/.test(String(x));
    if (!list.length || !list.every(fits)) return undefined;
    return { blockId: ending ? ENDING_KEY : variableKey(where.variable), values: list.map(String) };
  }
  if (!isBlockLeaf(where)) return undefined;
  const block = form.blocks.find((b) => b.id === where.block);
  if (!block || !['multiple_choice', 'dropdown', 'yes_no'].includes(block.type)) return undefined;
  if (where.op === 'equals' && !Array.isArray(where.value)) return { blockId: block.id, values: [String(where.value)] };
  if (where.op === 'in' && Array.isArray(where.value)) return { blockId: block.id, values: where.value.map(String) };
  return undefined;
}

/**
 * The JSON text of `view` around its submittedAt, the second member (`head` ends with its opening
 * quote): head + submittedAt + tail is JSON.stringify of the view with that submittedAt.
 */
export function jsonAroundSubmittedAt(view: ResponseView): { head: string; tail: string } {
  const { id, submittedAt: _, status: _s, startedAt: _b, updatedAt: _u, lastPage: _p, ...rest } = view;
  const tail = `",${JSON.stringify(rest).slice(1, -1)}${timesJson(view)}}`;
  return { head: `{"id":${JSON.stringify(id)},"submittedAt":"`, tail };
}

/**
 * A view's status, startedAt, updatedAt and lastPage as JSON members (each starting with a comma),
 * in that order; the times that are the submission's own (AT_SUBMISSION) written raw, for the
 * insert statement to fill in.
 */
function timesJson(view: ResponseView): string {
  const time = (t: string) => (t === AT_SUBMISSION ? `"${AT_SUBMISSION}"` : JSON.stringify(t));
  let json = '';
  if (view.status !== undefined) json += `,"status":${JSON.stringify(view.status)}`;
  if (view.startedAt !== undefined) json += `,"startedAt":${time(view.startedAt)}`;
  if (view.updatedAt !== undefined) json += `,"updatedAt":${time(view.updatedAt)}`;
  if (view.lastPage !== undefined) json += `,"lastPage":${JSON.stringify(view.lastPage)}`;
  return json;
}

/** A view built before its insert (see AT_SUBMISSION) with the submission's time in place. */
function atSubmission(view: ResponseView, submittedAt: string): ResponseView {
  const at = (t: string | undefined) => (t === AT_SUBMISSION ? submittedAt : t);
  return { ...view, submittedAt, startedAt: at(view.startedAt), updatedAt: at(view.updatedAt) };
}

/**
 * The last page of a path ('' the first page, else its page_break id): of the pages `shown` holds
 * (a response's recorded path), or the form's last page when every block was shown (null).
 */
export function lastPageOf(blocks: Block[], shown: string[] | null | undefined): string {
  const keys = pageKeys(blocks);
  if (!shown) return keys[keys.length - 1];
  const on = new Set(shown);
  return keys.filter((k, i) => i === 0 || on.has(k)).pop() ?? '';
}

/** The furthest page of `reached` in the form's order (pages the form no longer has left out); undefined when none is. */
export function furthestPage(blocks: Block[], reached: string[]): string | undefined {
  const at = new Set(reached);
  return pageKeys(blocks)
    .filter((k) => at.has(k))
    .pop();
}

/**
 * A draft or closed form refusing a submission on the respondent paths (the page's post and its
 * JSON answer): worded for the person answering the form, who cannot reopen it. API callers get the
 * catalog's wording, which points at publish_form.
 */
export function notAccepting(status: string): ApiError {
  return new ApiError(
    'form_not_accepting_responses',
    status === 'closed'
      ? {
          message: 'This form is no longer accepting responses.',
          hint: 'If you still need to answer it, contact the person or organisation who sent you the form.',
        }
      : {
          message: 'This form is not accepting responses yet.',
          hint: 'Try again later, or contact the person or organisation who sent you the form.',
        },
  );
}

export function notFoundResponse(publicId: string, responseId: string): ApiError {
  return new ApiError('not_found', {
    message: `No response "${responseId}" on the form "${publicId}".`,
    hint: 'list_responses shows the responses of a form with their ids.',
  });
}

/** A checked response, or its refusal thrown (see responseRefusal: check_response words it the same). */
export function validated(checked: CheckedResponse, wording: AnswerWording = 'api'): CheckedResponse {
  const refused = responseRefusal(checked, wording);
  if (refused) throw refused;
  return checked;
}

/**
 * Shows stored responses of a form: answers with labels, keyed by block id or (answersBy "ref")
 * by ref where the block has one; hidden values on forms that declare hidden fields (or when the
 * response carries some). Built once per form.
 */
export function responseViewer(form: FormRecord, answersBy: AnswersBy = 'id'): (row: ResponseRow) => ResponseView {
  const labelled = answersViewer(form.blocks);
  const refs = new Map(form.blocks.filter((b) => b.ref).map((b) => [b.id, b.ref!]));
  const byRef = answersBy === 'ref' && refs.size > 0;
  const declared = (form.hiddenFields?.length ?? 0) > 0;
  const outcome = outcomeViewer(form);
  return (row) => {
    let answers = labelled(row.answers);
    if (byRef) answers = Object.fromEntries(Object.entries(answers).map(([id, v]) => [refs.get(id) ?? id, v]));
    const submittedAt = row.submittedAt.toISOString();
    const view: ResponseView = { id: row.id, submittedAt, answers };
    const hidden = row.hidden ?? {};
    if (declared || Object.keys(hidden).length) view.hidden = hidden;
    // Completed (issue 45): started at its first save (or when submitted), last changed when completed,
    // its last page stored with it (or, for one stored before that, the last page of its recorded path).
    view.status = 'completed';
    view.startedAt = row.startedAt ? row.startedAt.toISOString() : submittedAt;
    view.updatedAt = submittedAt;
    view.lastPage = row.lastPage ?? lastPageOf(form.blocks, row.shown);
    outcome?.(view, row);
    return view;
  };
}

/**
 * The answer of create_response and update_response keyed as the caller sent them (issue 49): a
 * block sent by ref under its ref, one sent by id under its id. The blocks not sent (update_response's
 * kept answers) are keyed by ref when the caller named by ref every block with a ref it sent (as
 * answersBy "ref" keys them: a block without a ref by its id), else by id. `view` keyed by id.
 */
export function keyedAsSent(blocks: Block[], sent: Record<string, unknown>): <V extends ResponseView>(view: V) => V {
  const named = blocks.filter((b) => b.ref);
  const refsOnly = named.some((b) => Object.hasOwn(sent, b.ref!)) && !named.some((b) => Object.hasOwn(sent, b.id));
  const keys = new Map(
    named
      .filter((b) => refsOnly || (Object.hasOwn(sent, b.ref!) && !Object.hasOwn(sent, b.id)))
      .map((b) => [b.id, b.ref!]),
  );
  return (view) =>
    keys.size
      ? { ...view, answers: Object.fromEntries(Object.entries(view.answers).map(([id, v]) => [keys.get(id) ?? id, v])) }
      : view;
}

/** What a checked response computed (issue 46), as the columns variables and ending hold it; nothing on forms that compute nothing. */
export function outcomeColumns(checked: CheckedResponse): Pick<ResponseRow, 'variables' | 'ending'> {
  return checked.outcome ? { variables: checked.outcome.variables, ending: checked.outcome.ending } : {};
}

/** On forms that compute (issue 46), adds a response's variables and ending to its view. */
function outcomeViewer(form: FormRecord): ((view: ResponseView, row: ResponseRow) => void) | undefined {
  if (!computes(form)) return undefined;
  return (view, row) => {
    // A partial's row has none stored (undefined): what its answers compute so far; it has reached no ending yet.
    const outcome = row.variables === undefined ? computeOutcome(form, row.answers, row.hidden ?? {}) : undefined;
    view.variables = outcome?.variables ?? row.variables ?? {};
    view.ending = outcome ? null : (row.ending ?? null);
  };
}

/**
 * Shows partial responses as responseViewer shows completed ones, with status "partial" and their
 * times; lastPage is the furthest page it reached (the page it resumes on may be an earlier one).
 */
export function partialViewer(form: FormRecord, answersBy: AnswersBy = 'id'): (row: PartialRow) => ResponseView {
  const view = responseViewer(form, answersBy);
  return (row) => ({
    ...view({ id: row.id, submittedAt: row.updatedAt, answers: row.answers, hidden: row.hidden }),
    submittedAt: null,
    status: 'partial',
    startedAt: row.startedAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    lastPage: furthestPage(form.blocks, row.pagesReached ?? []) ?? row.lastPage,
  });
}

/** { blockId: ref } of the answered blocks that have a ref, for webhooks; undefined when none has. */
function answeredRefs(blocks: Block[], answers: Record<string, unknown>): Record<string, string> | undefined {
  const refs = blocks.filter((b) => b.ref && Object.hasOwn(answers, b.id)).map((b) => [b.id, b.ref!]);
  return refs.length ? Object.fromEntries(refs) : undefined;
}

/** What insertChecked's statement does besides the insert: claim a key, hold uploads. */
interface WithInsert {
  claim?: StatementClaim;
  uploads?: NewResponse['uploads'];
}

/** Whether each upload the statement would hold fits its block as it is now (those not found: the statement refuses them). */
function fitBlocks(
  blocks: Block[],
  uploads: Array<{ id: string; blockId: string }>,
  described: Record<string, unknown>,
) {
  const files = new Map(
    fileKeys(blocks)
      .flatMap((key) => (described[key] ?? []) as UploadDescription[])
      .map((f) => [f.uploadId, f]),
  );
  return uploads.every((u) => {
    const file = files.get(u.id);
    return (
      !file ||
      !blockProblem(
        blocks.find((b) => b.id === u.blockId),
        file,
      )
    );
  });
}

/** The uploads a submission names, to hold with it; undefined when one is named twice (the transactional path refuses it). */
function uploadsToHold(
  blocks: Block[],
  answers: Record<string, unknown>,
  stored: Record<string, unknown>,
): Array<{ id: string; blockId: string }> | undefined {
  const named = namedFiles(blocks, answers, stored).flatMap((f) =>
    f.uploadIds.map((id) => ({ id, blockId: f.blockId })),
  );
  return new Set(named.map((n) => n.id)).size === named.length ? named : undefined;
}

/**
 * The file_upload answers of a submission: per block, the key the caller used (id or ref, for
 * error paths) and the upload ids as stored. Without `stored`, whether any file block is answered.
 */
function namedFiles(
  blocks: Block[],
  answers: Record<string, unknown>,
  stored: Record<string, unknown> = answers,
): Array<{ blockId: string; key: string; uploadIds: string[] }> {
  return blocks.flatMap((b) => {
    if (b.type !== 'file_upload') return [];
    const key = b.id in answers || !b.ref || !(b.ref in answers) ? b.id : b.ref;
    const value = stored === answers ? answers[key] : stored[b.id];
    const uploadIds = (
      Array.isArray(value) ? value : value === undefined || value === null || value === '' ? [] : [value]
    ) as string[];
    return uploadIds.length ? [{ blockId: b.id, key, uploadIds }] : [];
  });
}

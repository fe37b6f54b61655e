/**
 * Who may answer a form, how many, and when (issue 47). One way in for the responses service, the
 * respondent page and the tools: refusal(form) says why a form takes no answer now (its schedule,
 * see forms/schedule.ts, or its cap), and closes a form its closesAt has passed.
 *
 * Caps and quotas (forms/limits.ts) are counters in response_limits: the store statement locks
 * the ones a response counts toward (countersOf) and admits only responses that fit (migration
 * 1796000590000); a refused one is thrown here as 409 response_limit_reached / quota_full
 * (fullError). The statement that fills a cap says so, and closeForCap closes the form once
 * (form.closed, reason "cap"). update_form writes the counters (keepLimits); a delete takes its
 * response off them (uncount). The sweep, run on every
 * instance, persists those closes for forms no one reads: each due form is closed by ONE
 * transaction (UPDATE ... WHERE status = 'published' RETURNING: a second instance's update finds
 * the row closed), which emits its form.closed event (reason "schedule") through the outbox.
 */
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { ApiError } from '../common/errors/api-error';
import { currentManager, inTransaction } from '../database/transaction';
import { FormRecord, FormsService } from '../forms/forms.service';
import { WebhookOutbox } from '../webhooks/webhook-outbox.service';
import { closedBySchedule, scheduleRefusal } from '../forms/schedule';
import { answerFacts, CAP, countersOf, LimitedForm, Quota, quotasMatched } from '../forms/limits';
import { conditionSql } from '../forms/conditions/sql';
import type { Facts } from '../forms/conditions';

/** A quota's or the cap's count (summarize_responses, the results page). */
export interface LimitCount {
  name: string;
  limit: number;
  count: number;
}

/** A form's cap and quotas with their counts, as summarize_responses and the results page show them. */
export interface LimitCounts {
  cap: { limit: number; count: number };
  quotas: LimitCount[];
}

/** How often an instance closes the forms whose closesAt passed (a read closes one at once). */
export const SCHEDULE_SWEEP_EVERY_MS = 15_000;
const SWEEP_BATCH = 100;

@Injectable()
export class AccessService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Access');
  private timer?: NodeJS.Timeout;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly forms: FormsService,
    private readonly webhooks: WebhookOutbox,
  ) {}

  onModuleInit() {
    this.forms.dueCloser = (formId) => this.closeDue(formId);
    this.forms.limitsKeeper = (tx, form, how) => this.keepLimits(tx, form, how);
    this.timer = setInterval(
      () => void this.sweep().catch((err: Error) => this.logger.warn(`schedule sweep failed: ${err.message}`)),
      SCHEDULE_SWEEP_EVERY_MS,
    );
    this.timer.unref();
  }

  onModuleDestroy() {
    clearInterval(this.timer);
  }

  /**
   * Why `form` takes no answer at `now` by its schedule (409 form_closed, 409 form_not_open), or
   * undefined. A draft is not this service's to refuse (its status says it). Synchronous: the
   * submission path asks it of every response.
   */
  whyClosed(form: FormRecord, now = new Date(), wording: 'api' | 'person' = 'api'): ApiError | undefined {
    if (form.status === 'draft' || (!form.opensAt && !form.closesAt)) return undefined;
    return scheduleRefusal(form, now, wording);
  }

  /** Whether the schedule lets `form` take answers at `now`. */
  admits(form: FormRecord, now = new Date()): boolean {
    return !this.whyClosed(form, now);
  }

  /**
   * whyClosed, and a form found past its closesAt is closed now (its status and form.closed
   * event, once), rather than at the next sweep.
   */
  async refusal(form: FormRecord, wording: 'api' | 'person' = 'api', now = new Date()): Promise<ApiError | undefined> {
    const why = this.whyClosed(form, now, wording);
    if (why && form.closeDue && closedBySchedule(form, now)) await this.closeDue(form.id);
    return why;
  }

  /** Closes every published form whose closesAt passed, in batches; how many it closed. */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.closeDue();
      total += n;
      if (n < SWEEP_BATCH) return total;
    }
  }

  /** Closes the due forms (one, or a batch), each with its form.closed event, in one transaction. */
  private closeDue(formId?: string): Promise<number> {
    return inTransaction(this.db, async (tx) => {
      const closed = await this.forms.closeDue(tx, SWEEP_BATCH, formId);
      for (const form of closed)
        await this.webhooks.emit(tx, form.workspaceId, 'form.closed', {
          ...this.forms.view(form, true),
          reason: 'schedule',
        });
      return closed.length;
    });
  }

  // ---- Caps and quotas ----

  /** The counters a completed response with these facts counts toward (see countersOf). */
  countersOf(form: LimitedForm, facts: Facts): string[] | undefined {
    return countersOf(form, facts);
  }

  /**
   * The refusal of a response the store statement left out because `counter` is full: the cap's
   * 409 response_limit_reached, or the quota's 409 quota_full naming it; worded for a program or
   * the person filling in the form.
   */
  fullError(form: LimitedForm, counter: string, wording: 'api' | 'person' = 'api'): ApiError {
    if (counter === CAP)
      return new ApiError('response_limit_reached', {
        message:
          wording === 'api'
            ? `This form has the ${form.maxResponses} ${form.maxResponses === 1 ? 'response' : 'responses'} its maxResponses allows and takes no more.`
            : 'This form has all the responses it needs and takes no more.',
        hint:
          wording === 'api'
            ? 'Raise maxResponses (or set null) with update_form, then publish_form reopens it.'
            : 'Thank you for your time. If you still need to answer it, contact the person or organisation who sent you the form.',
      });
    const quota = form.quotas?.find((q) => q.name === counter);
    return new ApiError('quota_full', {
      message:
        wording === 'api'
          ? `The quota "${counter}" is full (${quota?.limit ?? '?'} responses): these answers count toward it.`
          : 'This form has all the answers it needs from people who answer as you did.',
      hint:
        wording === 'api'
          ? `Raise its limit with update_form (quotas), or send answers outside it.`
          : 'Thank you for your time.',
      details: [{ path: '/answers', message: `match the full quota "${counter}"` }],
    });
  }

  /**
   * The full quota the answers so far match (a respondent is screened out at the page where they
   * match): the first in the form's order, with its count read; undefined when none is.
   */
  async fullQuotaMatched(form: LimitedForm & { id: string }, facts: Facts): Promise<Quota | undefined> {
    const matched = quotasMatched(form, facts);
    if (!matched.length) return undefined;
    const counts = await this.counts(form.id);
    return matched.find((q) => counts.some((c) => c.name === q.name && c.count >= c.limit));
  }

  /** 409 response_limit_reached when the form's cap is reached (the page then says it is full), else undefined. */
  async whyFull(form: LimitedForm & { id: string }, wording: 'api' | 'person' = 'api'): Promise<ApiError | undefined> {
    if (form.maxResponses == null) return undefined;
    const cap = (await this.counts(form.id)).find((c) => c.name === CAP);
    return cap && cap.count >= cap.limit ? this.fullError(form, CAP, wording) : undefined;
  }

  /** The form's counters: its cap (name '') and quotas, each with its limit and count. */
  async counts(formId: string, m: EntityManager = currentManager(this.db)): Promise<LimitCount[]> {
    return m.query(`SELECT name, max AS "limit", count FROM response_limits WHERE form_id = $1 ORDER BY name`, [
      formId,
    ]);
  }

  /**
   * Closes a published form whose cap is reached, with its form.closed event (reason "cap"), once
   * however many submissions see it full: the update finds the row closed the second time.
   */
  async closeForCap(formId: string): Promise<void> {
    await inTransaction(this.db, async (tx) => {
      // An UPDATE answers [rows, count].
      const [[row]] = (await tx.query(
        `UPDATE forms f SET status = 'closed', closed_at = clock_timestamp(), version = version + 1, updated_at = clock_timestamp()
          WHERE f.id = $1 AND f.status = 'published'
            AND EXISTS (SELECT 1 FROM response_limits l WHERE l.form_id = f.id AND l.name = '' AND l.count >= l.max)
         RETURNING f.workspace_id AS "workspaceId", f.public_id AS "publicId"`,
        [formId],
      )) as [Array<{ workspaceId: string; publicId: string }>, number];
      if (!row) return;
      const form = await this.forms.get(row.workspaceId, row.publicId, tx);
      await this.webhooks.emit(tx, form.workspaceId, 'form.closed', { ...this.forms.view(form, true), reason: 'cap' });
    });
  }

  /**
   * Writes the form's counters after its limits or blocks changed (in the changing transaction,
   * the form locked, so no response is being stored meanwhile): the cap counts its responses, a
   * quota those its condition matches. A cap sent below the responses stored is refused, unless
   * `closeNow`: then it stays, and the form closes now (form.closed, reason "cap").
   */
  private async keepLimits(
    tx: EntityManager,
    form: FormRecord,
    { closeNow, capSent }: { closeNow: boolean; capSent: boolean },
  ): Promise<void> {
    await tx.query('DELETE FROM response_limits WHERE form_id = $1', [form.id]);
    if (form.maxResponses != null) {
      const [{ n }] = await tx.query('SELECT count(*)::int AS n FROM responses WHERE form_id = $1', [form.id]);
      if (n > form.maxResponses && capSent && !closeNow)
        throw new ApiError('invalid_arguments', {
          message: `maxResponses ${form.maxResponses} is below the ${n} responses this form already has.`,
          hint: `Set maxResponses to ${n} or more, or send closeNow: true to keep it and close the form now.`,
          details: [{ path: '/maxResponses', message: `must be at least ${n}, the responses stored` }],
        });
      await tx.query('INSERT INTO response_limits (form_id, name, max, count) VALUES ($1, $2, $3, $4)', [
        form.id,
        CAP,
        form.maxResponses,
        n,
      ]);
      if (closeNow && n >= form.maxResponses && form.status === 'published') {
        await this.forms.setStatus(form.id, 'closed', tx);
        const closed = await this.forms.get(form.workspaceId, form.publicId, tx);
        await this.webhooks.emit(tx, form.workspaceId, 'form.closed', {
          ...this.forms.view(closed, true),
          reason: 'cap',
        });
      }
    }
    for (const q of form.quotas ?? []) {
      const params: unknown[] = [form.id, q.name, q.limit];
      const where = conditionSql(q.when, params);
      await tx.query(
        `INSERT INTO response_limits (form_id, name, max, count)
         SELECT $1, $2, $3, count(*) FROM responses r WHERE r.form_id = $1 AND ${where}`,
        params,
      );
    }
  }

  /** Takes a response being deleted off the counters it counted toward. */
  async uncount(
    tx: EntityManager,
    form: LimitedForm & { id: string },
    row: {
      answers: Record<string, unknown>;
      hidden?: Record<string, string>;
      variables?: Record<string, number | string> | null;
    },
  ): Promise<void> {
    const names = countersOf(form, answerFacts(row.answers, row.hidden, row.variables));
    if (names)
      await tx.query(
        'UPDATE response_limits SET count = greatest(count - 1, 0) WHERE form_id = $1 AND name = ANY ($2::text[])',
        [form.id, names],
      );
  }
}

/**
 * Who may answer a form, and when (issue 47). One way in for the responses service, the
 * respondent page and the tools: refusal(form) says why a form takes no answer now (today: its
 * schedule, see forms/schedule.ts), and closes a form its closesAt has passed. The sweep, run on every
 * instance, persists those closes for forms no one reads: each due form is closed by ONE
 * transaction (UPDATE ... WHERE status = 'published' RETURNING: a second instance's update finds
 * the row closed), which emits its form.closed event (reason "schedule") through the outbox.
 */
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ApiError } from '../common/errors/api-error';
import { inTransaction } from '../database/transaction';
import { FormRecord, FormsService } from '../forms/forms.service';
import { WebhookOutbox } from '../webhooks/webhook-outbox.service';
import { closedBySchedule, scheduleRefusal } from '../forms/schedule';

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
}

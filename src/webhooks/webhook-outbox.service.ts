import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { eventBody, newEventId, WebhookEvent } from './events';
import { WebhooksRepository } from './webhooks.repository';
import { readAtScrape } from '../observability/metrics';

/**
 * Records events in the transaction that makes the change: one delivery per enabled endpoint of
 * the workspace subscribed to the event, and nothing when there is none, written by ONE statement
 * (WebhooksRepository.insertEvent): the event commits with the change or not at all (a
 * transactional outbox). The delivery loop sends it later, off the request path.
 */
@Injectable()
export class WebhookOutbox {
  constructor(private readonly repository: WebhooksRepository) {
    readAtScrape.webhookOutbox = () => repository.outboxStats();
  }

  /**
   * Records an event of a change, in the change's transaction `tx`. `data` is the event's data, or
   * a function that reads it (for data that costs a query, like a response about to be deleted):
   * it is then called only when some endpoint wants the event.
   */
  async emit(
    tx: EntityManager,
    workspaceId: string,
    type: WebhookEvent,
    data: object | (() => Promise<object>),
  ): Promise<void> {
    if (typeof data === 'function') {
      if (!(await this.repository.subscribed(tx, workspaceId, type))) return;
      data = await data();
    }
    await this.repository.insertEvent(tx, workspaceId, type, newEventId(), eventBody(type, data));
  }

  /**
   * Deleted answers do not live on in the delivery log: redacts, in the delete's transaction `tx`,
   * the stored payloads of the workspace's deliveries that carry them (those of one response, for
   * delete_response; of every response of a form, for delete_form), so list_webhook_deliveries
   * shows them without answers and redeliver_webhook refuses them; a response.created not yet sent
   * is not sent, a response.deleted is sent redacted (see WebhooksRepository REDACT_*). Call it
   * after the deletion's own event is emitted and before the response or form row is deleted.
   */
  async forgetAnswers(
    tx: EntityManager,
    workspaceId: string,
    of: { responseId: string } | { formPublicId: string },
  ): Promise<void> {
    await this.repository.redactAnswers(tx, workspaceId, of);
  }
}

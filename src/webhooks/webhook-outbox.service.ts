import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { eventBody, newEventId, WebhookEvent } from './events';

/**
 * Inserts one delivery per enabled endpoint of the workspace subscribed to the event, and
 * nothing when there is none, in ONE statement, inside the transaction that makes the change:
 * the event commits with the change or not at all (a transactional outbox). The delivery loop
 * sends it later, off the request path.
 */
const INSERT_SQL = `
INSERT INTO webhook_deliveries (workspace_id, endpoint_id, event_id, event_type, payload, next_attempt_at)
SELECT e.workspace_id, e.id, $3, $2, $4, now()
  FROM webhook_endpoints e
 WHERE e.workspace_id = $1 AND e.enabled AND $2 = ANY (e.events)`;

const SUBSCRIBED_SQL = `SELECT 1 FROM webhook_endpoints e WHERE e.workspace_id = $1 AND e.enabled AND $2 = ANY (e.events) LIMIT 1`;

@Injectable()
export class WebhookOutbox {
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
      const subscribed: unknown[] = await tx.query(SUBSCRIBED_SQL, [workspaceId, type]);
      if (subscribed.length === 0) return;
      data = await data();
    }
    await tx.query(INSERT_SQL, [workspaceId, type, newEventId(), eventBody(type, data)]);
  }
}

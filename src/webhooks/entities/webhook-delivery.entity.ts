import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One event for one endpoint: the transactional outbox (inserted by the transaction that made the
 * change) and the delivery log. A pending row is due at next_attempt_at; an instance claims it
 * (FOR UPDATE SKIP LOCKED) by setting claim_token and claimed_until, so a claim whose instance
 * died is due again once claimed_until passes. The claim changes no indexed column, so PostgreSQL
 * can update the row in place (HOT). Kept 30 days.
 */
@Entity({ name: 'webhook_deliveries' })
@Index('IDX_webhook_deliveries_due', ['nextAttemptAt'], { where: `"status" = 'pending'` })
@Index('IDX_webhook_deliveries_paused', ['endpointId', 'nextAttemptAt'], { where: `"status" = 'paused'` })
// Also how the purge finds old rows: no index on created_at alone, each costs every delivery's writes.
@Index('IDX_webhook_deliveries_endpoint', ['endpointId', 'createdAt'])
export class WebhookDeliveryEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId: string;

  /**
   * Not a foreign key, on purpose (migration WebhookDeliveriesNoEndpointKey: the key share-locked the
   * endpoint's row on every submission): delete_webhook deletes an endpoint's deliveries itself, and a
   * claim deletes a delivery whose endpoint is gone (a submission that raced the delete wrote it).
   */
  @Column({ name: 'endpoint_id', type: 'uuid' })
  endpointId: string;

  /** The webhook-id header (msg_...): the same for every attempt and redelivery of the event. */
  @Column({ name: 'event_id', type: 'text' })
  eventId: string;

  @Column({ name: 'event_type', type: 'text' })
  eventType: string;

  /** The JSON body exactly as sent (text, so every attempt signs the same bytes). */
  @Column({ type: 'text' })
  payload: string;

  /**
   * pending; paused (due, but its endpoint is disabled or its workspace on Free: out of the due
   * index until both allow it again; shown as pending); delivered; or failed (every attempt of the
   * schedule failed, or the endpoint answered 410).
   */
  @Column({ type: 'text', default: 'pending' })
  status: string;

  @Column({ name: 'attempt_count', type: 'integer', default: 0 })
  attemptCount: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', nullable: true })
  nextAttemptAt: Date | null;

  /** Set by the instance that claimed the row: only its result may change the row. */
  @Column({ name: 'claim_token', type: 'uuid', nullable: true })
  claimToken: string | null;

  /** The claim's lease: past it, another instance may claim the row again. */
  @Column({ name: 'claimed_until', type: 'timestamptz', nullable: true })
  claimedUntil: Date | null;

  /**
   * Why the payload no longer holds the answers it was written with: 'response_deleted' or
   * 'form_deleted' (null: as written). Set by the delete's own transaction; such a delivery is not
   * sent again (redeliver_webhook answers 404), and one not yet delivered is not sent at all
   * (response.created) or is sent redacted (response.deleted).
   */
  @Column({ type: 'text', nullable: true })
  redacted: string | null;

  /** The W3C traceparent of the request that queued it (tracing on), for the delivery's span to link to. */
  @Column({ type: 'text', nullable: true })
  traceparent: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}

import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { WebhookDeliveryEntity } from './webhook-delivery.entity';

/** One HTTP attempt of a delivery: what the endpoint answered (body cut to 2 KB), or why it failed. */
@Entity({ name: 'webhook_attempts' })
@Index('IDX_webhook_attempts_delivery', ['deliveryId', 'attemptedAt'])
export class WebhookAttemptEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'delivery_id', type: 'uuid' })
  deliveryId: string;

  @Column({ name: 'attempted_at', type: 'timestamptz' })
  attemptedAt: Date;

  /** The HTTP status, null when no answer came (timeout, refused connection, refused address). */
  @Column({ name: 'status_code', type: 'smallint', nullable: true })
  statusCode: number | null;

  @Column({ name: 'duration_ms', type: 'integer' })
  durationMs: number;

  @Column({ type: 'text', nullable: true })
  error: string | null;

  @Column({ name: 'response_body', type: 'text', nullable: true })
  responseBody: string | null;

  /** When the next attempt was scheduled after this one (null: none). */
  @Column({ name: 'next_attempt_at', type: 'timestamptz', nullable: true })
  nextAttemptAt: Date | null;

  @ManyToOne(() => WebhookDeliveryEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'delivery_id' })
  delivery?: WebhookDeliveryEntity;
}

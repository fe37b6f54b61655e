import { Type } from '@sinclair/typebox';
import { StringEnum } from '../common/validation/schema-validator';
import { WEBHOOK_EVENTS } from './events';
import { MAX_URL_LENGTH } from './url-safety';

/** Every webhook tool needs the admin role: endpoints, their secrets and deliveries are the workspace's integrations. */
export const WEBHOOK_READ = { scope: 'webhooks:read', write: false, minRole: 'admin' } as const;
export const WEBHOOK_WRITE = { scope: 'webhooks:write', write: true, minRole: 'admin' } as const;

export const WebhookId = Type.String({ format: 'uuid' });
export const DeliveryId = Type.String({ format: 'uuid' });
export const EventType = StringEnum(WEBHOOK_EVENTS);
export const EventList = Type.Array(EventType, {
  minItems: 1,
  uniqueItems: true,
  description: 'The events to send to this endpoint.',
});
export const WebhookUrl = Type.String({
  minLength: 1,
  maxLength: MAX_URL_LENGTH,
  description: 'The https URL to POST events to; its host must resolve to public addresses only.',
});
/** The longest description an endpoint may carry (the tools' schema and the settings page). */
export const MAX_DESCRIPTION_LENGTH = 500;

export const WebhookDescription = Type.Union([Type.String({ maxLength: MAX_DESCRIPTION_LENGTH }), Type.Null()], {
  description: `A note for people, at most ${MAX_DESCRIPTION_LENGTH} characters.`,
});

const Timestamp = Type.String({ format: 'date-time' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

export const WebhookSchema = Type.Object(
  {
    id: Type.String(),
    url: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    events: Type.Array(Type.String()),
    enabled: Type.Boolean(),
    disabledReason: Type.Union([Type.String(), Type.Null()], {
      description: 'Why Formwork disabled it (410 Gone, or failing for 5 days).',
    }),
    disabledAt: NullableTimestamp,
    failingSince: NullableTimestamp,
    previousSecretExpiresAt: NullableTimestamp,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { additionalProperties: false },
);

export const WebhookWithSecretSchema = Type.Object(
  {
    ...WebhookSchema.properties,
    secret: Type.String({
      description: 'The signing secret (whsec_...). Shown only now: store it where your receiver can read it.',
    }),
  },
  { additionalProperties: false },
);

export const AttemptSchema = Type.Object(
  {
    attemptedAt: Timestamp,
    statusCode: Type.Union([Type.Integer(), Type.Null()]),
    durationMs: Type.Integer({ minimum: 0 }),
    error: Type.Union([Type.String(), Type.Null()]),
    responseBody: Type.Union([Type.String(), Type.Null()], { description: "The first 2 KB of the endpoint's answer." }),
    nextAttemptAt: NullableTimestamp,
  },
  { additionalProperties: false },
);

export const DeliverySchema = Type.Object(
  {
    id: Type.String(),
    webhookId: Type.String(),
    eventId: Type.String({ description: 'The webhook-id header: the same on every attempt and redelivery.' }),
    type: Type.String(),
    status: StringEnum(['pending', 'delivered', 'failed'] as const),
    createdAt: Timestamp,
    attemptCount: Type.Integer({ minimum: 0 }),
    nextAttemptAt: Type.Union([Timestamp, Type.Null()]),
    payload: Type.Unsafe<Record<string, unknown>>({
      type: 'object',
      description: 'The event as sent: { type, timestamp, data }.',
    }),
    redacted: Type.Union([StringEnum(['response_deleted', 'form_deleted'] as const), Type.Null()], {
      description:
        "The answers it carried were deleted: the payload keeps the response's id and submittedAt; not sent again.",
    }),
    attempts: Type.Array(AttemptSchema),
  },
  { additionalProperties: false },
);

/** The arguments of the tools that act on one endpoint. */
export const WebhookRef = Type.Object({ webhookId: WebhookId }, { additionalProperties: false });

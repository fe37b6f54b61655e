import { Type } from '@sinclair/typebox';
import { WEBHOOK_EVENTS } from './events';
import { MAX_URL_LENGTH } from './url-safety';

/** Every webhook tool needs the admin role: endpoints, their secrets and deliveries are the workspace's integrations. */
export const WEBHOOK_READ = { scope: 'webhooks:read', write: false, minRole: 'admin' } as const;
export const WEBHOOK_WRITE = { scope: 'webhooks:write', write: true, minRole: 'admin' } as const;

export const WebhookId = Type.String({
  format: 'uuid',
  description: 'Id of the webhook endpoint (from list_webhooks).',
});
export const DeliveryId = Type.String({
  format: 'uuid',
  description: 'Id of a delivery (from list_webhook_deliveries).',
});
export const EventType = Type.Union(
  WEBHOOK_EVENTS.map((e) => Type.Literal(e)),
  { description: `An event type: ${WEBHOOK_EVENTS.join(', ')}.` },
);
export const EventList = Type.Array(EventType, {
  minItems: 1,
  uniqueItems: true,
  description: 'The events to send to this endpoint (at least one).',
});
export const WebhookUrl = Type.String({
  minLength: 1,
  maxLength: MAX_URL_LENGTH,
  description: 'Where to POST the events: an https:// URL whose host resolves to public addresses only.',
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
      description: 'Why Formwork disabled the endpoint (410 Gone, or 5 days of failures); null otherwise.',
    }),
    disabledAt: NullableTimestamp,
    failingSince: Type.Union([Timestamp, Type.Null()], {
      description:
        'The first failed attempt since the last success; after 5 days of failures the endpoint is disabled.',
    }),
    previousSecretExpiresAt: Type.Union([Timestamp, Type.Null()], {
      description: 'After a rotation: until when the previous secret still signs beside the new one.',
    }),
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
    statusCode: Type.Union([Type.Integer(), Type.Null()], {
      description: 'The HTTP status the endpoint answered; null when no answer came.',
    }),
    durationMs: Type.Integer({ minimum: 0 }),
    error: Type.Union([Type.String(), Type.Null()]),
    responseBody: Type.Union([Type.String(), Type.Null()], { description: "The first 2 KB of the endpoint's answer." }),
    nextAttemptAt: Type.Union([Timestamp, Type.Null()], {
      description: 'When the next attempt was scheduled after this one; null when none was.',
    }),
  },
  { additionalProperties: false },
);

export const DeliverySchema = Type.Object(
  {
    id: Type.String(),
    webhookId: Type.String(),
    eventId: Type.String({ description: 'The webhook-id header: the same on every attempt and redelivery.' }),
    type: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
    createdAt: Timestamp,
    attemptCount: Type.Integer({ minimum: 0 }),
    nextAttemptAt: Type.Union([Timestamp, Type.Null()]),
    payload: Type.Unknown({ description: 'The event as sent: { type, timestamp, data }.' }),
    redacted: Type.Union([Type.Literal('response_deleted'), Type.Literal('form_deleted'), Type.Null()], {
      description:
        "Set when the answers this delivery carried were deleted (delete_response, delete_form): the payload keeps the response's id and submittedAt only, and the delivery is not sent again.",
    }),
    attempts: Type.Array(AttemptSchema, { description: 'Every attempt, oldest first.' }),
  },
  { additionalProperties: false },
);

/** The arguments of the tools that act on one endpoint. */
export const WebhookRef = Type.Object({ webhookId: WebhookId }, { additionalProperties: false });

import { randomBase62 } from '../common/ids';

/** Every event a webhook endpoint can subscribe to. */
export const WEBHOOK_EVENTS = [
  'response.created',
  'response.deleted',
  'form.created',
  'form.updated',
  'form.published',
  'form.closed',
  'form.deleted',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The webhook-id of an event (Standard Webhooks calls it the message id): the same on every attempt. */
export const newEventId = () => `msg_${randomBase62(24)}`;

/**
 * The body sent for an event: `{ type, timestamp, data }`, with `test: true` added for the
 * events of send_test_webhook. Written once, stored as text, and signed byte for byte on every attempt.
 */
export function eventBody(type: string, data: unknown, opts: { test?: boolean; at?: Date } = {}): string {
  return JSON.stringify({
    type,
    timestamp: (opts.at ?? new Date()).toISOString(),
    ...(opts.test ? { test: true } : {}),
    data,
  });
}

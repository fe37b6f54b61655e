import { randomBase62, randomIdBytes } from '../common/ids';

/** Every event a webhook endpoint can subscribe to. */
export const WEBHOOK_EVENTS = [
  'response.created',
  'response.deleted',
  /** A partial response reached a new page (issue 36); sent only to endpoints that list it. */
  'response.partial_saved',
  'form.created',
  'form.updated',
  'form.published',
  'form.closed',
  'form.deleted',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The webhook-id of an event (Standard Webhooks calls it the message id): the same on every attempt. */
export const newEventId = () => `msg_${randomBase62(24, randomIdBytes)}`;

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

/**
 * The body of a response.created event (eventBody's layout, byte for byte) in two parts, `head`
 * and `tail`, around the response's submittedAt: the statement that stores the response writes
 * the event too, and puts its own clock's value in between (as ISO text, UTC, milliseconds, as
 * get_response shows it). Everything else is known before that statement runs.
 */
export function responseCreatedBody(
  form: { publicId: string; title: string },
  response: {
    id: string;
    answers: Record<string, unknown>;
    /** The ref of each answered block that has one: { blockId: ref } (only when there is one). */
    refs?: Record<string, string>;
    /** The response's hidden values (only on forms with hidden fields). */
    hidden?: Record<string, string>;
    /** On forms that compute (issue 46): its variables and ending. */
    variables?: Record<string, number | string>;
    ending?: string | null;
  },
  at = new Date(),
  /** Members written after those, as JSON text starting with a comma (its status, times and last page). */
  more = '',
): { head: string; tail: string } {
  const formJson = JSON.stringify({ publicId: form.publicId, title: form.title });
  // answers, then refs and hidden when present (written piece by piece: object rest costs more)
  const refs = response.refs === undefined ? '' : `,"refs":${JSON.stringify(response.refs)}`;
  const hidden = response.hidden === undefined ? '' : `,"hidden":${JSON.stringify(response.hidden)}`;
  const outcome =
    response.variables === undefined
      ? ''
      : `,"variables":${JSON.stringify(response.variables)},"ending":${JSON.stringify(response.ending ?? null)}`;
  return {
    head: `{"type":"response.created","timestamp":"${at.toISOString()}","data":{"form":${formJson},"response":{"id":${JSON.stringify(response.id)},"submittedAt":"`,
    tail: `","answers":${JSON.stringify(response.answers)}${refs}${hidden}${outcome}${more}}}}`,
  };
}

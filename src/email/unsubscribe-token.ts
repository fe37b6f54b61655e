import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The unsubscribe link of a notification (RFC 8058 one-click): the subscription's id and a MAC of
 * it under a key derived from the webhook secret key (WEBHOOK_SECRET_KEY or the generated one), so
 * nothing secret is stored and a link opens one subscription only. Keys are base64 (exportKeys()).
 */
const LABEL = 'formwork email unsubscribe v1';

function mac(keyB64: string, subscriptionId: string): Buffer {
  const key = createHmac('sha256', Buffer.from(keyB64, 'base64')).update(LABEL).digest();
  return createHmac('sha256', key).update(subscriptionId).digest();
}

export function unsubscribeToken(keys: string[], subscriptionId: string): string {
  return `${subscriptionId}.${mac(keys[0], subscriptionId).toString('base64url')}`;
}

/** The subscription a token names, when one of `keys` made it; else null. */
export function subscriptionOf(keys: string[], token: string): string | null {
  const m = /^([0-9a-f-]{36})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return null;
  const given = Buffer.from(m[2], 'base64url');
  return keys.some((k) => timingSafeEqual(mac(k, m[1]), given)) ? m[1] : null;
}

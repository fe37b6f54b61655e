import { createHmac, randomBytes } from 'node:crypto';

/** A new signing secret: `whsec_` and the base64 of 32 random bytes (Standard Webhooks' format). */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** `v1,<base64 HMAC-SHA256 of id.timestamp.body>` under one secret (its key is the base64 after whsec_). */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/**
 * The three Standard Webhooks headers of one attempt. During a rotation's overlap both secrets
 * sign, and webhook-signature holds both signatures, space-separated (new first): a receiver
 * verifies with whichever secret it has.
 */
export function signedHeaders(secrets: string[], id: string, body: string, now = new Date()): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => signature(s, id, timestamp, body)).join(' '),
  };
}

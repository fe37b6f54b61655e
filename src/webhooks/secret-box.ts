/**
 * Webhook signing secrets at rest: AES-256-GCM under a key from the environment
 * (WEBHOOK_SECRET_KEY), so that a copy of the database alone cannot sign a delivery. A stored value
 * is `fwse1:<key id>:<base64url of nonce, ciphertext and tag>`: the version prefix and the key id
 * let keys rotate (WEBHOOK_SECRET_KEY_PREVIOUS still reads values sealed under older keys). A
 * value stored before encryption (`whsec_...`) is read as it is until the start that seals it
 * (WebhooksService, at start-up: see docs/webhooks.md, "Secrets").
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppConfig } from '../config/config';

const PREFIX = 'fwse1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const WEBHOOK_SECRET_KEY_BYTES = 32;
/** Where a key is kept when WEBHOOK_SECRET_KEY is unset outside production (made by the first start). */
export const GENERATED_KEY_FILE = 'webhook-secret.key';

/** Whether a stored value is sealed (by any key), as opposed to stored as it is. */
export const isSealed = (stored: string): boolean => stored.startsWith(`${PREFIX}:`);

/** A stored secret that no configured key opens (a lost or unlisted key, or a changed value). */
export class SealedSecretError extends Error {}

export class WebhookSecretBox {
  private readonly keys: Map<string, Buffer>;
  private readonly currentId: string;

  /** `keys[0]` seals; every one of them opens. */
  constructor(private readonly allKeys: Buffer[]) {
    this.keys = new Map(allKeys.map((k) => [keyId(k), k]));
    this.currentId = keyId(allKeys[0]);
  }

  /** The keys as base64, to hand to the delivery thread. */
  exportKeys(): string[] {
    return this.allKeys.map((k) => k.toString('base64'));
  }

  seal(secret: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentId)!, nonce);
    const sealed = Buffer.concat([nonce, cipher.update(secret, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${PREFIX}:${this.currentId}:${sealed.toString('base64url')}`;
  }

  /** The secret of a stored value: sealed under any configured key, or plaintext from before encryption. */
  open(stored: string): string {
    if (stored.startsWith('whsec_')) return stored;
    const [prefix, id, data] = stored.split(':');
    const key = prefix === PREFIX ? this.keys.get(id) : undefined;
    if (!key || !data)
      throw new SealedSecretError(
        `a webhook secret is sealed under key ${id ?? '?'}, which is neither WEBHOOK_SECRET_KEY nor in WEBHOOK_SECRET_KEY_PREVIOUS`,
      );
    const raw = Buffer.from(data, 'base64url');
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, NONCE_BYTES));
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new SealedSecretError(
        `a webhook secret sealed under key ${id} does not open: the stored value was changed`,
      );
    }
  }

  /** How every value sealed under the current key begins (one that does not is resealed at start). */
  get currentPrefix(): string {
    return `${PREFIX}:${this.currentId}:`;
  }
}

/** A key's public name in stored values: 8 hex digits of a hash of it (says nothing of the key). */
function keyId(key: Buffer): string {
  return createHash('sha256').update('formwork webhook secret key').update(key).digest('hex').slice(0, 8);
}

/**
 * The keys: WEBHOOK_SECRET_KEY then WEBHOOK_SECRET_KEY_PREVIOUS; unset (never in production, which
 * refuses to start without it), a key made once and kept in DATA_DIR, readable by its owner only.
 */
export function webhookSecretBox(config: Pick<AppConfig, 'dataDir' | 'webhooks'>): WebhookSecretBox {
  const { secretKey, previousSecretKeys } = config.webhooks;
  return new WebhookSecretBox([secretKey ?? generatedKey(config.dataDir), ...previousSecretKeys]);
}

function generatedKey(dataDir: string): Buffer {
  const file = join(dataDir, GENERATED_KEY_FILE);
  mkdirSync(dataDir, { recursive: true });
  if (!existsSync(file)) makeKeyFile(file);
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== WEBHOOK_SECRET_KEY_BYTES)
    throw new Error(
      `${file} does not hold the base64 of ${WEBHOOK_SECRET_KEY_BYTES} bytes: restore it (without it, every webhook's secret must be rotated)`,
    );
  return key;
}

function makeKeyFile(file: string): void {
  // Written aside, then linked into place: two first starts on one DATA_DIR race safely (one link
  // wins, both read its key), and no start reads a half-written file.
  const made = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(made, `${randomBytes(WEBHOOK_SECRET_KEY_BYTES).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  try {
    linkSync(made, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(made);
  }
}

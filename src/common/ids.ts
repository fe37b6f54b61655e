/** Random and public identifiers: forms' public ids, block and choice ids, base62 helpers. */
import { randomBytes, randomFillSync } from 'node:crypto';

/**
 * Random bytes for ids, drawn from a pool that one call to the system's generator fills 4 KiB at a
 * time, as crypto.randomUUID() draws from its own cache: a call costs the same for 16 bytes as for
 * 4,096 (about 5 µs here, more under load), and a submission needs two ids. Each byte is handed out
 * once. For ids only: keys and other secrets use randomBytes.
 */
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;

export function randomIdBytes(n: number): Buffer {
  if (n > POOL_BYTES) throw new RangeError(`randomIdBytes: at most ${POOL_BYTES} bytes at once`);
  if (poolOffset + n > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const out = Buffer.allocUnsafe(n);
  pool.copy(out, 0, poolOffset, poolOffset + n);
  poolOffset += n;
  return out;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * A uniformly random base62 string (rejection sampling, so no character is favoured). Secrets
 * (token secrets) take fresh bytes; an id made on a hot path may pass randomIdBytes.
 */
export function randomBase62(length: number, bytes: (n: number) => Buffer = randomBytes): string {
  let out = '';
  while (out.length < length) {
    for (const byte of bytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62]; // 248 = 4 * 62
      if (out.length === length) break;
    }
  }
  return out;
}

export function toBase62(value: number, width: number): string {
  let out = '';
  let n = value;
  while (n > 0) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out.padStart(width, '0');
}

/** Public id of a form: 10 base62 characters (~59 bits), opaque and not enumerable. */
export const newFormPublicId = () => randomBase62(10);
/** Id of a block, unique within its form and stable across edits. */
export const newBlockId = () => `b_${randomBase62(10)}`;
/** Id of a choice within a choice block. */
export const newChoiceId = () => `c_${randomBase62(8)}`;

/**
 * A UUID version 7 (RFC 9562 §5.7): 48 bits of Unix time in milliseconds, then 74 random bits.
 * Ids made later sort after (to the millisecond), so a table keyed by them takes its inserts at
 * the right edge of its primary key instead of on a random page: fewer full-page writes to the
 * WAL after each checkpoint, and an index that stays compact (docs/scaling.md). Not secret: it
 * shows when it was made, as the response's submittedAt does.
 */
export function uuidv7(now = Date.now()): string {
  const bytes = randomIdBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = 0x70 | (bytes[6] & 0x0f); // version 7
  bytes[8] = 0x80 | (bytes[8] & 0x3f); // variant 10
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
